#!/usr/bin/env bash
# Engineer's device check of plan (b) (src/cuda/gemm/fused_fp4_*): build, the fused GEMM tests
# (+ the plan (a) GEMM tests), compute-sanitizer memcheck on small fused cases, then the plan
# benchmark (bench/bench_gemm.py plans). Logs under $OUT.
# Usage (repo root, GPU machine): OUT=/tmp/out dev/gpu_fused.sh [tests|bench|all]
set -o pipefail
WHAT=${1:-all}
OUT=${OUT:-/tmp/f46_out}
mkdir -p "$OUT"
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site
B=build-gpu-fused
CUTLASS=/tmp/site/cutlass_library/source/include
if [ ! -f $B/build.ninja ]; then
  cmake -S . -B $B -G Ninja -DF46_GTEST_SOURCE="$PWD/.deps/googletest" -DF46_CUTLASS_INCLUDE=$CUTLASS \
    -DF46_BUILD_TORCH=ON -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 \
    -DCMAKE_CUDA20_EXTENSION_COMPILE_OPTION=-std=c++20 > "$OUT/cmake.log" 2>&1 || tail -20 "$OUT/cmake.log"
fi
start=$(date +%s)
ninja -C $B -j16 f46_tests f46_torch > "$OUT/build.log" 2>&1
echo "build rc=$? ($(( $(date +%s) - start )) s)"
grep -E "error|spill" "$OUT/build.log" | grep -v " 0 bytes spill" | head -20
if [[ $WHAT != bench ]]; then
  timeout 120 $B/f46_tests --gtest_brief=1 --gtest_filter="${F46_GTEST_FILTER:-*CudaGemmFused*:*CudaGrouped*:*CudaDenseGemm*}" 2>&1 \
    | tee "$OUT/tests.log" | grep -E "^\[  (FAILED|PASSED|SKIPPED) |FAILED|Failure|Expected|Which is|first differing|error" | head -60
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $B/f46_tests --gtest_brief=1 \
    --gtest_filter='Shapes/CudaGemmFused.BitwiseEqualsPlanA/M330*:Shapes/CudaGemmFused.BitwiseEqualsPlanA/M40*:Shapes/CudaGemmFused.BitwiseEqualsPlanA/M16*:Shapes/CudaGemmFused.BitwiseEqualsPlanA/M37*' \
    > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
fi
if [[ $WHAT != tests ]]; then
  LIB=$(ls $B/python/f46/libf46_torch*.so 2>/dev/null | head -1)
  F46_TORCH_LIBRARY=$LIB timeout ${F46_BENCH_TIMEOUT:-150} python3 bench/bench_gemm.py plans 2>&1 | tee "$OUT/bench.log" | grep -v "^|"
  grep "^|" "$OUT/bench.log"
fi
