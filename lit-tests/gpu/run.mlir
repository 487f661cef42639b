// On a machine with a CUDA driver and GPU: the MLP step, rewritten by greedy at 90 %, runs on
// the device at its planned peak, with the CPU run's outputs within float tolerance. Unfused:
// fused, the MLP's lower bound is 96 % of its baseline, and the step is to recompute.
// REQUIRES: cuda-driver
// RUN: rm -rf %t && mkdir -p %t
// RUN: remat-opt %examples/mlp.linalg.mlir --fusion=none --remat=greedy --budget=90%% -o %t/step.mlir --report-json=%t/report.json
// RUN: remat-run %t/step.mlir --save-io %t/io --json > /dev/null
// RUN: remat-opt %t/step.mlir --pass-pipeline='builtin.module()' --lower=gpu --emit=library -o %t/step.so
// RUN: remat-gpu-run %t/step.so --inputs %t/io --expect %t/io --json > %t/run.json
// RUN: cat %t/report.json %t/run.json | FileCheck %s

// CHECK: "plan": {
// CHECK-NEXT: "peak_bytes": [[PEAK:[0-9]+]],
// CHECK: "device_peak_bytes":[[PEAK]],
// CHECK-SAME: "outputs_match":true
