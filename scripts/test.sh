#!/usr/bin/env bash
# Set up (scripts/setup_env.sh), then run the C++ tests (ctest) and the Python tests (pytest).
# Exits nonzero if either fails. Arguments are passed to pytest.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export F46_BUILD_DIR="${F46_BUILD_DIR:-build/release}"
VENV="${F46_VENV:-$ROOT/.venv}"

bash scripts/setup_env.sh || { echo "[test] setup/build failed"; exit 1; }

echo "[test] ctest in $F46_BUILD_DIR"
"$VENV/bin/ctest" --test-dir "$F46_BUILD_DIR" --output-on-failure -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
ctest_rc=$?

echo "[test] pytest tests/python"
"$VENV/bin/python" -m pytest tests/python -q -rs "$@"
pytest_rc=$?

echo "[test] ctest exit $ctest_rc, pytest exit $pytest_rc"
if ((ctest_rc != 0 || pytest_rc != 0)); then exit 1; fi
