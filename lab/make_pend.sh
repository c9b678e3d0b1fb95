#!/usr/bin/env bash
# Builds .pend/ for a device call on the pending series without a device build: the series
# applied on a branch of its base (lab/pending on main), built here (f46_tests, f46_torch), its
# tree archived; main's libf46_torch.so and python/ + bench/ as the same-run baseline. Then
#   run(command="bash .pend/run.sh dev4.sh", carry=[".pend"])
# Usage (repo root, after scripts/setup_env.sh): bash lab/make_pend.sh [base-commit]
# Both builds take ~20 min each on 2 cores (ccache helps the second time).
set -euo pipefail
ROOT=$PWD BASE=${1:-1f64f47}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/f46-ccache} CCACHE_BASEDIR=/work
build() {  # tree -> tree/build with f46_tests and f46_torch
  "$ROOT/.venv/bin/cmake" -S "$1" -B "$1/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DF46_BUILD_TORCH=ON -DF46_GTEST_SOURCE="$ROOT/.deps/googletest" \
    -DCMAKE_PREFIX_PATH="$ROOT/.venv/lib/python3.11/site-packages" \
    -DPython3_EXECUTABLE="$ROOT/.venv/bin/python" > /dev/null
  "$ROOT/.venv/bin/cmake" --build "$1/build" -j2 --target "${@:2}"
}
rm -rf /tmp/f46-series /tmp/f46-main && git worktree prune
git worktree add -q --detach /tmp/f46-series "$BASE" && (cd /tmp/f46-series && git am -q "$ROOT"/lab/pending/*.patch)
git worktree add -q --detach /tmp/f46-main "$BASE"
build /tmp/f46-series f46_tests f46_torch
build /tmp/f46-main f46_torch
mkdir -p .pend
cp /tmp/f46-series/build/f46_tests /tmp/f46-series/build/python/f46/libf46_torch.so .pend/
cp /tmp/f46-main/build/python/f46/libf46_torch.so .pend/base.so
(cd /tmp/f46-series && git archive HEAD -o "$ROOT/.pend/l2.tar")
git archive "$BASE" python bench -o .pend/base.tar
cat > .pend/run.sh <<'RUN'
#!/usr/bin/env bash
# (made by lab/make_pend.sh) unpack the series and main's baseline, run lab/<script> in the series
set -u
T=/tmp/l2; rm -rf $T /tmp/base; mkdir -p $T/build/release/python/f46 /tmp/base; tar -xf .pend/l2.tar -C $T
cp .pend/f46_tests $T/build/release/; cp .pend/libf46_torch.so $T/build/release/python/f46/
tar -xf .pend/base.tar -C /tmp/base; cp .pend/base.so /tmp/base/libf46_torch.so
export BASE_TREE=/tmp/base
cd $T && bash lab/${1:-dev4.sh}
RUN
grep -q "^.pend/" .git/info/exclude 2>/dev/null || echo ".pend/" >> "$(git rev-parse --git-common-dir)/info/exclude"
du -sh .pend
