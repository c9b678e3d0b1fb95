#!/usr/bin/env bash
# Idempotent environment setup: Debian build packages, .venv with the pinned Python packages
# (requirements.txt, then the test-only requirements-test.txt), then builds and installs f46
# (C++ core + torch extension + GoogleTest binary) with `pip install --no-build-isolation .`.
# Rerunning rebuilds incrementally.
#
# Environment: F46_VENV (default <repo>/.venv), F46_BUILD_DIR (default build/release, also
# read by scripts/test.sh), CMAKE_BUILD_PARALLEL_LEVEL (default 2), F46_SKIP_APT=1,
# F46_SKIP_TEST_DEPS=1 (leave out requirements-test.txt).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${F46_VENV:-$ROOT/.venv}"
BUILD_DIR="${F46_BUILD_DIR:-build/release}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"

log() { echo "[setup_env] $*"; }

# ---- Debian packages ------------------------------------------------------------------------
if [[ "${F46_SKIP_APT:-0}" != 1 ]] && command -v dpkg-query >/dev/null; then
  missing=()
  for pkg in build-essential libgtest-dev ccache python3-venv; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  if ((${#missing[@]})); then
    SUDO=""
    if [[ "$(id -u)" != 0 ]]; then SUDO="sudo"; fi
    log "apt-get install ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
  fi
fi

# ---- CUDA toolkit on PATH (the CUDA backend is built when nvcc is found) ---------------------
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

# ---- virtual environment with the pinned packages --------------------------------------------
if [[ ! -x "$VENV/bin/python" ]]; then
  log "creating $VENV"
  python3 -m venv "$VENV"
fi
PY="$VENV/bin/python"
stamp="$VENV/.f46-requirements.sha256"
want="$(sha256sum requirements.txt | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  log "pip install -r requirements.txt"
  "$PY" -m pip install -q -r requirements.txt
  echo "$want" >"$stamp"
fi
# Test-only dependencies (requirements-test.txt); F46_SKIP_TEST_DEPS=1 leaves them out (their
# tests then skip). The stamp covers both files: the test pins resolve against the first.
test_stamp="$VENV/.f46-requirements-test.sha256"
test_want="$(cat requirements.txt requirements-test.txt | sha256sum | cut -d' ' -f1)"
if [[ "${F46_SKIP_TEST_DEPS:-0}" != 1 ]] &&
  [[ ! -f "$test_stamp" || "$(cat "$test_stamp")" != "$test_want" ]]; then
  log "pip install -r requirements-test.txt"
  "$PY" -m pip install -q -r requirements.txt -r requirements-test.txt
  "$PY" -m pip check
  echo "$test_want" >"$test_stamp"
fi

# ---- build and install f46 -------------------------------------------------------------------
log "pip install --no-build-isolation . (build dir $BUILD_DIR)"
"$PY" -m pip install -q --no-build-isolation --no-deps -C build-dir="$BUILD_DIR" \
  -C cmake.define.Python3_EXECUTABLE="$PY" .
log "done"
