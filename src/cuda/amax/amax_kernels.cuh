// NaN-propagating amax kernels (docs/numerics.md N9): an integer max over |x| bit patterns
// (for non-negative floats the unsigned order is the float order, NaN patterns lie above +Inf)
// with atomicMax on uint32, which is deterministic. Outputs for kTensor/kGroup are zeroed by
// the launcher first.
#pragma once

#include <cstdint>

#include "common/numerics.h"
#include "cuda/common/group_offsets.cuh"
#include "cuda/common/tensor_io.cuh"
#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

struct AmaxParams {
  const void* x = nullptr;  // (rows, cols)
  int64_t x_stride = 0;
  int64_t rows = 0, cols = 0;
  bool vec_load = false;
  ScopeKind scope = ScopeKind::kTensor;
  const int32_t* offsets = nullptr;
  int num_groups = 0;
  int64_t group_rows = 0;   // kGroup without offsets (rows kernel): groups of group_rows rows
  uint32_t* out = nullptr;  // float32 bits: (1), (rows) or (num_groups)
};

inline constexpr int kAmaxThreads = 256;
inline constexpr int kAmaxWarps = kAmaxThreads / 32;
inline constexpr int kRhtRowBlocksPerThread = 16;  // 16-row blocks one thread reduces (RHT amax)

// Flushes a warp's running max into out[target] (lane 0), skipping targets outside the groups.
__device__ __forceinline__ void flush_max(uint32_t* out, int target, int limit, uint32_t m) {
  if (target >= 0 && target < limit && m != 0u) atomicMax(out + target, m);
}

// One warp per row; each warp handles a contiguous range of rows so runs of rows in the same
// group (or the whole tensor) are combined before one atomic per run.
template <typename T>
__global__ void __launch_bounds__(kAmaxThreads) amax_rows_kernel(const AmaxParams p) {
  extern __shared__ int32_t s_offs[];
  if (p.scope == ScopeKind::kGroup && p.group_rows == 0)
    stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);
  const int lane = threadIdx.x & 31;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kAmaxWarps + (threadIdx.x >> 5);
  const int64_t num_warps = static_cast<int64_t>(gridDim.x) * kAmaxWarps;
  const int64_t r_begin = p.rows * warp / num_warps, r_end = p.rows * (warp + 1) / num_warps;
  using S = typename T::Storage;
  const int limit = p.scope == ScopeKind::kGroup ? p.num_groups : 1;
  int cur = -1;
  uint32_t cur_m = 0;
  for (int64_t r = r_begin; r < r_end; ++r) {
    const S* row = static_cast<const S*>(p.x) + r * p.x_stride;
    uint32_t m = 0;
    int64_t c = 0;
    if (p.vec_load) {
      for (c = lane * 16; c + 16 <= p.cols; c += 32 * 16) {
        float x[16];
        load16<T>(row + c, true, x);
#pragma unroll
        for (int k = 0; k < 16; ++k) m = max(m, num::abs_bits(x[k]));
      }
      c = (p.cols / 16) * 16;
    }
    for (int64_t k = c + lane; k < p.cols; k += 32)
      m = max(m, num::abs_bits(to_float(T{}, row[k])));
    m = __reduce_max_sync(0xFFFFFFFFu, m);
    if (lane != 0) continue;
    if (p.scope == ScopeKind::kRow) {
      p.out[r] = m;
      continue;
    }
    const int target = p.scope == ScopeKind::kTensor ? 0
                       : p.group_rows > 0            ? static_cast<int>(r / p.group_rows)
                                                     : group_of_row(s_offs, p.num_groups, r);
    if (target != cur) {
      flush_max(p.out, cur, limit, cur_m);
      cur = target;
      cur_m = 0;
    }
    cur_m = max(cur_m, m);
  }
  if (lane == 0) flush_max(p.out, cur, limit, cur_m);
}

// Amax after the RHT of each 16-row block of every column (N7; the columnwise RHT output's
// global amax). Thread (column, kRhtRowBlocksPerThread consecutive 16-row blocks); rows % 16 == 0.
template <typename T>
__global__ void __launch_bounds__(kAmaxThreads) amax_rht_columns_kernel(const AmaxParams p) {
  extern __shared__ int32_t s_offs[];
  if (p.scope == ScopeKind::kGroup) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kAmaxThreads + threadIdx.x;
  const int64_t rb0 = static_cast<int64_t>(blockIdx.y) * kRhtRowBlocksPerThread;
  const int64_t row_blocks = p.rows / 16;
  const int limit = p.scope == ScopeKind::kGroup ? p.num_groups : 1;
  using S = typename T::Storage;
  int cur = -1;
  uint32_t cur_m = 0;
  for (int64_t rb = rb0; rb < rb0 + kRhtRowBlocksPerThread && rb < row_blocks; ++rb) {
    uint32_t m = 0;
    if (col < p.cols) {
      float x[16], y[16];
      const S* base = static_cast<const S*>(p.x) + rb * 16 * p.x_stride + col;
#pragma unroll
      for (int k = 0; k < 16; ++k) x[k] = to_float(T{}, base[k * p.x_stride]);
      num::rht16(x, y);
#pragma unroll
      for (int k = 0; k < 16; ++k) m = max(m, num::abs_bits(y[k]));
    }
    // Uniform over the CTA: every thread has the same row block.
    const int target =
        p.scope == ScopeKind::kTensor ? 0 : group_of_row(s_offs, p.num_groups, rb * 16);
    if (target != cur) {
      const uint32_t w = __reduce_max_sync(0xFFFFFFFFu, cur_m);
      if ((threadIdx.x & 31) == 0) flush_max(p.out, cur, limit, w);
      cur = target;
      cur_m = 0;
    }
    cur_m = max(cur_m, m);
  }
  const uint32_t w = __reduce_max_sync(0xFFFFFFFFu, cur_m);
  if ((threadIdx.x & 31) == 0) flush_max(p.out, cur, limit, w);
}

}  // namespace f46::cuda
