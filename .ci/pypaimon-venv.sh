#!/usr/bin/env bash
# Create (or reuse) the virtual environment that runs pypaimon for the compat tests.
#
# Usage: .ci/pypaimon-venv.sh [VENV_DIR]     (default: <repo>/.venv-pypaimon)
# Env:   PYTHON   interpreter used to create the venv (default: python3)
#
# pypaimon pins an older pyarrow/fsspec than dyntable, so it lives in its own venv and is only
# ever run as a subprocess (tests/compat/pypaimon_driver.py). Idempotent: an existing venv whose
# python can `import pypaimon` is reused untouched. Prints the venv's python path on success.
set -euo pipefail

PYPAIMON_VERSION="2.1.0"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo_root/.venv-pypaimon}"
base_python="${PYTHON:-python3}"

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import pypaimon" >/dev/null 2>&1; then
    echo "$venv/bin/python"
    exit 0
fi

"$base_python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pypaimon==${PYPAIMON_VERSION}"
"$venv/bin/python" -c "import pypaimon" >/dev/null
echo "$venv/bin/python"
