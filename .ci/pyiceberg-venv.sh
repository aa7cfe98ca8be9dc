#!/usr/bin/env bash
# Create (or reuse) the virtual environment that runs pyiceberg for the Iceberg compat tests.
#
# Usage: .ci/pyiceberg-venv.sh [VENV_DIR]     (default: <repo>/.venv-pyiceberg)
# Env:   PYTHON   interpreter used to create the venv (default: python3)
#
# pyiceberg is the independent Iceberg reader that checks the Iceberg metadata dyntable writes
# (metadata.iceberg.storage, docs/iceberg.md). It pins its own pydantic/pyarrow stack, so it lives
# in its own venv and only ever runs as a subprocess (tests/compat/iceberg/driver.py). Idempotent:
# an existing venv whose python imports pyiceberg and polars at the pinned versions is reused untouched.
# polars reads the same metadata with its own Parquet reader (planned by pyiceberg, columns matched by
# Iceberg field id): it reads the TIME columns pyiceberg's pyarrow reader refuses.
# Prints the venv's python path last.
set -euo pipefail

PYICEBERG_VERSION="0.10.0"
POLARS_VERSION="2.2.0"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo_root/.venv-pyiceberg}"
base_python="${PYTHON:-python3}"
check="import pyiceberg, polars, pyarrow, snappy, sys; sys.exit(pyiceberg.__version__ != '${PYICEBERG_VERSION}' or polars.__version__ != '${POLARS_VERSION}')"

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" >/dev/null 2>&1; then
    echo "$venv/bin/python"
    exit 0
fi

"$base_python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "pyiceberg[pyarrow,snappy]==${PYICEBERG_VERSION}" "polars==${POLARS_VERSION}"
"$venv/bin/python" -c "$check" >/dev/null
echo "$venv/bin/python"
