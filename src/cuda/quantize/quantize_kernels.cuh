// Quantization kernels (docs/numerics.md N2-N7): the rowwise 1x16 kernel (one thread per
// 16-element block, linear over the tensor) and the tile kernel (a 64x64 tile of x per CTA,
// rowwise and/or columnwise output from one read of x, 1x16 or 16x16 blocks).
#pragma once

#include <cstdint>

#include "common/numerics.h"
#include "cuda/common/group_offsets.cuh"
#include "cuda/common/tensor_io.cuh"
#include "cuda/quantize/block_math.cuh"
#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

// Global amax of row `row` (N2): per tensor, per row, or the row's group (0 outside groups).
__device__ __forceinline__ float global_amax_of_row(const float* amax, ScopeKind scope,
                                                    const int32_t* s_offs, int num_groups,
                                                    int64_t row) {
  if (scope == ScopeKind::kTensor) return amax[0];
  if (scope == ScopeKind::kRow) return amax[row];
  const int g = group_of_row(s_offs, num_groups, row);
  return g < num_groups ? amax[g] : 0.0f;
}

__device__ __forceinline__ ErrorConsts error_consts(float bound) {
  const float denom = num::mul(6.0f, bound);
  return ErrorConsts{bound, denom, num::div(1.0f, denom)};
}

__device__ __forceinline__ void store_block(uint8_t* codes, uint8_t* scale, const BlockCodes& b) {
  *reinterpret_cast<uint64_t*>(codes) = b.codes;  // 8-byte aligned: (cols/2) % 8 == 0
  *scale = b.scale;
}

// Block index of thread slot k: consecutive threads take consecutive blocks (coalesced).
__device__ __forceinline__ void row_block_of(int64_t i, int64_t blocks_per_row, bool small,
                                             int64_t& row, int64_t& col) {
  row = small
            ? static_cast<int64_t>(static_cast<uint32_t>(i) / static_cast<uint32_t>(blocks_per_row))
            : i / blocks_per_row;
  col = (i - row * blocks_per_row) * 16;
}

template <typename T, QuantMode M>
__global__ void __launch_bounds__(kRowThreads) quantize_rows_1x16_kernel(const QuantizeParams p) {
  extern __shared__ int32_t s_offs[];
  if (p.scope == ScopeKind::kGroup) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);
  const int64_t blocks_per_row = p.cols / 16;
  const int64_t total = p.rows * blocks_per_row;
  const bool small = total <= 0xFFFFFFFFll;  // 32-bit division where it fits (uniform)
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * kRowThreads * kRowBlocksPerThread + threadIdx.x;
  using S = typename T::Storage;
  const S* x_base = static_cast<const S*>(p.x);

  Raw16<T> raw[kRowBlocksPerThread];  // all loads in flight before the arithmetic
  if (p.vec_load) {
#pragma unroll
    for (int k = 0; k < kRowBlocksPerThread; ++k) {
      const int64_t i = first + k * kRowThreads;
      if (i < total) {
        int64_t row, col;
        row_block_of(i, blocks_per_row, small, row, col);
        load_raw16<T>(x_base + row * p.x_stride + col, raw[k]);
      }
    }
  }
  const ErrorConsts consts = error_consts(p.bound);
  GlobalScale gs = global_scale(0.0f, p.bound);
#pragma unroll
  for (int k = 0; k < kRowBlocksPerThread; ++k) {
    const int64_t i = first + k * kRowThreads;
    if (i >= total) return;
    int64_t row, col;
    row_block_of(i, blocks_per_row, small, row, col);
    float x[16];  // one 1x16 block of row `row`
    if (p.vec_load)
      unpack16<T>(raw[k], x);
    else
      load16<T>(x_base + row * p.x_stride + col, false, x);
    if (p.rht_rowwise) {
      float y[16];
      num::rht16(x, y);  // N7
#pragma unroll
      for (int j = 0; j < 16; ++j) x[j] = y[j];
    }
    update_global_scale(gs, global_amax_of_row(p.amax, p.scope, s_offs, p.num_groups, row),
                        p.bound);
    const BlockCodes b = quantize_block<M, false>(x, gs, consts, p.stochastic, p.seed, p.offset,
                                                  row * p.cols + col, 0u);
    store_block(p.codes + row * p.codes_stride + col / 2,
                p.scales + row * p.scales_stride + col / 16, b);
  }
}

