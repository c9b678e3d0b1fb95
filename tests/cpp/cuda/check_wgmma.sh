#!/usr/bin/env bash
# No GPU needed: ptxas must keep the WGMMAs of f46's own Hopper GEMM kernels (plan (b):
# fused_fp4_gemm.cu, plan (c): w4_gemm.cu) asynchronous. When it cannot, it serialises every
# WGMMA and says so with a C75xx advisory (C7512: too few registers, C7513: a register an
# in-flight WGMMA reads is redefined) that is only an "info" line of the build, yet halves the
# kernel's speed (lab/log.md). This recompiles each source with the build's own command
# (ninja -t commands) plus `-Xptxas -v` into a scratch object and fails on any such advisory or
# on a spill in those kernels.   Usage: check_wgmma.sh BUILD_DIR [NINJA]
set -uo pipefail
B=$1
NINJA=${2:-ninja}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
for src in fused_fp4_gemm.cu w4_gemm.cu; do
  cmd=$("$NINJA" -C "$B" -t commands f46 | grep -m1 -- "-c [^ ]*src/cuda/gemm/$src")
  if [[ -z "$cmd" ]]; then echo "FAIL $src: no compile command in $B"; rc=1; continue; fi
  # the same flags; the object and its dependency file go to the scratch directory
  cmd=$(sed -e 's| -c | -Xptxas -v -c |' -e "s| -o [^ ]*| -o $tmp/$src.o|" \
    -e "s| -MF [^ ]*| -MF $tmp/$src.d|" <<<"$cmd")
  log=$(cd "$B" && eval "$cmd" 2>&1) || { echo "FAIL $src: compile failed"; echo "$log"; rc=1; continue; }
  kernels=$(grep -c "Compiling entry function" <<<"$log")
  bad=$(grep -E "\(C75[0-9][0-9]\)|[1-9][0-9]* bytes spill" <<<"$log" | grep -E "fused_fp4_gemm_kernel|w4_gemm_kernel")
  if ((kernels == 0)); then echo "FAIL $src: ptxas printed no kernel report"; rc=1;
  elif [[ -n "$bad" ]]; then echo "FAIL $src:"; echo "$bad"; rc=1;
  else echo "ok $src ($kernels entry functions, WGMMAs pipelined, no spills)"; fi
done
exit $rc
