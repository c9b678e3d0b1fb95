#!/usr/bin/env bash
# Nsight Compute of one lab kernel (dev/lean_lab.cu, a prebuilt binary): key metrics and the
# warp stall reasons per issued instruction, printed.
#   dev/ncu_lab.sh BINARY KERNEL_REGEX [lab env assignments...]
set -uo pipefail
BIN=$1 K=$2
shift 2
env "$@" timeout 120 ncu --clock-control none --kernel-name-base mangled -k "regex:$K" -s 1 -c 1 \
  --metrics gpu__time_duration.sum,smsp__sass_thread_inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active,smsp__warps_eligible.avg.per_cycle_active,launch__registers_per_thread,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__t_sector_hit_rate.pct,"regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
  "$BIN" 2 2>&1 | grep -E "^\s+[a-z_]+__|==PROF==|Error" | awk '$NF != "0" && $NF != "0.00"'
