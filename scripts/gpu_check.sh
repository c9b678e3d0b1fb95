#!/usr/bin/env bash
# The device check: configure, build (library, GoogleTest binary, torch extension, benchmarks),
# run every C++ test (the CUDA ones included), compute-sanitizer memcheck + racecheck on small
# kernel-test filters, the Python suite on CUDA, then the benchmarks. Logs under $OUT; a short
# summary last; logs come back as $OUT/logs.tgz.   Usage (repo root, GPU machine): scripts/gpu_check.sh [build|diag|test|sanitize|pytest|consumer|bench|plans|layer-plans|ncu|layer|baseline|profile|demo|demo-part|all]...
# Needs .deps/googletest (a GoogleTest source tree) and .whl/ (the nvidia-cutlass wheel).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
STEPS=${*:-all}
B=${F46_GPU_BUILD:-build-gpu}
has() { [[ " $STEPS " == *" $1 "* || " $STEPS " == *" all "* ]]; }
SUMMARY="$OUT/summary.txt"
note() { echo "$*" | tee -a "$SUMMARY"; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1

[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD/python
export F46_TORCH_LIBRARY=$PWD/$B/python/f46/libf46_torch.so

if has build; then
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
  cmake -S . -B "$B" -G Ninja -DF46_GTEST_SOURCE="$PWD/.deps/googletest" -DF46_BUILD_TORCH=ON \
    -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 \
    -DCMAKE_CUDA20_EXTENSION_COMPILE_OPTION=-std=c++20 > "$OUT/cmake.log" 2>&1 \
    || { tail -30 "$OUT/cmake.log"; exit 1; }
  start=$(date +%s)
  ninja -C "$B" -j16 ${F46_BUILD_TARGETS:-f46_tests f46_torch bench_quantize} > "$OUT/build.log" 2>&1
  rc=$?; note "build rc=$rc ($(( $(date +%s) - start )) s)"
  ((rc == 0)) || { grep -m5 -A10 "error" "$OUT/build.log"; exit 1; }
  grep -i "spill" "$OUT/build.log" | grep -v " 0 bytes spill" | head -5
fi

if has diag; then  # host toolchain facts behind host-side (CPU-form) test differences
  { g++ --version | head -1; echo "CXXFLAGS=${CXXFLAGS:-} CFLAGS=${CFLAGS:-} LDFLAGS=${LDFLAGS:-}";
    grep -m1 "CMAKE_BUILD_TYPE" "$B/CMakeCache.txt"; grep -o "avx512[a-z_0-9]*" /proc/cpuinfo | sort -u | tr '\n' ' '; echo;
    ninja -C "$B" -t commands f46_tests | grep -m1 "test_cuda_lean_block" ; } > "$OUT/diag.txt" 2>&1
  timeout 60 "$B/f46_tests" --gtest_brief=1 --gtest_filter='CudaLeanBlock.*' > "$OUT/lean_alone.log" 2>&1
  note "CudaLeanBlock alone rc=$? $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]' "$OUT/lean_alone.log" | tr '\n' ' ')"
  cat "$OUT/diag.txt"
fi
if has test; then
  timeout ${F46_TEST_TIMEOUT:-240} stdbuf -oL "$B/f46_tests" --gtest_brief=1 --gtest_filter="${F46_GTEST_FILTER:-*}" > "$OUT/ctest.log" 2>&1
  rc=$?; note "f46_tests rc=$rc $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|^\[  SKIPPED \]' "$OUT/ctest.log" | tr '\n' ' ')"
  # a hang (timeout) stops the run: the steps after it would hang too and spend the device time
  ((rc == 124)) && { note "f46_tests timed out; stopping"; exit 1; }
  grep -m10 -A6 "Failure" "$OUT/ctest.log" | head -60
fi
if has sanitize && [[ -n "${F46_SANITIZE_ONLY:-}" ]]; then  # a short budget: only these filters
  timeout ${F46_SANITIZE_TIMEOUT:-200} compute-sanitizer --tool memcheck --error-exitcode 9 "$B/f46_tests" \
    --gtest_filter="$F46_SANITIZE_ONLY" --gtest_brief=1 > "$OUT/memcheck.log" 2>&1
  note "memcheck ($F46_SANITIZE_ONLY) rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
  timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 "$B/f46_tests" \
    --gtest_filter="${F46_RACECHECK_ONLY:-$F46_SANITIZE_ONLY}" --gtest_brief=1 > "$OUT/racecheck.log" 2>&1
  note "racecheck rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/racecheck.log" | tail -1)"
elif has sanitize; then
  Q='Shapes/CudaQuantizeExperts.EqualsCpuBitwise/E5N48K160_16x16_mae*:Shapes/CudaQuantizeExperts.EqualsCpuBitwise/E3N1040K528*:ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/*48x80_bfloat16:CudaQuantizeEdge.TiesAndZeros:CudaQuantizeEdge.InvalidOffsetsAreClamped:CudaAmax.NaNPropagates:CudaPad.*:CudaSwiGLU.*:CudaQuantizeVirtualPad.*:CudaQuantizeColumnwiseOnly.*'
  G='Shapes/CudaGroupedM.MatchesFp64Reference/M20N33*:Shapes/CudaGroupedK.MatchesFp64Reference/N24K40*:CudaGroupedMOffsets.*:Shapes/CudaDenseGemm.MatchesFp64Reference/M37N50*:Shapes/CudaGroupedM.RowsPastLastOffsetAreZero/M2100*:Shapes/CudaGroupedK.EachGroupEqualsDenseGemmBitwise/N1040*:CudaGemmTuning.*:Shapes/CudaGemmOperandCopy.*:Shapes/CudaGemmFused.RunsPlanB/M330*:Shapes/CudaGemmFused.RunsPlanB/M40N*:Shapes/CudaGemmW4.RunsPlanC/M330*:Shapes/CudaGemmW4.RunsPlanC/M40N*:Shapes/CudaGemmW4.RunsPlanC/M37N*:Shapes/CudaGemmW4.RunsPlanC/M513N*'
  timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 "$B/f46_tests" \
    --gtest_filter="$Q:$G" --gtest_brief=1 > "$OUT/memcheck.log" 2>&1
  note "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
  R='ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/mae256_256x1040_bfloat16:CudaQuantizeLarge.RowsKernelFloat32:ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/*mse16x16_rowcol_48x80_bfloat16:ModesShapes/CudaQuantizeVsCpu.BitwiseEqual/*grad_group_sr_48x80_float32:CudaPad.*:CudaSwiGLU.*:CudaQuantizeVirtualPad.*:CudaQuantizeColumnwiseOnly.*:Shapes/CudaGemmFused.RunsPlanB/M330*:Shapes/CudaGemmFused.BitwiseEqualsPlanA/M600*:Shapes/CudaGemmW4.RunsPlanC/M330*:Shapes/CudaGemmW4.BitwiseEqualsPlanA/M600*'
  timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 "$B/f46_tests" \
    --gtest_filter="$R" --gtest_brief=1 > "$OUT/racecheck.log" 2>&1
  note "racecheck rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/racecheck.log" | tail -1)"
