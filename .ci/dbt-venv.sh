#!/usr/bin/env bash
# Create (or reuse) the virtual environment that runs dbt for tests/integration/server/test_dbt.py.
#
# Usage: .ci/dbt-venv.sh [VENV_DIR]     (default: <repo>/.venv-dbt)
# Env:   PYTHON   interpreter used to create the venv (default: python3)
#
# dbt-core and dbt-spark pin their own dependencies (protobuf, click, agate, ...), so they live in a
# venv of their own with this repository's adapter, integrations/dbt-dyntable, installed editable
# (a change to its macros is seen at once). Idempotent: an existing venv whose python imports the
# adapter is reused. Prints the venv's dbt executable on success.
set -euo pipefail

DBT_CORE_VERSION="~=1.11.0"
DBT_SPARK_VERSION="~=1.11.0"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo_root/.venv-dbt}"
base_python="${PYTHON:-python3}"

if [ -x "$venv/bin/dbt" ] && "$venv/bin/python" -c "import dbt.adapters.dyntable" >/dev/null 2>&1; then
    echo "$venv/bin/dbt"
    exit 0
fi

"$base_python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "dbt-core${DBT_CORE_VERSION}" "dbt-spark[PyHive]${DBT_SPARK_VERSION}" \
    -e "$repo_root/integrations/dbt-dyntable"
"$venv/bin/python" -c "import dbt.adapters.dyntable" >/dev/null
echo "$venv/bin/dbt"
