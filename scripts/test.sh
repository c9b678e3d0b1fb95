#!/usr/bin/env bash
# Set up (scripts/setup_env.sh), then run the C++ tests (ctest), the Python tests (pytest) and
# the C++ consumer check (tests/consumer/check.sh).
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

# f46 as a downstream C++ project sees it (tests/consumer/check.sh): a CPU-only f46 installed
# into a temporary prefix, tests/consumer built with find_package(f46) and run, the same with
# add_subdirectory, each public header compiled alone as C++17 and C++20; then the C++ package
# of the CUDA build above (installed from $F46_BUILD_DIR, nothing recompiled) built against.
echo "[test] C++ consumer (tests/consumer)"
consumer_rc=0
CMAKE="$VENV/bin/cmake" bash tests/consumer/check.sh cpu || consumer_rc=1
if grep -qs "^set(f46_WITH_CUDA ON)" "$F46_BUILD_DIR/f46Config.cmake"; then
  CMAKE="$VENV/bin/cmake" bash tests/consumer/check.sh cuda "$F46_BUILD_DIR" || consumer_rc=1
fi

echo "[test] ctest exit $ctest_rc, pytest exit $pytest_rc, consumer exit $consumer_rc"
if ((ctest_rc != 0 || pytest_rc != 0 || consumer_rc != 0)); then exit 1; fi
