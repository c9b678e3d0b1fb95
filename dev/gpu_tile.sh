#!/usr/bin/env bash
# One device round for the tile quantization kernel: build bench_quantize, Nsight Compute of the
# tile kernel in two modes (16x16 MAE, gradient RNE row+col; first shape) with a per-opcode
# summary of the executed SASS, then the same modes with the block and 16-byte code stores made
# conditional on a never-true runtime test (how much of the time the stores cost; the wide scale
# words of the whole-unit path stay). Logs in /tmp/tile-out,
# summaries copied to $OUT.   OUT=... dev/gpu_tile.sh
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${OUT:-$PWD/gpu-out}; mkdir -p "$DEST"
export OUT=/tmp/tile-out; mkdir -p "$OUT"
for mode in 16x16 "gradient RNE"; do
  tag=${mode// /_}
  BENCH_ONLY="$mode" F46_GPU_BUILD=build-gpu T_NCU=80 timeout 200 dev/gpu_profile.sh quantize_tile_kernel
  mv "$OUT/ncu_quantize_tile_kernel.txt" "$OUT/ncu_$tag.txt"
  mv "$OUT/sass_quantize_tile_kernel.txt" "$OUT/sass_$tag.txt"
  echo "== $mode"
  grep -E "Duration|Registers Per|Executed Ipc A|Issue Slots Busy|thread_inst|Memory Through|DRAM Through|L2 Cache Through|Achieved Occ|Theoretical Occ|Block Limit|Stall|Warp Cycles Per Issued|No Eligible|Excessive|excessive|uncoalesced|shared" \
    "$OUT/ncu_$tag.txt" | head -40
  head -25 "$OUT/sass_$tag.txt"
done
sed -i 's/^\( *\)\(store_block\|store16\)(/\1if (p.codes == p.codes_t) \2(/' src/cuda/quantize/quantize_tile_kernel.cuh
grep -c "p.codes == p.codes_t" src/cuda/quantize/quantize_tile_kernel.cuh
ninja -C build-gpu -j16 bench_quantize > "$OUT/build2.log" 2>&1 || grep -m3 -A10 error "$OUT/build2.log"
echo "== no stores"
for mode in 16x16 "gradient RNE" "rowwise+col"; do build-gpu/bench/bench_quantize 20 "$mode" | grep "|" | grep -v "mode"; done
git checkout src/cuda/quantize/quantize_tile_kernel.cuh
cp "$OUT"/ncu_*.txt "$OUT"/sass_*.txt "$DEST"/ 2>/dev/null
