# lit configuration for remat-opt: RUN lines drive the remat-opt binary built by cargo and
# check its output with LLVM 22's FileCheck.
import os
import lit.formats

config.name = "remat-opt"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir", ".json", ".test"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
root = os.path.dirname(config.test_source_root)
config.test_exec_root = os.path.join(root, "target", "lit")

target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
llvm_bin = "/usr/lib/llvm-22/bin"
# target/cmake/bin: the C API's C test and the C++ example tool (tools/test.sh builds them).
config.environment["PATH"] = os.pathsep.join(
    [os.path.join(target, "debug"), os.path.join(target, "cmake", "bin"), llvm_bin,
     os.environ.get("PATH", "")])
config.substitutions.append(("%examples", os.path.join(root, "examples")))
config.substitutions.append(("%mlir-opt", os.path.join(llvm_bin, "mlir-opt")))

# GPU features. `cuda-toolkit`: libdevice and ptxas where remat-opt looks for them (see
# remat_lower::find_cuda_toolkit; tools/setup.sh unpacks them). `cuda-driver`: a real CUDA
# driver, so remat-gpu-run can run a step on a GPU.
def find_cuda_toolkit():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for d in [os.environ.get("REMAT_CUDA_PATH"), os.path.join(cache, "remat-opt", "cuda-nvcc"),
              os.environ.get("CUDA_HOME"), "/usr/local/cuda"]:
        if d and os.path.isfile(os.path.join(d, "nvvm", "libdevice", "libdevice.10.bc")):
            return d
    return None

toolkit = find_cuda_toolkit()
if toolkit and os.path.isfile(os.path.join(toolkit, "bin", "ptxas")):
    config.available_features.add("cuda-toolkit")
try:
    import ctypes
    ctypes.CDLL("libcuda.so.1")
    config.available_features.add("cuda-driver")
except OSError:
    pass
for name in ["REMAT_CUDA_PATH", "CUDA_HOME", "XDG_CACHE_HOME", "HOME"]:
    if name in os.environ:
        config.environment[name] = os.environ[name]
# The fake CUDA driver of remat-gpu-run's tests: runs a compiled step's host side (allocations,
# frees, launches) with kernels that compute nothing.
config.substitutions.append(("%fake-cuda", os.path.join(root, "tools", "remat-gpu-run", "tests", "fake_cuda", "libcuda.c")))
