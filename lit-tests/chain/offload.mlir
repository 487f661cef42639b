// --remat=chain: the step as a chain of stages (no `backward` marks here, so the forward
// part is the prefix before the input order's peak: four exps), planned by Beaumont et al.'s
// dynamic program. At 4 KiB rematerialization alone recomputes the first exp; with a host
// link (--bandwidth) the plan offloads it instead: a copy to memory space 1 after its last
// forward reader, a copy back before the backward needs it. Both run at exactly the planned
// device peak, the offloaded kilobyte is counted on the host, and outputs match bit for bit.
//
// RUN: remat-opt %s --remat=chain --budget=4KiB --report -o %t.remat.mlir 2> %t.remat.report
// RUN: FileCheck %s --check-prefix=REMAT < %t.remat.report
// RUN: FileCheck %s --check-prefix=REMAT-IR < %t.remat.mlir
// RUN: remat-run %t.remat.mlir --compare-with=%s --json | FileCheck %s --check-prefix=REMAT-MEASURED
//
// REMAT: strategy          chain
// REMAT: plan                  4.00 KiB     80.0%  {{.*}} 1 ops recomputed
// REMAT: chain             3 stages, DP at {{.*}}, rematerialization-only makespan
// REMAT-NOT: host
// REMAT-IR-LABEL: func.func @chain
// REMAT-IR:       linalg.exp {remat.recompute}
// REMAT-IR-NOT:   memory_space
// REMAT-MEASURED: {"peak_bytes":4096,{{.*}}"outputs_match":true,
// REMAT-MEASURED-NOT: host_peak_bytes
//
// RUN: remat-opt %s --remat=chain --bandwidth=16 --compute-rate=1e7 --budget=4KiB --report --report-json=%t.json -o %t.offload.mlir 2> %t.offload.report
// RUN: FileCheck %s --check-prefix=OFFLOAD < %t.offload.report
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: FileCheck %s --check-prefix=OFFLOAD-IR < %t.offload.mlir
// RUN: remat-run %t.offload.mlir --compare-with=%s --json | FileCheck %s --check-prefix=OFFLOAD-MEASURED
//
// OFFLOAD: plan                  4.00 KiB     80.0%  {{.*}} +0.0% recompute, 0 ops recomputed
// OFFLOAD: chain offload     makespan {{.*}} vs rematerialization only), 1.00 KiB offloaded
// OFFLOAD: host              1 transfers, 1.00 KiB offloaded, 1.00 KiB on the host at most
//
// JSON:      "host": {
// JSON-NEXT:   "peak_bytes": 1024,
// JSON-NEXT:   "offloaded_bytes": 1024,
// JSON-NEXT:   "transfers": [
// JSON-NEXT:     {
// JSON-NEXT:       "node": 1,
// JSON-NEXT:       "bytes": 1024,
// JSON-NEXT:       "instance_step": 0,
// JSON-NEXT:       "offload_after_step": 1,
// JSON-NEXT:       "prefetch_before_step": 6
//
// OFFLOAD-IR-LABEL: func.func @chain
// OFFLOAD-IR:       %[[A:.*]] = linalg.exp ins(%arg0
// OFFLOAD-IR-NEXT:  tensor.empty
// OFFLOAD-IR-NEXT:  linalg.exp ins(%[[A]]
// OFFLOAD-IR-NEXT:  %[[HOST:.*]] = bufferization.alloc_tensor() copy(%[[A]]) {memory_space = 1 : i64}
// OFFLOAD-IR:       %[[BACK:.*]] = bufferization.alloc_tensor() copy(%[[HOST]]) {memory_space = 0 : i64}
// OFFLOAD-IR:       linalg.mul ins(%{{.*}}, %[[BACK]] :
// OFFLOAD-IR-NOT:   remat.recompute
// OFFLOAD-MEASURED: {"peak_bytes":4096,{{.*}}"outputs_match":true,{{.*}}"host_peak_bytes":1024,"host_allocations":1,
//
// The schedule JSON carries the transfer as step indices:
// RUN: remat-opt %s --remat=chain --bandwidth=16 --compute-rate=1e7 --budget=4KiB --emit=schedule-json | FileCheck %s --check-prefix=SCHEDULE
// SCHEDULE: "transfers":{{\[\[}}0,1,6]]
//
// On the CPU a host buffer is an ordinary allocation that the runtime counts apart: the next
// call after the marker allocates it.
// RUN: remat-opt %s --remat=chain --bandwidth=16 --compute-rate=1e7 --budget=4KiB --lower=cpu | FileCheck %s --check-prefix=LOWERED
// LOWERED: llvm.func @remat_host_alloc_next()
// LOWERED:     llvm.call @remat_host_alloc_next()
// LOWERED-NOT: llvm.call
// LOWERED:     llvm.call @_mlir_memref_to_llvm_alloc
//
// Below what the chain reaches, the diagnostic names the smallest budget it meets:
// RUN: not remat-opt %s --remat=chain --budget=3.5KiB -o %t.none 2>&1 | FileCheck %s --check-prefix=TOO-SMALL
// RUN: test ! -e %t.none
// TOO-SMALL: error: strategy 'chain' cannot meet the budget of 3.50 KiB: its plan peaks at {{.*}}; the smallest budget 'chain' meets is 4.00 KiB (4096 bytes)

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