fi
if has pytest; then
  timeout ${F46_PYTEST_TIMEOUT:-300} python3 -m pytest tests/python -q --maxfail=5 -k "${F46_PYTEST_K:-cuda}" -p no:cacheprovider > "$OUT/pytest_cuda.log" 2>&1
  note "pytest (cuda cases) rc=$? $(tail -1 "$OUT/pytest_cuda.log")"
  grep -m5 -B5 "Error\|assert" "$OUT/pytest_cuda.log" | head -40
fi

if has consumer; then  # the C++ package of $B installed, tests/consumer built on it, examples run
  bash tests/consumer/check.sh cuda-run "$B" > "$OUT/consumer.log" 2>&1
  note "consumer rc=$? $(grep -E 'tests passed|FAILED' "$OUT/consumer.log" | tr '\n' ' ')"
  grep -E "grouped_gemm_cuda:|Failed|\*\*\*" "$OUT/consumer.log" | head -20
fi
if has bench; then
  "$B/bench/bench_quantize" 30 > "$OUT/bench_quantize.log" 2>&1; note "bench_quantize rc=$?"
  python3 bench/bench_gemm.py > "$OUT/bench_gemm.log" 2>&1; note "bench_gemm rc=$?"
  cat "$OUT/bench_quantize.log" "$OUT/bench_gemm.log" | grep "|" | grep -v -- "---"
fi
if [[ " $STEPS " == *" plans "* ]]; then  # the GEMM plans table alone (bench_gemm.py plans)
  timeout ${F46_PLANS_TIMEOUT:-240} python3 bench/bench_gemm.py plans > "$OUT/bench_plans.log" 2>&1
  note "bench_gemm plans rc=$?"; grep "|" "$OUT/bench_plans.log" | grep -v -- "---"
fi
if [[ " $STEPS " == *" layer-plans "* ]]; then  # plans (a) and (c) on the layers' M-grouped GEMMs
  timeout ${F46_PLANS_TIMEOUT:-240} python3 bench/bench_gemm.py layer-plans > "$OUT/bench_layer_plans.log" 2>&1
  note "bench_gemm layer-plans rc=$?"; grep "|" "$OUT/bench_layer_plans.log" | grep -v -- "---" | awk '!seen[$0]++'
