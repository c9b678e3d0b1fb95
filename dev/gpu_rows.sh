#!/usr/bin/env bash
# One device round for the rowwise quantization kernel: dev/gpu_quantize.sh all (build, CUDA
# quantize tests, sanitizers incl. a multi-step rows-kernel racecheck, bench), then an ncu
# profile of the rows kernel with a per-opcode / per-basic-block summary of the executed SASS.
# Logs in /tmp/rows-out; the profile summaries and bench tables are copied to $OUT.
#   OUT=... dev/gpu_rows.sh
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${OUT:-$PWD/gpu-out}; mkdir -p "$DEST"
export OUT=/tmp/rows-out; mkdir -p "$OUT"
T_TESTS=${T_TESTS:-150} T_SAN=${T_SAN:-50} T_BENCH=${T_BENCH:-60} BUILD=build-gpu \
  timeout 420 dev/gpu_quantize.sh all
BENCH_ONLY=MAE F46_GPU_BUILD=build-gpu T_NCU=60 timeout 100 dev/gpu_profile.sh quantize_rows_kernel
grep -E "Duration|Registers|Executed Ipc A|Issue Slots Busy|inst_executed.sum|thread_inst|Memory Through|DRAM Through|L2 Cache Through|pipe_alu|pipe_fma |Achieved Occ" \
  "$OUT/ncu_quantize_rows_kernel.txt" | head -20
head -45 "$OUT/sass_quantize_rows_kernel.txt"
cp "$OUT"/bench.log "$OUT"/sass_*.txt "$OUT"/ncu_*.txt "$DEST"/ 2>/dev/null
