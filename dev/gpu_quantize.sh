#!/usr/bin/env bash
# GPU lab run for the CUDA quantization kernels (engineer F): configure + build the tests and
# the benchmark, run the CUDA quantize/amax/pad tests, compute-sanitizer memcheck + racecheck on
# a small filter, then bench_quantize. Logs go to $OUT (default: ./gpu-out).
#   dev/gpu_quantize.sh [tests|sanitize|bench|all]   (default all)
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
if [ "${FALLBACK:-0}" = 1 ] || ! ( time ninja -C "$BUILD" -j16 f46_tests bench_quantize ) > "$OUT/build.log" 2>&1; then
  [ -f "$OUT/build.log" ] && grep -B2 -A12 -m3 "error" "$OUT/build.log" | head -40
  # Fallback (FALLBACK=1, or the full build failed): the library without the GEMMs (CUTLASS
  # builds are slow and may be mid-edit by others), quantize/amax/pad tests only.
  echo "building the quantize-only fallback (FALLBACK=${FALLBACK:-0})" | tee -a "$OUT/build.log"
  FB=$BUILD/fallback; mkdir -p "$FB"
  FLAGS="-O3 -std=c++20 -Iinclude -Isrc -Itests/cpp -I.deps/googletest/googletest/include"
  NV="nvcc $FLAGS -arch=sm_90a --fmad=false --expt-relaxed-constexpr -Xcompiler=-ffp-contract=off"
  SRCS=$(ls src/*.cpp src/cpu/*.cpp src/cuda/device.cpp src/cuda/common/*.cpp \
         src/cuda/quantize/*.cpp src/cuda/quantize/*.cu src/cuda/pad/*.cu 2>/dev/null \
         | grep -v -e no_cuda.cpp -e 'src/gemm.cpp' -e 'src/cpu/gemm')
  TSRCS="tests/cpp/cuda/test_cuda_quantize.cpp tests/cpp/cuda/test_cuda_quantize_edge.cpp
         tests/cpp/cuda/test_cuda_pad.cpp"
  printf '#include "backend.h"\nnamespace f46::cuda {\n#define S(n) F46_CHECK(false, #n " not built")
void gemm(const QuantizedOperand&, const QuantizedOperand&, const TensorView&, TensorView&, const Context&) { S(gemm); }
void grouped_gemm_m(const QuantizedOperand&, const QuantizedOperand&, const TensorView&, const TensorView&, TensorView&, const Context&) { S(gm); }
void grouped_gemm_k(const QuantizedOperand&, const QuantizedOperand&, const TensorView&, TensorView&, const Context&) { S(gk); }
}\n' > "$FB/stub.cu"
  printf '#include "backend.h"\nnamespace f46::cpu {\n#define S(n) F46_CHECK(false, #n " not built")
void gemm(const QuantizedOperand&, const QuantizedOperand&, const TensorView&, TensorView&, const Context&) { S(gemm); }
void grouped_gemm_m(const QuantizedOperand&, const QuantizedOperand&, const TensorView&, const TensorView&, TensorView&, const Context&) { S(gm); }
void grouped_gemm_k(const QuantizedOperand&, const QuantizedOperand&, const TensorView&, TensorView&, const Context&) { S(gk); }
}\n' > "$FB/stub_cpu.cu"
  objs=()
  for f in $SRCS $TSRCS "$FB/stub.cu" "$FB/stub_cpu.cu" \
           .deps/googletest/googletest/src/gtest-all.cc .deps/googletest/googletest/src/gtest_main.cc; do
    o="$FB/$(echo "$f" | tr / _).o"; objs+=("$o")
    case $f in
      *.cu) $NV -c "$f" -o "$o" & ;;
      *gtest*) g++ -O2 -std=c++20 -I.deps/googletest/googletest/include \
               -I.deps/googletest/googletest -c "$f" -o "$o" & ;;
      *) g++ $FLAGS -ffp-contract=off -I/usr/local/cuda/include -c "$f" -o "$o" & ;;
    esac
  done
  wait
  LIBOBJS=$(printf '%s\n' "${objs[@]}" | grep -v -e test_cuda -e gtest)
  nvcc -arch=sm_90a -o "$FB/f46_tests" "${objs[@]}" -lpthread >> "$OUT/build.log" 2>&1
  $NV -c bench/bench_quantize.cu -o "$FB/bench.o" && \
    nvcc -arch=sm_90a -o "$FB/bench_quantize" "$FB/bench.o" $LIBOBJS -lpthread >> "$OUT/build.log" 2>&1
  TESTS="$FB/f46_tests"; BENCH="$FB/bench_quantize"
fi
tail -4 "$OUT/build.log"

FILTER='ModesShapes/CudaQuantizeVsCpu.*:CudaQuantize*.*:CudaAmax.*:CudaPad.*'
if [ "$WHAT" = all ] || [ "$WHAT" = tests ]; then
  "$TESTS" --gtest_filter="$FILTER" --gtest_brief=1 > "$OUT/tests.log" 2>&1
  echo "tests rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|FAILED  \]" "$OUT/tests.log" | head -40
  grep -m20 -B1 -A4 "Failure" "$OUT/tests.log" | head -80
fi
if [ "$WHAT" = all ] || [ "$WHAT" = sanitize ]; then
  SMALL='ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/*48x80_bfloat16:CudaQuantizeEdge.TiesAndZeros:CudaQuantizeEdge.InvalidOffsetsAreClamped:CudaAmax.NaNPropagates:CudaPad.*'
  compute-sanitizer --tool memcheck --error-exitcode 9 "$TESTS" \
    --gtest_filter="$SMALL" --gtest_brief=1 > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.log"
  RACE='ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/*mse16x16_rowcol_48x80_bfloat16:ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/*grad_group_sr_48x80_float32:CudaPad.*'
  compute-sanitizer --tool racecheck --error-exitcode 9 "$TESTS" \
    --gtest_filter="$RACE" --gtest_brief=1 > "$OUT/racecheck.log" 2>&1
  echo "racecheck rc=$?"; tail -3 "$OUT/racecheck.log"
fi
if [ "$WHAT" = all ] || [ "$WHAT" = bench ]; then
  "$BENCH" 30 2>&1 | tee "$OUT/bench.log"
fi
