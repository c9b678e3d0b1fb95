#!/usr/bin/env bash
# One device call for the lean quantization kernels, most important first: build + the CUDA
# quantize tests bitwise vs the CPU reference, bench_quantize, the loop lab (dev/lean_lab.cu:
# the lean kernels against the rows / tile kernels, bytewise, same run), then memcheck +
# racecheck (all through dev/gpu_quantize.sh). Logs under $OUT.
#   OUT=... dev/gpu_lean.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export BUILD=${BUILD:-build-gpu} T_TESTS=${T_TESTS:-170} T_SAN=${T_SAN:-80} T_BENCH=${T_BENCH:-90}
bash dev/gpu_quantize.sh tests 2>&1 | tee "$OUT/gq_tests.log" | tail -25
bash dev/gpu_quantize.sh bench > "$OUT/gq_bench.log" 2>&1
grep -E "copy|^\| |geometric" "$OUT/gq_bench.log"
nvcc -std=c++20 -arch=sm_90a -O3 --fmad=false --expt-relaxed-constexpr -Isrc -Iinclude \
  dev/lean_lab.cu -o /tmp/lean_lab && timeout "${T_LAB:-120}" /tmp/lean_lab ${LAB_ITERS:-30} > "$OUT/lab.log" 2>&1
echo "lab rc=$?"
grep -E "^\| |copy|equal" "$OUT/lab.log" | grep -v "^| variant\|^|---" | head -60
bash dev/gpu_quantize.sh sanitize 2>&1 | tee "$OUT/gq_san.log" | grep -E "rc=|ERROR SUMMARY|RACECHECK SUMMARY"
