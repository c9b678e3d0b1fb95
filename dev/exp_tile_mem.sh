set -uo pipefail
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site
cmake -S . -B build-gpu -G Ninja -DF46_GTEST_SOURCE="$PWD/.deps/googletest" -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 -DCMAKE_CUDA20_EXTENSION_COMPILE_OPTION=-std=c++20 > /tmp/cm.log 2>&1 || tail /tmp/cm.log
ninja -C build-gpu -j16 bench_quantize > /tmp/b.log 2>&1 || grep -m3 -A5 error /tmp/b.log
M=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_read.sum,lts__t_requests_op_write.sum,gpu__time_duration.sum,smsp__inst_executed.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct,smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_drain_per_warp_active.pct,smsp__warp_issue_stalled_membar_per_warp_active.pct
for mode in "gradient RNE" "rowwise+col" "16x16"; do
  for s in 2 10; do
    echo "== $mode skip $s"
    timeout 60 ncu --clock-control none -k regex:quantize_tile_kernel -s $s -c 1 --metrics $M build-gpu/bench/bench_quantize 3 "$mode" 2>&1 | grep -E "dram__|lts__|gpu__time|inst_executed|l1tex__thr|stalled" 
  done
done
