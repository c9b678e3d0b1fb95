#!/usr/bin/env bash
# One device call for the lean quantization kernels, most important first: build + the CUDA
# quantize tests bitwise vs the CPU reference, bench_quantize, the loop lab (dev/lean_lab.cu:
# the lean kernels against the rows / tile kernels, bytewise, same run), then memcheck +
# racecheck (all through dev/gpu_quantize.sh). Logs under $OUT.
#   OUT=... [T_TESTS= T_BENCH= T_LAB= (0: no lab) LAB_ITERS= T_NCU= NCU_KERNELS= (needs the lab)
#   T_SAN=] dev/gpu_lean.sh   (T_TESTS=0 / T_BENCH=0 / T_SAN=0: skip that step; the lab reads
#   LAB_MAE_ONLY, LAB_ROWS_ONLY, LAB_NO_RC, LAB_RC_ONLY, LAB_RC_GROUP_ONLY,
#   LAB_T16_ONLY; LAB_RUNS runs several of them, see below). For lab runs alone, building the lab here and running the binary on the device (dev/lean_lab.cu's
#   header) saves the device the ~50 s compile; dev/ncu_lab.sh profiles one of its kernels.
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export BUILD=${BUILD:-build-gpu} T_TESTS=${T_TESTS:-170} T_SAN=${T_SAN:-80} T_BENCH=${T_BENCH:-90}
if [ "${T_LAB:-120}" != 0 ]; then  # the lab builds beside the library
  nvcc -std=c++20 -arch=sm_90a -O3 --fmad=false --expt-relaxed-constexpr -Isrc -Iinclude \
    dev/lean_lab.cu src/cuda/device.cpp -o /tmp/lean_lab > "$OUT/lab_build.log" 2>&1 &
  LAB_PID=$!
fi
if [ "$T_TESTS" != 0 ]; then WHAT=tests; else WHAT=build; fi  # build: nothing but the build
if [ "$T_TESTS$T_BENCH$T_SAN" != 000 ]; then  # the library is needed
  bash dev/gpu_quantize.sh $WHAT 2>&1 | tee "$OUT/gq_tests.log" | tail -25
  rm -f "$OUT/tests.log.gz"; gzip -f "$OUT/tests.log" 2>/dev/null
fi
if [ "$T_BENCH" != 0 ]; then
  bash dev/gpu_quantize.sh bench > "$OUT/gq_bench.log" 2>&1
  grep -E "copy|^\| |geometric" "$OUT/gq_bench.log"
fi
if [ "${T_LAB:-120}" != 0 ]; then  # T_LAB=0: no lab
  wait "$LAB_PID" || tail -20 "$OUT/lab_build.log"
  # The SM clock under load (the issue-bound kernels' time scales with it): sampled every 50 ms
  # while the lab runs, summarised after it.
  nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu \
    --format=csv,noheader,nounits -lms 50 > "$OUT/clocks.csv" 2>/dev/null &
  SMI_PID=$!
  # LAB_RUNS: lab runs separated by ';', each a list of LAB_* settings (one run with the
  # environment's LAB_* settings when unset), e.g. 'LAB_NO_RC=1;LAB_RC_GROUP_ONLY=1'.
  : > "$OUT/lab.log"
  IFS=';' read -r -a RUNS <<< "${LAB_RUNS:-}"
  [ ${#RUNS[@]} -gt 0 ] || RUNS=("")
  for RUN in "${RUNS[@]}"; do
    echo "## lab run: ${RUN:-(environment)}" >> "$OUT/lab.log"
    env $RUN timeout "${T_LAB:-120}" /tmp/lean_lab ${LAB_ITERS:-30} >> "$OUT/lab.log" 2>&1
    echo "lab (${RUN:-environment}) rc=$?"
  done
  kill "$SMI_PID" 2>/dev/null
  sort -t, -k1 -n "$OUT/clocks.csv" | awk -F, '$3 > 200 {c[n++] = $1} END {
    if (n) printf "SM clock while drawing > 200 W: min %d, median %d, max %d MHz (%d samples)\n",
      c[0], c[int(n / 2)], c[n - 1], n }'
  grep -E "^## lab|^\| |copy|equal" "$OUT/lab.log" | grep -v "^| variant\|^|---" | head -120
fi
if [ -n "${T_NCU:-}" ]; then  # Nsight Compute on lab kernels (first shape), in $OUT/ncu.tgz
  mkdir -p /tmp/ncu_out
  # NCU_KERNELS: mangled-name regexes (default: the lean tensor kernel, MAE).
  i=0
  for K in ${NCU_KERNELS:-quantize_rows_lean_tensor_kernelILNS0_9QuantModeE0}; do
    i=$((i + 1))
    timeout "$T_NCU" ncu --clock-control none --kernel-name-base mangled -k "regex:$K" -s 2 -c 1 \
      --section SpeedOfLight --section WarpStateStats --section InstructionStats \
      --section SchedulerStats --section Occupancy --section LaunchStats --section SourceCounters \
      --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis \
      --metrics smsp__inst_executed.sum,smsp__sass_thread_inst_executed.sum,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,smsp__cycles_active.avg,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_write.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum \
      -o /tmp/ncu_$i -f /tmp/lean_lab 2 > /tmp/ncu_out/ncu_run_$i.log 2>&1
    echo "ncu $i ($K) rc=$?"
    ncu --import /tmp/ncu_$i.ncu-rep > /tmp/ncu_out/ncu_$i.txt 2>&1
    ncu --import /tmp/ncu_$i.ncu-rep --page source --csv --print-source sass > /tmp/src_$i.csv 2>&1
    python3 dev/ncu_sass_summary.py /tmp/src_$i.csv > /tmp/ncu_out/sass_$i.txt 2>&1
    grep -E "Duration|Issue Slots Busy|Warp Cycles Per Issued|Active Warps Per|Eligible Warps|No Eligible|Registers Per|pipe_|thread_inst|dram__bytes|lts__t_sectors|bank_conflicts|wavefronts|Stall|stall|Pipe|XU|xu" /tmp/ncu_out/ncu_$i.txt | head -40
  done
  tar czf "$OUT/ncu.tgz" -C /tmp ncu_out
fi
[ "$T_SAN" = 0 ] || bash dev/gpu_quantize.sh sanitize 2>&1 | tee "$OUT/gq_san.log" | grep -E "rc=|ERROR SUMMARY|RACECHECK SUMMARY"
