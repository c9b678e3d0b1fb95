// Tile quantization kernel (docs/numerics.md N2-N7): a 64x64 tile of x per CTA, rowwise and/or
// columnwise output from one read of x, 1x16 or 16x16 blocks.
#pragma once

#include <cstdint>

#include "common/numerics.h"
#include "cuda/common/group_offsets.cuh"
#include "cuda/common/tensor_io.cuh"
#include "cuda/quantize/quantize_block.cuh"
#include "cuda/quantize/quantize_kernel_parts.cuh"
#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

// Tile kernel, persistent: the CTA takes 64x64 tiles of x (tile index blockIdx.x + k gridDim.x,
// row-band major), with kStages - 1 future tiles in flight through cp.async (16-bit inputs;
// fp32 loads its tile when it needs it). Per tile, phase 1: thread (r = tid % 64,
// cb = tid / 64) takes the 1x16 block (row r, columns 16cb..16cb+16) (the block it copied),
// quantizes it for the rowwise output and stores it in shared memory. Phase 2: thread
// (c = tid % 64, rb = tid / 64) reads the 16 values of column c, rows 16rb..16rb+16 (a 1x16
// block of x^T) and quantizes them for the columnwise output. In both phases the 16 lanes of a
// half-warp hold 16 consecutive rows of the output being made: one 16x16 tile when kTile16.
// Needs rows % 16 == 0 and cols % 16 == 0, so validity is uniform per half-warp.
template <typename T, QuantMode M, bool kTile16>
__global__ void __launch_bounds__(kTileThreads, 2) quantize_tile_kernel(const QuantizeParams p) {
  static_assert(kTileRows == 64 && kTileCols == 64 && kTileThreads == 256,
                "thread mapping assumes 64x64 tiles of 256 threads");
  using S = typename T::Storage;
  constexpr int kVecs = Raw16<T>::kVecs;
  constexpr int kStages = sizeof(S) == 2 ? 3 : 1;
  __shared__ uint4 ring[kStages][kVecs][kTileThreads];  // [stage][vector][thread]
  __shared__ float tile[kTileRows][kTileCols + 1];      // +1: conflict-free column reads
  __shared__ float2 s_tab[256], s_tab_t[256];           // scale_entry of the first row's amaxes
  extern __shared__ int32_t s_offs[];
  if (p.scope == ScopeKind::kGroup) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);

  const int tid = threadIdx.x;
  const unsigned half_mask = 0xFFFFu << (tid & 16);
  const int64_t tiles_x = (p.cols + kTileCols - 1) / kTileCols;
  const int64_t num_tiles = tiles_x * ((p.rows + kTileRows - 1) / kTileRows);
  const ErrorConsts consts = error_consts(p.bound);
  const S* x_base = static_cast<const S*>(p.x);
  const int r = tid % kTileRows, cb = tid / kTileRows;  // phase 1 mapping

  // Tiles are issued and consumed in order it0, it0 + step, ...: two cursors (tile row, tile
  // column) follow them without divisions.
  const int64_t it0 = blockIdx.x, step = gridDim.x;
  const CursorStep tstep{static_cast<int32_t>(step / tiles_x), static_cast<int32_t>(step % tiles_x),
                         static_cast<int32_t>(tiles_x)};
  BlockCursor pre{static_cast<int32_t>(it0 / tiles_x), static_cast<int32_t>(it0 % tiles_x)},
      cur = pre;
  int64_t pre_it = it0;
  auto issue = [&](int stage) {  // one commit group per tile, empty past the end
    if (p.vec_load && pre_it < num_tiles) {
      const int64_t row = static_cast<int64_t>(pre.row) * kTileRows + r,
                    col = static_cast<int64_t>(pre.col) * kTileCols + cb * 16;
      if (row < p.rows && col < p.cols) {
        const uint4* src = reinterpret_cast<const uint4*>(x_base + row * p.x_stride + col);
#pragma unroll
        for (int v = 0; v < kVecs; ++v) cp_async16(&ring[stage][v][tid], src + v);
      }
    }
    cp_async_commit();
    pre_it += step;
    advance(pre, tstep);
  };
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) issue(s);

  const int64_t cta_row0 = static_cast<int64_t>(cur.row) * kTileRows;
  const float* amax_t = p.amax_t != nullptr ? p.amax_t : p.amax;
  const GlobalScale g_tab = fill_scale_table(
      s_tab, global_amax_of_row(p.amax, p.scope, s_offs, p.num_groups, cta_row0), consts, p.bound);
  const GlobalScale g_tab_t =
      fill_scale_table(s_tab_t, global_amax_of_row(amax_t, p.scope, s_offs, p.num_groups, cta_row0),
                       consts, p.bound);
  GlobalScale gs = g_tab, gs_t = g_tab_t;

  int stage = 0;
  for (int64_t it = it0; it < num_tiles; it += step) {  // uniform over the CTA
    issue(stage == 0 ? kStages - 1 : stage - 1);        // tile it + (kStages - 1) step
    cp_async_wait<kStages - 1>();                       // this tile's group has landed
    const int64_t row0 = static_cast<int64_t>(cur.row) * kTileRows,
                  col0 = static_cast<int64_t>(cur.col) * kTileCols;
    advance(cur, tstep);
    {  // phase 1: rowwise
      const int64_t row = row0 + r, col = col0 + cb * 16;
      const bool valid = row < p.rows && col < p.cols;
      float x[16];
      if (valid) {
        if (p.vec_load) {
          Raw16<T> raw;
#pragma unroll
          for (int v = 0; v < kVecs; ++v) raw.w[v] = ring[stage][v][tid];
          unpack16<T>(raw, x);
        } else {
          load16<T>(x_base + row * p.x_stride + col, false, x);
        }
      } else {
#pragma unroll
        for (int k = 0; k < 16; ++k) x[k] = 0.0f;
      }
      if (p.columnwise) {
        if (it != it0) __syncthreads();  // the previous tile's phase 2 is done with `tile`
#pragma unroll
        for (int k = 0; k < 16; ++k) tile[r][cb * 16 + k] = x[k];
      }
      if (p.rowwise && valid) {
        if (p.rht_rowwise) {
          float y[16];
          num::rht16(x, y);
#pragma unroll
          for (int k = 0; k < 16; ++k) x[k] = y[k];
        }
        update_global_scale(gs, global_amax_of_row(p.amax, p.scope, s_offs, p.num_groups, row),
                            p.bound);
        const TableRef tab{s_tab, num::bits(gs.amax) == num::bits(g_tab.amax)};
        const BlockCodes b = quantize_block<M, kTile16>(
            x, gs, consts, p.stochastic, p.seed, p.offset, row * p.cols + col, half_mask, tab);
        store_block(p.codes + row * p.codes_stride + col / 2,
                    p.scales + row * p.scales_stride + col / 16, b);
      }
    }
    stage = stage == kStages - 1 ? 0 : stage + 1;
    if (!p.columnwise) continue;
    __syncthreads();
    {  // phase 2: columnwise = rowwise quantization of x^T (cols, rows)
      const int c = tid % kTileCols, rb = tid / kTileCols;
      const int64_t ccol = col0 + c, row = row0 + rb * 16;
      if (ccol < p.cols && row < p.rows) {  // uniform over each half-warp
        float x[16];
#pragma unroll
        for (int k = 0; k < 16; ++k) x[k] = tile[rb * 16 + k][c];
        if (p.rht_columnwise) {
          float y[16];
          num::rht16(x, y);
#pragma unroll
          for (int k = 0; k < 16; ++k) x[k] = y[k];
        }
        // The block's 16 rows lie in one group (offsets % 16 == 0); its first row decides.
        update_global_scale(gs_t, global_amax_of_row(amax_t, p.scope, s_offs, p.num_groups, row),
                            p.bound);
        const TableRef tab{s_tab_t, num::bits(gs_t.amax) == num::bits(g_tab_t.amax)};
        const BlockCodes b =
            quantize_block<M, kTile16>(x, gs_t, consts, p.stochastic, p.seed, p.offset,
                                       p.rows * p.cols + ccol * p.rows + row, half_mask, tab);
        store_block(p.codes_t + ccol * p.codes_t_stride + row / 2,
                    p.scales_t + ccol * p.scales_t_stride + row / 16, b);
      }
    }
  }
  cp_async_wait<0>();
}

}  // namespace f46::cuda
