#!/usr/bin/env bash
# Runs torchao's own four-over-six test files against f46 through a module alias, outside the
# repository, as a user switching from torchao would (issue 29). Needs network for two things:
# torchao's test files and a torchao release from PyPI (neither is committed here).
#
#   scripts/torchao_tests.sh TESTS_DIR [pytest args...]
#
# TESTS_DIR holds torchao's test files (test_four_over_six.py, test_four_over_six_grouped.py,
# test_four_over_six_inference_cache.py from test/prototype/moe_training/nvfp4_training/ of
# the four-over-six PR, github.com/wolfcomos/ao). Two runs, each in a fresh temporary directory:
#   as-is: the files unchanged; torchao's CUDA / SM100 gates skip what needs a GPU.
#   cpu:   the files with device "cuda" -> "cpu" and the CUDA / SM100 gates reported present,
#          so the GEMM tests run on f46's CPU kernels (f46 needs no SM100); the CuTe DSL kernel
#          tests still skip (torchao SM100 kernels, compared against torchao's own reference).
# Environment: F46_TORCH_LIBRARY (a development build of the extension; default: installed),
# TORCHAO_VERSION (default 0.18.0), F46_TORCHAO_CACHE (default ~/.cache/f46-torchao).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tests_dir=$(cd "${1:?usage: scripts/torchao_tests.sh TESTS_DIR [pytest args...]}" && pwd)
shift
extra=("$@")
py=${PYTHON:-$here/.venv/bin/python}
version=${TORCHAO_VERSION:-0.18.0}
cache=${F46_TORCHAO_CACHE:-$HOME/.cache/f46-torchao}/torchao-$version
if [ ! -d "$cache/torchao" ]; then
  "$py" -m pip install --quiet --no-deps --target "$cache" "torchao==$version"
fi
if [ -z "${F46_TORCH_LIBRARY:-}" ] && lib=$(ls "$here"/build/release/python/f46/libf46_torch*.so \
    2>/dev/null | head -1); then
  export F46_TORCH_LIBRARY=$lib  # the tree's build, with the tree's python/f46 below
fi
export PYTHONPATH="$here/python:$cache${PYTHONPATH:+:$PYTHONPATH}"

run() {  # run NAME CPU
  local work
  work=$(mktemp -d)
  cp "$tests_dir"/test_four_over_six*.py "$work"/
  cp "$here"/tests/torchao_alias/torchao_alias.py "$work"/
  cp "$here"/tests/torchao_alias/alias_conftest.py "$work"/conftest.py
  if [ "$2" = 1 ]; then
    sed -i -e 's/device="cuda"/device="cpu"/g' -e "s/device='cuda'/device='cpu'/g" \
      -e 's/torch\.cuda\.is_available()/True/g' "$work"/test_four_over_six*.py
  fi
  echo "== torchao four-over-six tests against f46, $1 run ($work)"
  (cd "$work" && F46_TORCHAO_CPU=$2 "$py" -m pytest -q -rs -p no:cacheprovider \
    --rootdir "$work" "${extra[@]}" . ) || true
  rm -rf "$work"
}
run as-is 0
run cpu 1
