#!/usr/bin/env bash
# GPU lab run for the CUDA quantization kernels (engineer F): configure + build the tests and
# the benchmark, run the CUDA quantize/amax/pad tests, compute-sanitizer memcheck + racecheck on
# a small filter, then bench_quantize. Logs go to $OUT (default: ./gpu-out).
#   dev/gpu_quantize.sh [build|tests|sanitize|bench|all]   (default all; build: the build alone)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
WHAT=${1:-all}
BUILD=${BUILD:-build-gpu}

if [ ! -d /tmp/site/cutlass_library ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}

nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
# CMAKE_CUDA20_*: CMake 3.25 does not know nvcc 13's C++20 flag.
cmake -S . -B "$BUILD" -G Ninja -DF46_GTEST_SOURCE="$PWD/.deps/googletest" \
  -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 \
  -DCMAKE_CUDA20_EXTENSION_COMPILE_OPTION=-std=c++20 > "$OUT/cmake.log" 2>&1 \
  || { tail -30 "$OUT/cmake.log"; exit 1; }
TESTS="$BUILD/f46_tests"; BENCH="$BUILD/bench/bench_quantize"
if ! ( time ninja -C "$BUILD" -j16 f46_tests bench_quantize ) > "$OUT/build.log" 2>&1; then
  grep -B2 -A12 -m3 "error" "$OUT/build.log" | head -40
  exit 1
fi
tail -4 "$OUT/build.log"

FILTER='ModesShapes/CudaQuantizeVsCpu.*:CudaQuantize*.*:CudaDequantize.*:CudaAmax.*:CudaPad.*'
T_TESTS=${T_TESTS:-150}; T_SAN=${T_SAN:-80}; T_BENCH=${T_BENCH:-90}  # seconds per step
if [ "$WHAT" = all ] || [ "$WHAT" = tests ]; then
  timeout "$T_TESTS" "$TESTS" --gtest_filter="$FILTER" --gtest_brief=1 > "$OUT/tests.log" 2>&1
  echo "tests rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|FAILED  \]" "$OUT/tests.log" | head -40
  grep -m20 -B1 -A4 "Failure" "$OUT/tests.log" | head -80
fi
if [ "$WHAT" = all ] || [ "$WHAT" = sanitize ]; then
  SMALL='CudaQuantizeEdge.RowColStochasticRht:CudaQuantizeEdge.RowColRuns:CudaQuantizeEdge.RowColGroupScope:ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/*48x80_bfloat16:ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/*144x192_bfloat16:CudaQuantizeEdge.TiesAndZeros:CudaQuantizeEdge.LeanUndecidedBlocks:CudaDequantize.*:CudaQuantizeEdge.InvalidOffsetsAreClamped:CudaQuantizeEdge.LeanGroupScope:CudaAmax.NaNPropagates:CudaPad.*'
  timeout "$T_SAN" compute-sanitizer --tool memcheck --error-exitcode 9 "$TESTS" \
    --gtest_filter="$SMALL" --gtest_brief=1 > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.log"
  RACE='CudaQuantizeEdge.RowColStochasticRht:CudaQuantizeEdge.RowColRuns:CudaQuantizeEdge.RowColGroupScope:CudaQuantizeEdge.LeanUndecidedBlocks:ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/mae16x16_256x1040_bfloat16:ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/mae256_256x1040_bfloat16:ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/*rowcol_144x192_bfloat16:ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/grad_rne_144x192_bfloat16:CudaQuantizeLarge.RowsKernelFloat32:ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/*mse16x16_rowcol_48x80_bfloat16:ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/*mae_rowcol_129x160_bfloat16:ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/*grad_group_sr_48x80_float32:CudaQuantizeEdge.LeanGroupScope:CudaPad.*'
  timeout "$T_SAN" compute-sanitizer --tool racecheck --error-exitcode 9 "$TESTS" \
    --gtest_filter="$RACE" --gtest_brief=1 > "$OUT/racecheck.log" 2>&1
  echo "racecheck rc=$?"; tail -3 "$OUT/racecheck.log"
fi
if [ "$WHAT" = all ] || [ "$WHAT" = bench ]; then
  timeout "$T_BENCH" "$BENCH" 30 2>&1 | tee "$OUT/bench.log"
fi
