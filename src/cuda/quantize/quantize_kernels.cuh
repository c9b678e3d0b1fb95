// Quantization kernels (docs/numerics.md N2-N7): the rowwise 1x16 kernel (one thread per
// 16-element block, linear over the tensor) and the tile kernel (a 64x64 tile of x per CTA,
// rowwise and/or columnwise output from one read of x, 1x16 or 16x16 blocks).
#pragma once

#include <cstdint>

#include "common/numerics.h"
#include "cuda/common/group_offsets.cuh"
#include "cuda/common/tensor_io.cuh"
#include "cuda/quantize/quantize_block.cuh"
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

// Fills tab[0..256) with scale_entry for the global amax `a` (every thread of the CTA calls it;
// it ends with a barrier). Returns that amax's GlobalScale.
__device__ __forceinline__ GlobalScale fill_scale_table(float2* tab, float a, const ErrorConsts& c,
                                                        float bound) {
  const GlobalScale g = global_scale(a, bound);
  for (int s = threadIdx.x; s < 256; s += blockDim.x) tab[s] = scale_entry(s, g, c);
  __syncthreads();
  return g;
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

// cp.async of 16 bytes global -> shared (L2 only), and its group commit / wait.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(a), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Rowwise 1x16 kernel, persistent: thread t of CTA c takes the blocks t + 256 c + k * stride
// (consecutive threads, consecutive blocks: coalesced). With 16-byte loads allowed, each thread
// keeps kStages - 1 future blocks in flight through cp.async into its own shared-memory ring
// (loads in flight hold no registers; a thread reads only what it copied, so no barrier).
template <typename T, QuantMode M>
__global__ void __launch_bounds__(kRowThreads, 3)
    quantize_rows_1x16_kernel(const QuantizeParams p) {
  using S = typename T::Storage;
  constexpr int kVecs = Raw16<T>::kVecs;                 // 16-byte vectors per block
  constexpr int kStages = kRowRingBytes / (16 * kVecs);  // 4 (bf16/fp16) or 2 (fp32)
  static_assert(kStages >= 2, "the ring needs a slot being read and one being filled");
  __shared__ uint4 ring[kStages][kVecs][kRowThreads];  // [stage][vector][thread]: no conflicts
  __shared__ float2 s_tab[256];                        // scale_entry of the CTA's first row's amax
  extern __shared__ int32_t s_offs[];
  if (p.scope == ScopeKind::kGroup) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);
  const int64_t blocks_per_row = p.cols / 16;
  const int64_t total = p.rows * blocks_per_row;
  const bool small = total <= 0xFFFFFFFFll;  // 32-bit division where it fits (uniform)
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kRowThreads;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kRowThreads + threadIdx.x;
  const S* x_base = static_cast<const S*>(p.x);
  const int tid = threadIdx.x;

  auto issue = [&](int64_t i, int stage) {  // one commit group per block, empty past the end
    if (p.vec_load && i < total) {
      int64_t row, col;
      row_block_of(i, blocks_per_row, small, row, col);
      const uint4* src = reinterpret_cast<const uint4*>(x_base + row * p.x_stride + col);
#pragma unroll
      for (int v = 0; v < kVecs; ++v) cp_async16(&ring[stage][v][tid], src + v);
    }
    cp_async_commit();
  };
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) issue(first + s * stride, s);

  const ErrorConsts consts = error_consts(p.bound);
  const int64_t cta_row = (static_cast<int64_t>(blockIdx.x) * kRowThreads) / blocks_per_row;
  const GlobalScale g_tab = fill_scale_table(
      s_tab, global_amax_of_row(p.amax, p.scope, s_offs, p.num_groups, cta_row), consts, p.bound);
  GlobalScale gs = g_tab;
  int stage = 0;
  for (int64_t i = first; i < total; i += stride) {
    issue(i + (kStages - 1) * stride, stage == 0 ? kStages - 1 : stage - 1);
    cp_async_wait<kStages - 1>();  // block i's group has landed
    int64_t row, col;
    row_block_of(i, blocks_per_row, small, row, col);
    float x[16];  // one 1x16 block of row `row`
    if (p.vec_load) {
      Raw16<T> raw;
#pragma unroll
      for (int v = 0; v < kVecs; ++v) raw.w[v] = ring[stage][v][tid];
      unpack16<T>(raw, x);
    } else {
      load16<T>(x_base + row * p.x_stride + col, false, x);
    }
    stage = stage == kStages - 1 ? 0 : stage + 1;
    if (p.rht_rowwise) {
      float y[16];
      num::rht16(x, y);  // N7
#pragma unroll
      for (int j = 0; j < 16; ++j) x[j] = y[j];
    }
    update_global_scale(gs, global_amax_of_row(p.amax, p.scope, s_offs, p.num_groups, row),
                        p.bound);
    const float2* tab = num::bits(gs.amax) == num::bits(g_tab.amax) ? s_tab : nullptr;
    const BlockCodes b = quantize_block<M, false>(x, gs, consts, p.stochastic, p.seed, p.offset,
                                                  row * p.cols + col, 0u, tab);
    store_block(p.codes + row * p.codes_stride + col / 2,
                p.scales + row * p.scales_stride + col / 16, b);
  }
  cp_async_wait<0>();
}

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

  auto issue = [&](int64_t it, int stage) {  // one commit group per tile, empty past the end
    if (p.vec_load && it < num_tiles) {
      const int64_t row = (it / tiles_x) * kTileRows + r,
                    col = (it % tiles_x) * kTileCols + cb * 16;
      if (row < p.rows && col < p.cols) {
        const uint4* src = reinterpret_cast<const uint4*>(x_base + row * p.x_stride + col);
#pragma unroll
        for (int v = 0; v < kVecs; ++v) cp_async16(&ring[stage][v][tid], src + v);
      }
    }
    cp_async_commit();
  };
  const int64_t it0 = blockIdx.x, step = gridDim.x;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) issue(it0 + s * step, s);

  const int64_t cta_row0 = (it0 / tiles_x) * kTileRows;
  const float* amax_t = p.amax_t != nullptr ? p.amax_t : p.amax;
  const GlobalScale g_tab = fill_scale_table(
      s_tab, global_amax_of_row(p.amax, p.scope, s_offs, p.num_groups, cta_row0), consts, p.bound);
  const GlobalScale g_tab_t =
      fill_scale_table(s_tab_t, global_amax_of_row(amax_t, p.scope, s_offs, p.num_groups, cta_row0),
                       consts, p.bound);
  GlobalScale gs = g_tab, gs_t = g_tab_t;

  int stage = 0;
  for (int64_t it = it0; it < num_tiles; it += step) {  // uniform over the CTA
    issue(it + (kStages - 1) * step, stage == 0 ? kStages - 1 : stage - 1);
    cp_async_wait<kStages - 1>();  // this tile's group has landed
    const int64_t row0 = (it / tiles_x) * kTileRows, col0 = (it % tiles_x) * kTileCols;
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
        const float2* tab = num::bits(gs.amax) == num::bits(g_tab.amax) ? s_tab : nullptr;
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
        const float2* tab = num::bits(gs_t.amax) == num::bits(g_tab_t.amax) ? s_tab_t : nullptr;
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
