// The GPU options' errors: each names what is wrong and exits non-zero with no output file.
// RUN: not remat-opt %S/lower.mlir --emit=ptx 2>&1 | FileCheck %s --check-prefix=NEED-GPU
// RUN: not remat-opt %S/lower.mlir --gpu-chip=sm_80 2>&1 | FileCheck %s --check-prefix=GPU-FLAGS
// RUN: not remat-opt %S/lower.mlir --lower=gpu --gpu-chip=volta 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not remat-opt %S/lower.mlir --lower=gpu --gpu-format=sass 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not remat-opt %S/lower.mlir --lower=gpu --cuda-path=%t.missing 2>&1 | FileCheck %s --check-prefix=TOOLKIT
// RUN: not remat-opt %S/lower.mlir --lower=gpu --emit=library 2>&1 | FileCheck %s --check-prefix=LIBRARY
// RUN: not remat-opt %S/lower.mlir --lower=tpu 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: rm -f %t.so && not remat-opt %S/lower.mlir --lower=gpu --gpu-chip=volta --emit=library -o %t.so && not test -e %t.so

// NEED-GPU: error: --emit=ptx and --emit=library need --lower=gpu
// GPU-FLAGS: error: --gpu-chip, --gpu-format and --cuda-path go with --lower=gpu
// CHIP: error: invalid --gpu-chip 'volta' (expected an NVIDIA architecture such as sm_80 or sm_90)
// FORMAT: error: unknown GPU binary format 'sass' (expected ptx or cubin)
// TOOLKIT: error: '{{.*}}.missing' is not a CUDA toolkit: it has no nvvm/libdevice/libdevice.10.bc
// LIBRARY: error: --emit=library writes one shared library: it needs -o FILE
// TARGET: error: unknown lowering target 'tpu' (expected cpu or gpu)
