#!/usr/bin/env bash
# One device call for the lean quantization kernels, most important first: build + the CUDA
# quantize tests bitwise vs the CPU reference, bench_quantize, the loop lab (dev/lean_lab.cu:
# the lean kernels against the rows / tile kernels, bytewise, same run), then memcheck +
# racecheck (all through dev/gpu_quantize.sh). Logs under $OUT.
#   OUT=... [T_TESTS= T_BENCH= T_LAB= (0: no lab) LAB_ITERS= T_NCU= (needs the lab) T_SAN=] dev/gpu_lean.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export BUILD=${BUILD:-build-gpu} T_TESTS=${T_TESTS:-170} T_SAN=${T_SAN:-80} T_BENCH=${T_BENCH:-90}
bash dev/gpu_quantize.sh tests 2>&1 | tee "$OUT/gq_tests.log" | tail -25
bash dev/gpu_quantize.sh bench > "$OUT/gq_bench.log" 2>&1
grep -E "copy|^\| |geometric" "$OUT/gq_bench.log"
if [ "${T_LAB:-120}" != 0 ]; then  # T_LAB=0: no lab
  nvcc -std=c++20 -arch=sm_90a -O3 --fmad=false --expt-relaxed-constexpr -Isrc -Iinclude \
    dev/lean_lab.cu -o /tmp/lean_lab && timeout "${T_LAB:-120}" /tmp/lean_lab ${LAB_ITERS:-30} > "$OUT/lab.log" 2>&1
  echo "lab rc=$?"
  grep -E "^\| |copy|equal" "$OUT/lab.log" | grep -v "^| variant\|^|---" | head -60
fi
if [ -n "${T_NCU:-}" ]; then  # Nsight Compute on the lab's lean tensor kernel (MAE, first shape)
  LAB_MAE_ONLY=1 timeout "$T_NCU" ncu --clock-control none --kernel-name-base mangled \
    -k "regex:${NCU_KERNEL:-quantize_rows_lean_tensor_kernelILNS0_9QuantModeE0}" -s 2 -c 1 \
    --section SpeedOfLight --section WarpStateStats --section InstructionStats \
    --section SchedulerStats --section Occupancy --section LaunchStats --section SourceCounters \
    --metrics smsp__inst_executed.sum,smsp__sass_thread_inst_executed.sum,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,smsp__cycles_active.avg,sm__cycles_elapsed.avg.per_second \
    -o /tmp/ncu_lean -f /tmp/lean_lab 2 > "$OUT/ncu_run.log" 2>&1
  echo "ncu rc=$?"
  ncu --import /tmp/ncu_lean.ncu-rep > "$OUT/ncu_lean.txt" 2>&1
  ncu --import /tmp/ncu_lean.ncu-rep --page source --csv --print-source sass > /tmp/src_lean.csv 2>&1
  python3 dev/ncu_sass_summary.py /tmp/src_lean.csv > "$OUT/sass_lean.txt" 2>&1
  grep -E "Duration|Issue Slots Busy|Executed Ipc A|Warp Cycles Per Issued|Active Warps Per|Eligible Warps|No Eligible|Registers Per|pipe_|thread_inst|Stall|stall" "$OUT/ncu_lean.txt" | head -40
fi
bash dev/gpu_quantize.sh sanitize 2>&1 | tee "$OUT/gq_san.log" | grep -E "rc=|ERROR SUMMARY|RACECHECK SUMMARY"