// kTilesPerCta vertically stacked 64x64 tiles of x per CTA, all loads issued first. Per tile,
// phase 1: thread (r = tid % 64, cb = tid / 64) takes the 1x16 block (row r, columns
// 16cb..16cb+16), quantizes it for the rowwise output and stores it in shared memory. Phase 2:
// thread (c = tid % 64, rb = tid / 64) reads the 16 values of column c, rows 16rb..16rb+16 (a
// 1x16 block of x^T) and quantizes them for the columnwise output. In both phases the 16 lanes
// of a half-warp hold 16 consecutive rows of the output being made: one 16x16 tile when
// kTile16. Needs rows % 16 == 0 and cols % 16 == 0, so validity is uniform per half-warp.
template <typename T, QuantMode M, bool kTile16>
__global__ void __launch_bounds__(kTileThreads) quantize_tile_kernel(const QuantizeParams p) {
  static_assert(kTileRows == 64 && kTileCols == 64 && kTileThreads == 256,
                "thread mapping assumes 64x64 tiles of 256 threads");
  __shared__ float tile[kTileRows][kTileCols + 1];  // +1: conflict-free column reads
  extern __shared__ int32_t s_offs[];
  if (p.scope == ScopeKind::kGroup) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);

  const int tid = threadIdx.x;
  const unsigned half_mask = 0xFFFFu << (tid & 16);
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTileCols;
  const ErrorConsts consts = error_consts(p.bound);
  using S = typename T::Storage;
  const S* x_base = static_cast<const S*>(p.x);
  const int r = tid % kTileRows, cb = tid / kTileRows;  // phase 1 mapping
  GlobalScale gs = global_scale(0.0f, p.bound), gs_t = gs;
  const int64_t col = col0 + cb * 16;

  Raw16<T> raw[kTilesPerCta];
#pragma unroll
  for (int t = 0; t < kTilesPerCta; ++t) {
    const int64_t row = (static_cast<int64_t>(blockIdx.y) * kTilesPerCta + t) * kTileRows + r;
    if (p.vec_load && row < p.rows && col < p.cols)
      load_raw16<T>(x_base + row * p.x_stride + col, raw[t]);
  }

#pragma unroll
  for (int t = 0; t < kTilesPerCta; ++t) {
    const int64_t row0 = (static_cast<int64_t>(blockIdx.y) * kTilesPerCta + t) * kTileRows;
    if (row0 >= p.rows) break;  // uniform over the CTA
    {                           // phase 1: rowwise
      const int64_t row = row0 + r;
      const bool valid = row < p.rows && col < p.cols;
      float x[16];
      if (valid) {
        if (p.vec_load)
          unpack16<T>(raw[t], x);
        else
          load16<T>(x_base + row * p.x_stride + col, false, x);
      } else {
#pragma unroll
        for (int k = 0; k < 16; ++k) x[k] = 0.0f;
      }
      if (p.columnwise) {
        if (t > 0) __syncthreads();  // the previous tile's phase 2 is done with `tile`
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
        const BlockCodes b = quantize_block<M, kTile16>(x, gs, consts, p.stochastic, p.seed,
                                                        p.offset, row * p.cols + col, half_mask);
        store_block(p.codes + row * p.codes_stride + col / 2,
                    p.scales + row * p.scales_stride + col / 16, b);
      }
    }
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
        const float* amax_t = p.amax_t != nullptr ? p.amax_t : p.amax;
        update_global_scale(gs_t, global_amax_of_row(amax_t, p.scope, s_offs, p.num_groups, row),
                            p.bound);
        const BlockCodes b =
            quantize_block<M, kTile16>(x, gs_t, consts, p.stochastic, p.seed, p.offset,
                                       p.rows * p.cols + ccol * p.rows + row, half_mask);
        store_block(p.codes_t + ccol * p.codes_t_stride + row / 2,
                    p.scales_t + ccol * p.scales_t_stride + row / 16, b);
      }
    }
  }
}

}  // namespace f46::cuda
