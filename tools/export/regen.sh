#!/usr/bin/env bash
# Regenerate examples/*.stablehlo.mlir and examples/*.linalg.mlir from JAX.
#
#   bash tools/export/regen.sh            # export, then check if MLIR 22 is installed
#   bash tools/export/regen.sh --no-check # export only
#
# Through regen-common.sh: creates (once) a venv at tools/export/.venv with Python 3.12 and the pinned
# requirements from PyPI; re-running reuses it and re-installs only when
# requirements.txt changed. The export is deterministic: re-running leaves
# examples/ unchanged unless the models or the versions change.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/regen-common.sh"
regen regen.sh "$here/.venv" "$here/requirements.txt" "$here/export_jax.py" "$here/check_examples.py" "$@"
