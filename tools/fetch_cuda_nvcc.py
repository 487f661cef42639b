#!/usr/bin/env python3
"""Unpacks ptxas and libdevice from NVIDIA's PyPI wheel nvidia-cuda-nvcc-cu12 into DIR.

`remat-opt --lower=gpu` needs libdevice (nvvm/libdevice/libdevice.10.bc) for kernels that call
math functions, and ptxas (bin/ptxas) to assemble cubins. Neither needs a GPU or a CUDA
install. Python's standard library only (no pip): the wheel's URL and sha256 come from PyPI's
simple index (PEP 691 JSON). Usage: fetch_cuda_nvcc.py DIR
"""
import hashlib
import json
import os
import sys
import tempfile
import urllib.request
import zipfile

PACKAGE = "nvidia-cuda-nvcc-cu12"
VERSION = "12.9.86"
WANTED = {
    "nvidia/cuda_nvcc/bin/ptxas": "bin/ptxas",
    "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc": "nvvm/libdevice/libdevice.10.bc",
}


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    target = sys.argv[1]
    # PyPI's simple index in JSON (PEP 691): every file with its sha256.
    request = urllib.request.Request(f"https://pypi.org/simple/{PACKAGE}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        files = json.load(r)["files"]
    wheels = [f for f in files if f["filename"].startswith(f"{PACKAGE.replace('-', '_')}-{VERSION}-") and f["filename"].endswith(".whl") and "manylinux" in f["filename"] and "x86_64" in f["filename"]]
    if not wheels:
        print(f"no x86-64 Linux wheel of {PACKAGE} {VERSION} on PyPI", file=sys.stderr)
        return 1
    wheel = wheels[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, wheel["filename"])
        urllib.request.urlretrieve(wheel["url"], path)
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        if digest != wheel["hashes"]["sha256"]:
            print(f"{wheel['filename']}: sha256 mismatch", file=sys.stderr)
            return 1
        with zipfile.ZipFile(path) as z:
            for member, relative in WANTED.items():
                out = os.path.join(target, relative)
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with z.open(member) as src, open(out + ".part", "wb") as dst:
                    dst.write(src.read())
                os.replace(out + ".part", out)
    os.chmod(os.path.join(target, "bin/ptxas"), 0o755)
    return 0


if __name__ == "__main__":
    sys.exit(main())
