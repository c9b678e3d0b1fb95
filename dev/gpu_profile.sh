#!/usr/bin/env bash
# Profile the quantization kernels with Nsight Compute on the lent GPU: builds bench_quantize,
# then one ncu report per kernel filter (first launch after the warm-ups of the benchmark).
#   OUT=... dev/gpu_profile.sh [kernel-regex ...]   (default: rows and tile kernels)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
B=${F46_GPU_BUILD:-build-gpu}
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site
cmake -S . -B "$B" -G Ninja -DF46_GTEST_SOURCE="$PWD/.deps/googletest" \
  -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 \
  -DCMAKE_CUDA20_EXTENSION_COMPILE_OPTION=-std=c++20 > "$OUT/cmake.log" 2>&1 || { tail -20 "$OUT/cmake.log"; exit 1; }
ninja -C "$B" -j16 bench_quantize > "$OUT/build.log" 2>&1 || { grep -m3 -A10 error "$OUT/build.log"; exit 1; }
KS=${*:-quantize_rows_1x16 quantize_tile_kernel}
for k in $KS; do
  timeout ${T_NCU:-90} ncu --clock-control none -k "regex:$k" -s ${NCU_SKIP:-3} -c 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
    --section InstructionStats --section SchedulerStats --section Occupancy --section LaunchStats \
    --section SourceCounters --metrics smsp__inst_executed.sum,smsp__sass_thread_inst_executed.sum,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active \
    -o "/tmp/ncu_$k" -f "$B/bench/bench_quantize" 3 ${BENCH_ONLY:-} > /dev/null 2>&1
  echo "ncu $k rc=$?"
  ncu --import "/tmp/ncu_$k.ncu-rep" > "$OUT/ncu_$k.txt" 2>&1
  ncu --import "/tmp/ncu_$k.ncu-rep" --page source --csv --print-source sass > /tmp/src_$k.csv 2>&1
  python3 dev/ncu_sass_summary.py /tmp/src_$k.csv > "$OUT/sass_$k.txt" 2>&1 || head -5 /tmp/src_$k.csv
done
