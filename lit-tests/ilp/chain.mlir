// The ILP (--remat=ilp) on a forward chain whose activations the backward chain reads in
// reverse. At 4 KiB the order-free optimum recomputes one exp (its clone sits right
// before its one use); without warm starts (with them greedy's plan meets the anchor bound
// and no solver runs) the solver proves it optimal
// (gap 0), the rewritten step runs at exactly the planned peak and computes the original's
// outputs bit for bit.
//
// RUN: remat-opt %s --remat=ilp --budget=4KiB --ilp-warm-start=false --report --report-json=%t.json -o %t.mlir 2> %t.report
// RUN: FileCheck %s --check-prefix=REPORT < %t.report
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// RUN: remat-run %t.mlir --compare-with=%s --json | FileCheck %s --check-prefix=MEASURED
//
// REPORT: strategy          ilp
// REPORT: plan                  4.00 KiB     80.0%  {{.*}} 1 ops recomputed
// REPORT: ilp               optimal, order-free, 8 stages
// REPORT: ilp class         schedules of at most 8 increasing runs of the input order
// REPORT: ilp objective     2.3040e3 (dual bound 2.3040e3, gap 0.00%)
//
// JSON:      "plan": {
// JSON-NEXT:   "peak_bytes": 4096,
// JSON:      "ilp": {
// JSON:        "status": "optimal"
//
// IR-LABEL: func.func @chain
// IR:       %[[AGAIN:.*]] = linalg.exp {remat.recompute} ins(%{{.*}} : tensor<256xf32>)
// IR-NEXT:  tensor.empty
// IR-NEXT:  linalg.mul ins(%{{.*}}, %[[AGAIN]] :
// IR-NOT:   remat.recompute
//
// MEASURED: {"peak_bytes":4096,{{.*}}"outputs_match":true,
//
// Checkmate's own stages (--ilp-order=fixed) at 3 KiB, the least any schedule reaches:
// RUN: remat-opt %s --remat=ilp --ilp-order=fixed --budget=3KiB --report -o /dev/null 2>&1 | FileCheck %s --check-prefix=FIXED
// FIXED: plan                  3.00 KiB     60.0%  {{.*}} 3 ops recomputed
// FIXED: ilp               optimal, checkmate, fixed order
// FIXED: ilp objective     2.8160e3 (dual bound 2.8160e3, gap 0.00%)
//
// Below it, the diagnostic names the smallest budget, proven by the least-memory MILP, and
// no output file is written:
// RUN: not remat-opt %s --remat=ilp --ilp-order=fixed --budget=2KiB -o %t.none 2>&1 | FileCheck %s --check-prefix=TOO-SMALL
// RUN: test ! -e %t.none
// TOO-SMALL: error: budget 2.00 KiB is below 3.00 KiB, a lower bound on the peak of any schedule of this function; the smallest budget 'ilp' meets is 3.00 KiB (3072 bytes)

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
