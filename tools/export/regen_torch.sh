#!/usr/bin/env bash
# Regenerate examples/torch_mlp.linalg.mlir from PyTorch (via torch-mlir).
#
#   bash tools/export/regen_torch.sh            # export, then check if MLIR 22 is installed
#   bash tools/export/regen_torch.sh --no-check # export only
#
# Through regen-common.sh: creates (once) a venv at tools/export/.venv-torch with Python 3.12 and the
# pinned requirements-torch.txt from PyPI (torch pulls about 4 GB of CUDA
# wheels; the export itself runs on the CPU). Re-running reuses it and
# re-installs only when requirements-torch.txt changed. The export is
# deterministic: re-running leaves examples/ unchanged unless the model or the
# versions change. Kept apart from regen.sh (JAX) so neither venv needs the
# other's packages.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/regen-common.sh"
regen regen_torch.sh "$here/.venv-torch" "$here/requirements-torch.txt" "$here/export_torch.py" "$here/check_torch.py" "$@"
