// DTR as a planner (--remat=dtr): the runtime of Kirisame et al. simulated over the input
// order at 3 KiB, the least any schedule of this step reaches. Its execution, with the
// three exps it rematerializes, becomes the rewritten step, which runs at exactly the
// planned peak and computes the original's output bit for bit.
//
// RUN: remat-opt %s --remat=dtr --budget=3KiB --report --report-json=%t.json -o %t.mlir 2> %t.report
// RUN: FileCheck %s --check-prefix=REPORT < %t.report
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// RUN: remat-run %t.mlir --compare-with=%s --json | FileCheck %s --check-prefix=MEASURED
//
// REPORT: strategy          dtr
// REPORT: plan                  3.00 KiB     60.0%  {{.*}} 3 ops recomputed
// REPORT: dtr               heuristic dtr-eq, dealloc eager, simulated at 3.00 KiB (3072 bytes)
// REPORT: dtr simulation    11 ops (3 rematerialized), 3 evictions + 7 on deallocation, 0 banished
// REPORT: dtr metadata      {{[0-9]+}} storage accesses; 3.00 KiB resident at most
//
// JSON:      "plan": {
// JSON-NEXT:   "peak_bytes": 3072,
// JSON:      "dtr": {
// JSON:        "heuristic": "dtr-eq",
// JSON:        "rematerializations": 3,
//
// IR-LABEL: func.func @chain
// IR-COUNT-3: linalg.exp {remat.recompute}
// IR-NOT:     remat.recompute
//
// MEASURED: {"peak_bytes":3072,{{.*}}"outputs_match":true,
//
// Every heuristic plans within the budget; MSPS and random need one more rematerialization:
// RUN: remat-opt %s --remat=dtr --dtr-heuristic=msps --budget=3KiB --report -o %t.msps.mlir 2>&1 | FileCheck %s --check-prefix=MSPS
// RUN: remat-run %t.msps.mlir --compare-with=%s --json | FileCheck %s --check-prefix=MEASURED
// MSPS: plan                  3.00 KiB     60.0%  {{.*}} 4 ops recomputed
// MSPS: dtr               heuristic msps, dealloc eager
//
// Below the lower bound, the diagnostic names the smallest budget it meets, and no output
// file is written:
// RUN: not remat-opt %s --remat=dtr --budget=2.5KiB -o %t.none 2>&1 | FileCheck %s --check-prefix=TOO-SMALL
// RUN: test ! -e %t.none
// TOO-SMALL: error: budget 2.50 KiB is below 3.00 KiB, a lower bound on the peak of any schedule of this function; the smallest budget 'dtr' meets is 3.00 KiB (3072 bytes)
//
// An unknown heuristic is named:
// RUN: not remat-opt %s --remat=dtr --dtr-heuristic=belady 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: invalid dtr-heuristic 'belady' (expected one of dtr, dtr-eq, dtr-local, lru, size, msps, random, estar)

func.func @chain(%x: tensor<256xf32>) -> tensor<256xf32> {
  %ea = tensor.empty() : tensor<256xf32>
  %a = linalg.exp ins(%x : tensor<256xf32>) outs(%ea : tensor<256xf32>) -> tensor<256xf32>
  %eb = tensor.empty() : tensor<256xf32>
  %b = linalg.exp ins(%a : tensor<256xf32>) outs(%eb : tensor<256xf32>) -> tensor<256xf32>
  %ec = tensor.empty() : tensor<256xf32>
  %c = linalg.exp ins(%b : tensor<256xf32>) outs(%ec : tensor<256xf32>) -> tensor<256xf32>
  %ed = tensor.empty() : tensor<256xf32>
  %d = linalg.exp ins(%c : tensor<256xf32>) outs(%ed : tensor<256xf32>) -> tensor<256xf32>
  %egd = tensor.empty() : tensor<256xf32>
  %gd = linalg.mul ins(%d, %d : tensor<256xf32>, tensor<256xf32>) outs(%egd : tensor<256xf32>) -> tensor<256xf32>
  %egc = tensor.empty() : tensor<256xf32>
  %gc = linalg.mul ins(%gd, %c : tensor<256xf32>, tensor<256xf32>) outs(%egc : tensor<256xf32>) -> tensor<256xf32>
  %egb = tensor.empty() : tensor<256xf32>
  %gb = linalg.mul ins(%gc, %b : tensor<256xf32>, tensor<256xf32>) outs(%egb : tensor<256xf32>) -> tensor<256xf32>
  %ega = tensor.empty() : tensor<256xf32>
  %ga = linalg.mul ins(%gb, %a : tensor<256xf32>, tensor<256xf32>) outs(%ega : tensor<256xf32>) -> tensor<256xf32>
  return %ga : tensor<256xf32>
}
