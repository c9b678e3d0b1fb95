// The lean columnwise-only group kernel: bf16 input, 1x16 blocks of x^T, a per-group global amax
// (the columnwise one where given), round to nearest, no RHT, cols % 64 == 0, optionally virtual
// token-group padding (N12): the wgrad operands of the grouped GEMM (the forward's tokens and the
// backward's gradients), which the tile kernel quantized at 0.2-0.35 of copy in the layer. Same
// arithmetic and results as the tile kernel: every block goes through lean_block
// (quantize_lean.cuh), as in the row+col kernel (quantize_rowcol.cuh), whose column reads, run
// staging and run stores this kernel shares.
//
// Work: the quantized rows (padded, with virtual padding) cut into bands of 16 and units of 16
// rows x 64 columns; a warp takes runs of kRowColRun units down one 64-column strip, the runs
// taken round robin by the warps. A band lies in one group (group offsets % 16 == 0), whose amax
// sets the band's global scale and the warp's scale table (refilled, warp-uniform, only when
// the amax changes); with virtual padding a band's rows are consecutive source rows of its group
// followed by zero rows (the group's padding), so one group search per band gives every row.
// Each lane loads four 16-byte chunks of the next unit into registers while the current one is
// quantized; lane l then reads the 16 rows of columns 2l and 2l + 1 back from the warp's shared
// tile (two blocks of x^T), and the run's codes and scales go out once per run, 32 contiguous
// code bytes and 4 scale bytes per column.
// The CUDA tests compare it bitwise with the CPU reference (tests/cpp/cuda/test_cuda_quantize*
// .cpp: the bf16 group-scope columnwise-only cases with cols % 64 == 0, round to nearest and no
// RHT are dispatched here, CudaQuantizeVirtualPad's among them).
#pragma once

#include <cstdint>

#include "cuda/common/group_offsets.cuh"
#include "cuda/quantize/quantize_lean.cuh"
#include "cuda/quantize/quantize_rowcol.cuh"

namespace f46::cuda {

// Host: bf16 x with 16-byte aligned rows, p.scope == kGroup, columnwise only, rows % 16 == 0,
// cols % 64 == 0, codes_t 8-byte aligned with stride % 8 == 0, no SR or RHT; dynamic shared
// memory: the staged group offsets (and the source offsets after them with virtual padding).
template <QuantMode M, int kMinCtas = kRowColMinCtas>
__global__ void __launch_bounds__(kLeanThreads, kMinCtas)
    quantize_cols_group_kernel(const QuantizeParams p) {
  static_assert(kLeanThreads % 32 == 0 && kRowColRun == 4,
                "whole warps; a run's 4 units fill a column's 32-byte code sector");
  __shared__ LeanEntry s_tab[kRcWarps][256];  // each warp's table, for its band's amax
  __shared__ __align__(16) uint8_t s_unit[kRcWarps][16 * kRcRowBytes];
  __shared__ __align__(16) uint2 s_codes_t[kRcWarps][kRowColRun * kRcUnitCols];
  __shared__ uint32_t s_scales_t[kRcWarps][kRcUnitCols];
  extern __shared__ int32_t s_offs[];

  // (the CTA's only barriers, inside the staging: warps without work may leave below)
  stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);
  int32_t* const s_src = p.src_offsets != nullptr ? s_offs + p.num_groups : nullptr;
  if (s_src != nullptr) stage_clamped_offsets(p.src_offsets, p.num_groups, p.src_rows, s_src);

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const ErrorConsts consts = error_consts(p.bound);
  const float* amax_t = p.amax_t != nullptr ? p.amax_t : p.amax;
  const int64_t bands = p.rows / 16, ucols = p.cols / kRcUnitCols;
  const int64_t n_runs = (bands + kRowColRun - 1) / kRowColRun * ucols;
  const int64_t warps = int64_t{gridDim.x} * kRcWarps;  // the warps take the runs round robin
  const int64_t gw = int64_t{blockIdx.x} * kRcWarps + warp;
  if (gw >= n_runs) return;
  LeanEntry* const tab = s_tab[warp];
  uint32_t tab_bits = 0;
  bool tab_ready = false;
  GlobalScale gs{};
  rc_walk(
      p, gw, n_runs, warps, lane, s_unit[warp], s_codes_t[warp], s_scales_t[warp],
      [&](int64_t b) {  // without virtual padding every row is x's (past the last group too)
        return s_src != nullptr ? padded_band_rows(s_offs, s_src, p.num_groups, b)
                                : BandRows{16 * b, 16};
      },
      [&](int64_t row0, int) {  // the band's group amax (uniform); the table refilled on change
        const int g = group_of_row(s_offs, p.num_groups, row0);
        const float amax = g < p.num_groups ? amax_t[g] : 0.0f;
        if (!tab_ready || num::bits(amax) != tab_bits) {
          gs = global_scale(amax, p.bound);
#pragma unroll 1
          for (int s = lane; s < 256; s += 32) tab[s] = lean_entry<M>(s, gs, consts);
          tab_bits = num::bits(amax);
          tab_ready = true;
        }
        return [&](const uint32_t(&w)[8], bool) { return lean_block<M>(w, tab, gs, consts); };
      });
}

}  // namespace f46::cuda