fi
if [[ " $STEPS " == *" ncu "* ]]; then  # Nsight Compute of the first launch of F46_NCU_KERNEL
  # in F46_NCU_CMD (default: bench/ncu_w4.py, one plan (c) GEMM: dense 8192^3, or the grouped
  # F46_NCU_SHAPE="E M K N")
  K=${F46_NCU_KERNEL:-w4_gemm_kernel}
  R=${TMPDIR:-/tmp}/ncu_$K  # the report stays here; its stall table and per-SASS samples come back
  timeout ${F46_NCU_TIMEOUT:-200} ncu -k "regex:$K" --launch-count 1 --set full --import-source yes \
    -f -o "$R" ${F46_NCU_CMD:-python3 bench/ncu_w4.py ${F46_NCU_SHAPE:+"$F46_NCU_SHAPE"}} > "$OUT/ncu_$K.log" 2>&1
  note "ncu $K rc=$?"
  ncu -i "$R.ncu-rep" > "$OUT/ncu_$K.txt" 2>&1
  ncu -i "$R.ncu-rep" --page raw 2>/dev/null | grep -E "issue_stalled|warps_issue_stalled" \
    | sort -k3 -g -r > "$OUT/ncu_${K}_stalls.txt"
  ncu -i "$R.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_${K}_sass.csv" 2>&1
  head -25 "$OUT/ncu_${K}_stalls.txt"
  grep -E "Duration|Throughput|Issue Slots Busy|Registers Per|Achieved Occupancy|Stall|stall" \
    "$OUT/ncu_$K.txt" | head -30
fi
if [[ " $STEPS " == *" baseline "* ]]; then  # the layer bench of another commit's tree, same machine
  # F46_BASELINE_SRC (default .baseline/, e.g. `git archive 6f75adb | tar -x -C .baseline`,
  # carried to the device) built into build-baseline; its own bench_layer.py and python/.
  BS=${F46_BASELINE_SRC:-.baseline}
  if [ -f "$BS/CMakeLists.txt" ]; then
    cmake -S "$BS" -B build-baseline -G Ninja -DF46_GTEST_SOURCE="$PWD/.deps/googletest" \
      -DF46_BUILD_TORCH=ON -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 \
      -DCMAKE_CUDA20_EXTENSION_COMPILE_OPTION=-std=c++20 > "$OUT/cmake_baseline.log" 2>&1 &&
      ninja -C build-baseline -j16 f46_torch > "$OUT/build_baseline.log" 2>&1
    note "baseline build rc=$?"
    PYTHONPATH=/tmp/site:$PWD/$BS/python F46_TORCH_LIBRARY=$PWD/build-baseline/python/f46/libf46_torch.so \
      timeout ${F46_LAYER_TIMEOUT:-300} python3 "$BS/bench/bench_layer.py" > "$OUT/bench_layer_baseline.log" 2>&1
    note "bench_layer (baseline $BS) rc=$?"; grep "geometric" "$OUT/bench_layer_baseline.log"
  else
    note "baseline: no source tree at $BS"
  fi
fi
if has layer; then
  timeout ${F46_LAYER_TIMEOUT:-300} python3 bench/bench_layer.py > "$OUT/bench_layer.log" 2>&1
  note "bench_layer rc=$?"; cat "$OUT/bench_layer.log"
fi

if has profile; then
  timeout ${F46_PROFILE_TIMEOUT:-300} python3 bench/profile_layer.py > "$OUT/profile_layer.log" 2>&1
  note "profile_layer rc=$?"; grep -A14 "^####" "$OUT/profile_layer.log" | grep -v "^  " | head -120
fi
if has demo; then
  timeout ${F46_DEMO_TIMEOUT:-540} python3 -m f46.demo --device cuda --no-progress --out "$OUT/demo" ${F46_DEMO_ARGS:-} \
    > "$OUT/demo.log" 2>&1
  note "demo rc=$?"; tail -15 "$OUT/demo.log"
fi
if [[ " $STEPS " == *" demo-part "* ]]; then  # one seed of the `long` preset: F46_DEMO_SEED (0), F46_DEMO_STEPS (part 0 calibrates)
  K=${F46_DEMO_SEED:-0}
  timeout ${F46_DEMO_TIMEOUT:-540} python3 -m f46.demo --device cuda --no-progress --preset long \
    --seed "$K" --seeds 1 ${F46_DEMO_STEPS:+--steps $F46_DEMO_STEPS} --out "$OUT/part$K" \
    > "$OUT/demo_part$K.log" 2>&1
  note "demo part $K rc=$? $(grep -m1 -o 'calibrated:.*' "$OUT/demo_part$K.log" | head -c 200)"
  tail -8 "$OUT/demo_part$K.log"
fi
echo "==== summary"; cat "$SUMMARY"
# The device tool returns a few files per run: everything else goes back as one archive.
LIST=$(mktemp); find "$OUT" -mindepth 1 -maxdepth 1 ! -name summary.txt ! -name logs.tgz -printf '%P\n' > "$LIST"
if [ -s "$LIST" ]; then
  tar czf "$OUT/logs.tgz" -C "$OUT" -T "$LIST" && xargs -a "$LIST" -I{} rm -rf "$OUT/{}"
fi
rm -f "$LIST"
