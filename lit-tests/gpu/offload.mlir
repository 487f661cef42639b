// The chain plan's host copies on the GPU: the offloaded buffer is allocated as pinned host
// memory (remat_host_alloc_next before its allocation), the copies to and from it are kernels
// reading and writing it through unified addressing, and the device peak leaves it out. The
// compiled step's host side, run against the fake CUDA driver, allocates exactly the planned
// device and host peaks.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: remat-opt %S/../chain/offload.mlir --remat=chain --bandwidth=16 --compute-rate=1e7 --budget=4KiB --lower=gpu --gpu-format=ptx | FileCheck %s
// RUN: remat-opt %S/../chain/offload.mlir --remat=chain --bandwidth=16 --compute-rate=1e7 --budget=4KiB --lower=gpu --emit=library -o %t/step.so --report-json=%t/report.json
// RUN: cc -shared -fPIC -o %t/libcuda.so %fake-cuda
// RUN: env LD_LIBRARY_PATH=%t FAKE_CUDA_SKIP_KERNELS=1 remat-gpu-run %t/step.so --json --repeat 1 > %t/run.json
// RUN: cat %t/report.json %t/run.json | FileCheck %s --check-prefix=PEAK

// CHECK: llvm.call @remat_host_alloc_next() : () -> ()
// CHECK: llvm.call @_mlir_memref_to_llvm_alloc
// CHECK: gpu.launch_func

// PEAK: "plan": {
// PEAK-NEXT: "peak_bytes": [[PEAK:[0-9]+]],
// PEAK: "host": {
// PEAK-NEXT: "peak_bytes": [[HOST:[0-9]+]],
// PEAK: "device_peak_bytes":[[PEAK]],
// PEAK-SAME: "host_peak_bytes":[[HOST]],"host_allocations":1,
