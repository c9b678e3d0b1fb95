#!/usr/bin/env bash
# One device call for the lean quantization kernels: the loop lab (dev/lean_lab.cu: variants
# against the rows / tile kernels, bytewise), then dev/gpu_quantize.sh (build, the CUDA
# quantize tests bitwise vs the CPU reference, memcheck + racecheck, bench_quantize).
#   OUT=... dev/gpu_lean.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
nvcc -std=c++20 -arch=sm_90a -O3 --fmad=false --expt-relaxed-constexpr -Isrc -Iinclude \
  dev/lean_lab.cu -o /tmp/lean_lab && timeout "${T_LAB:-120}" /tmp/lean_lab 30 > "$OUT/lab.log" 2>&1
echo "lab rc=$?"
grep -E "^\| |copy|equal" "$OUT/lab.log" | head -80
BUILD=${BUILD:-build-gpu} T_TESTS=${T_TESTS:-170} T_SAN=${T_SAN:-100} T_BENCH=${T_BENCH:-90} \
  bash dev/gpu_quantize.sh all 2>&1 | tee "$OUT/gq.log" | tail -60
