#!/usr/bin/env bash
# f46 as a downstream CMake project sees it: install, find_package(f46), build tests/consumer
# (the examples of examples/cpp and the header self-containment targets), run the examples.
#
#   check.sh cpu            build a CPU-only f46 (persistent build dir $F46_CONSUMER_CPU_BUILD,
#                           default build/consumer-cpu), cmake --install it into a temporary
#                           prefix, build tests/consumer against it and run it (ctest); then the
#                           same project with add_subdirectory of this source tree.
#   check.sh cuda DIR       install the C++ package of the existing CUDA build DIR (the pip
#                           build build/release, or scripts/gpu_check.sh's build-gpu: at most
#                           libf46.so is linked, nothing is compiled) into a temporary prefix
#                           and build tests/consumer against it; no run.
#   check.sh cuda-run DIR   the same, then run the examples (a GPU machine).
#
# Environment: CMAKE (default: cmake on PATH), CMAKE_BUILD_PARALLEL_LEVEL (default 2),
# F46_CONSUMER_KEEP=1 keeps the temporary directory.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
CMAKE="${CMAKE:-cmake}"
CTEST="$(dirname "$(command -v "$CMAKE")")/ctest"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
GEN=()
if command -v ninja >/dev/null; then GEN=(-G Ninja); fi
TMP="$(mktemp -d "${TMPDIR:-/tmp}/f46-consumer.XXXXXX")"
if [[ "${F46_CONSUMER_KEEP:-0}" != 1 ]]; then trap 'rm -rf "$TMP"' EXIT; fi
log() { echo "[consumer] $*"; }
quiet() {  # run a command, print its output only when it fails
  local out="$TMP/last.log"
  if ! "$@" >"$out" 2>&1; then tail -40 "$out"; log "FAILED: $*"; return 1; fi
}

# Configure and build tests/consumer in $1 with the remaining arguments; ctest unless norun.
consumer() {
  local dir="$1" run="$2"; shift 2
  quiet "$CMAKE" -S tests/consumer -B "$dir" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
  quiet "$CMAKE" --build "$dir"
  if [[ "$run" == run ]]; then
    if ! "$CTEST" --test-dir "$dir" --output-on-failure --timeout 120 >"$dir/ctest.log" 2>&1; then
      cat "$dir/ctest.log"
      log "FAILED: ctest in $dir"
      return 1
    fi
    grep "tests passed" "$dir/ctest.log"
    "$dir/grouped_gemm_cuda_shared" | sed 's/^/  grouped_gemm_cuda: /'
  fi
}

case "${1:-}" in
  cpu)
    # One version: the wheel's (pyproject.toml) is the C++ package's (project(VERSION)).
    py_version="$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)"
    cmake_version="$(sed -n 's/^project(f46 VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
    if [[ -z "$py_version" || "$py_version" != "$cmake_version" ]]; then
      log "pyproject.toml version '$py_version' != CMakeLists.txt project(VERSION) '$cmake_version'"
      exit 1
    fi
    B="${F46_CONSUMER_CPU_BUILD:-build/consumer-cpu}"
    start=$(date +%s)
    quiet "$CMAKE" -S . -B "$B" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DF46_CUDA=OFF \
      -DF46_BUILD_TESTS=OFF -DF46_BUILD_BENCH=OFF -DF46_INSTALL=ON
    quiet "$CMAKE" --build "$B"
    quiet "$CMAKE" --install "$B" --prefix "$TMP/prefix"
    log "CPU-only f46 built and installed into a temporary prefix ($(($(date +%s) - start)) s)"
    start=$(date +%s)
    consumer "$TMP/package" run -DCMAKE_PREFIX_PATH="$TMP/prefix"
    log "tests/consumer with find_package(f46), CPU: built and run ($(($(date +%s) - start)) s)"
    start=$(date +%s)
    consumer "$TMP/subdirectory" run -DF46_CONSUMER_MODE=subdirectory -DF46_CUDA=OFF
    log "tests/consumer with add_subdirectory(f46), CPU: built and run ($(($(date +%s) - start)) s)"
    ;;
  cuda | cuda-run)
    B="${2:?usage: check.sh cuda|cuda-run BUILD_DIR}"
    start=$(date +%s)
    quiet "$CMAKE" --build "$B" --target f46 f46_shared
    grep -q "^set(f46_WITH_CUDA ON)" "$B/f46Config.cmake" \
      || { log "$B is not a CUDA build of f46 with install rules (F46_INSTALL)"; exit 1; }
    quiet "$CMAKE" --install "$B" --component f46_development --prefix "$TMP/prefix"
    log "C++ package of the CUDA build $B installed ($(($(date +%s) - start)) s)"
    start=$(date +%s)
    run=norun
    if [[ "$1" == cuda-run ]]; then run=run; fi
    consumer "$TMP/package-cuda" "$run" -DCMAKE_PREFIX_PATH="$TMP/prefix"
    log "tests/consumer with find_package(f46), CUDA: built$([[ $run == run ]] && echo " and run") ($(($(date +%s) - start)) s)"
    ;;
  *)
    echo "usage: $0 cpu | cuda BUILD_DIR | cuda-run BUILD_DIR" >&2
    exit 2
    ;;
esac
