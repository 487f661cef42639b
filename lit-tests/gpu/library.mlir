// --emit=library: a shared library with the step's host code, its kernels, the packed entry
// point `_mlir_main` and the tensor signature; the mgpu* runtime and the counting allocator
// are left to the runner (remat-gpu-run).
//
// Run against the fake CUDA driver of remat-gpu-run's tests (it runs the host side for real
// and launches nothing), the compiled step allocates, at its peak, exactly the bytes the plan
// promised — here the MLP with its elementwise ops fused (the default `--fusion=auto`).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: remat-opt %examples/mlp.linalg.mlir --remat=none --lower=gpu --emit=library -o %t/step.so --report-json=%t/report.json
// RUN: llvm-nm -D %t/step.so | FileCheck %s --check-prefix=SYMBOLS
// RUN: llvm-strings %t/step.so | FileCheck %s --check-prefix=SIGNATURE
// RUN: cc -shared -fPIC -o %t/libcuda.so %fake-cuda
// RUN: env LD_LIBRARY_PATH=%t FAKE_CUDA_SKIP_KERNELS=1 remat-gpu-run %t/step.so --json --repeat 1 > %t/run.json
// RUN: cat %t/report.json %t/run.json | FileCheck %s --check-prefix=PEAK

// SYMBOLS-DAG: T _mlir_main
// SYMBOLS-DAG: R remat_step_signature
// SYMBOLS-DAG: U _mlir_memref_to_llvm_alloc
// SYMBOLS-DAG: U _mlir_memref_to_llvm_free
// SYMBOLS-DAG: U mgpuLaunchKernel
// SYMBOLS-DAG: U mgpuModuleGetFunction

// SIGNATURE: {"function":"main","inputs":["tensor<64x128xf32>","tensor<128xf32>",{{.*}}],"results":["tensor<f32>",{{.*}}]}

// PEAK: "plan": {
// PEAK-NEXT: "peak_bytes": [[PEAK:[0-9]+]],
// PEAK: "device_peak_bytes":[[PEAK]],
// PEAK-SAME: "host_peak_bytes":0,
// PEAK-SAME: "foreign_frees":0,
