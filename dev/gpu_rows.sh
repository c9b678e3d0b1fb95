#!/usr/bin/env bash
# One device round for the rowwise quantization kernel: dev/gpu_quantize.sh all (build, CUDA
# quantize tests, sanitizers, bench), racecheck over a multi-step rows case, the rowwise bench
# with the kernel bounded for 3 CTAs/SM (build-c3), and an ncu profile of the rows kernel with
# a per-opcode / per-basic-block summary of the executed SASS. Logs in /tmp/rows-out; the
# profile summaries and bench tables are copied to $OUT.
#   OUT=... dev/gpu_rows.sh
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${OUT:-$PWD/gpu-out}; mkdir -p "$DEST"
export OUT=/tmp/rows-out; mkdir -p "$OUT"
T_TESTS=${T_TESTS:-150} T_SAN=${T_SAN:-50} T_BENCH=${T_BENCH:-60} BUILD=build-gpu \
  timeout 420 dev/gpu_quantize.sh all
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 build-gpu/f46_tests \
  --gtest_filter='CudaQuantizeLarge.RowsKernelFloat32' --gtest_brief=1 > "$OUT/race_rows.log" 2>&1
echo "racecheck rows rc=$?"; tail -2 "$OUT/race_rows.log"
export PYTHONPATH=/tmp/site
cmake -S . -B build-c3 -G Ninja -DF46_GTEST_SOURCE="$PWD/.deps/googletest" \
  -DCMAKE_CUDA_FLAGS=-DF46_ROWS_MIN_CTAS=3 -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 \
  -DCMAKE_CUDA20_EXTENSION_COMPILE_OPTION=-std=c++20 > "$OUT/cmake_c3.log" 2>&1 || tail -5 "$OUT/cmake_c3.log"
ninja -C build-c3 -j16 bench_quantize > "$OUT/build_c3.log" 2>&1 || tail -5 "$OUT/build_c3.log"
echo "min 3 CTAs/SM:"; timeout 40 build-c3/bench/bench_quantize 30 rowwise 2>&1 | tee "$OUT/bench_c3.log"
BENCH_ONLY=MAE F46_GPU_BUILD=build-gpu T_NCU=60 timeout 100 dev/gpu_profile.sh quantize_rows_kernel
grep -E "Duration|Registers|Executed Ipc A|Issue Slots Busy|inst_executed.sum|thread_inst|Memory Through|DRAM Through|L2 Cache Through|pipe_alu|pipe_fma |Achieved Occ" \
  "$OUT/ncu_quantize_rows_kernel.txt" | head -20
head -45 "$OUT/sass_quantize_rows_kernel.txt"
cp "$OUT"/bench.log "$OUT"/bench_c3.log "$OUT"/sass_*.txt "$OUT"/ncu_*.txt "$DEST"/ 2>/dev/null
