#!/usr/bin/env bash
# Engineer G's device check of src/cuda/gemm: configure, build, CUDA GEMM tests,
# compute-sanitizer memcheck on small cases, then the GEMM benchmark. Logs go to $OUT.
# Usage (repo root, on the GPU machine): OUT=/tmp/out dev/gpu_gemm.sh [tests|bench|all]
set -o pipefail
WHAT=${1:-all}
OUT=${OUT:-/tmp/f46_out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site
B=build-gpu-gemm
CUTLASS=/tmp/site/cutlass_library/source/include
cfg() {
  cmake -S . -B $B -G Ninja -DF46_GTEST_SOURCE="$PWD/.deps/googletest" \
    -DF46_CUTLASS_INCLUDE=$CUTLASS "$@" 2>&1 | tee "$OUT/cmake.log" | tail -2
}
cfg -DF46_BUILD_TORCH=ON || cfg -DF46_BUILD_TORCH=OFF
time ninja -C $B -j16 f46_tests 2>&1 | tee "$OUT/build.log" | grep -E "error|warning|FAILED" | head -20
(ninja -C $B -j16 f46_torch > "$OUT/build_torch.log" 2>&1; echo "torch ext rc=$?") &
TORCH_BUILD=$!
if [[ $WHAT != bench ]]; then
  $B/f46_tests --gtest_filter='*Cuda*Gemm*:*CudaGrouped*' 2>&1 | tee "$OUT/tests.log" \
    | grep -E "^\[  (FAILED|PASSED|SKIPPED) |FAILED TEST|tests ran|Failure|Expected|Which is|error" | head -60
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $B/f46_tests \
    --gtest_filter='Shapes/CudaGroupedM.MatchesFp64Reference/M20N33*:Shapes/CudaGroupedK.MatchesFp64Reference/N24K40*:CudaGroupedMOffsets.*:Shapes/CudaDenseGemm.MatchesFp64Reference/M37N50*' \
    2>&1 | tee "$OUT/memcheck.log" | tail -6
  echo "memcheck rc=$?"
fi
wait $TORCH_BUILD
tail -3 "$OUT/build_torch.log"
if [[ $WHAT != tests ]]; then
  LIB=$(ls $B/python/f46/libf46_torch*.so 2>/dev/null | head -1)
  F46_TORCH_LIBRARY=$LIB python3 bench/bench_gemm.py ${BENCH_WHICH:-all} 2>&1 | tee "$OUT/bench.log"
fi
