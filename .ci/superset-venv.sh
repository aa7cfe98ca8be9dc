#!/usr/bin/env bash
# Create (or reuse) the virtual environment of the Superset check (tests/integration/superset).
#
# Usage: .ci/superset-venv.sh [VENV_DIR]     (default: <repo>/.venv-superset)
# Env:   PYTHON   interpreter used to create the venv (default: python3)
#
# Apache Superset pins its own SQLAlchemy 1.4, pandas and Flask stack, so it never shares dyntable's
# venv: the check runs Superset's CLI and web server, and drives Chromium with Selenium, from this
# venv's python. Every version is pinned by .ci/superset-constraints.txt. Idempotent: a venv whose
# python imports superset, pyhive and selenium is reused untouched. Prints the venv's python path.
set -euo pipefail

SUPERSET_VERSION="6.1.0"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo_root/.venv-superset}"
base_python="${PYTHON:-python3}"
check='import superset, pyhive.sqlalchemy_hive, selenium, rich, cachetools'

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" >/dev/null 2>&1; then
    echo "$venv/bin/python"
    exit 0
fi

"$base_python" -m venv "$venv"
# [hive] brings PyHive, thrift and thrift-sasl (+ pure-sasl): the hive:// SQLAlchemy dialect.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -c "$repo_root/.ci/superset-constraints.txt" \
    "apache-superset[hive]==${SUPERSET_VERSION}" rich cachetools >&2
"$venv/bin/python" -c "$check" >/dev/null
echo "$venv/bin/python"
