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
config.environment["PATH"] = os.pathsep.join(
    [os.path.join(target, "debug"), llvm_bin, os.environ.get("PATH", "")])
config.substitutions.append(("%examples", os.path.join(root, "examples")))
config.substitutions.append(("%mlir-opt", os.path.join(llvm_bin, "mlir-opt")))
