// Token-group padding kernels (docs/numerics.md N12). Group g of x (rows [o[g-1], o[g]))
// occupies padded rows [P[g-1], P[g-1] + size_g), followed by zero rows up to
// P[g] = P[g-1] + round_up(size_g, alignment). Offsets are read only on the device, clamped.
#pragma once

#include <cstdint>

#include "cuda/common/group_offsets.cuh"

namespace f46::cuda {

struct PadParams {
  const uint8_t* src = nullptr;  // rows of row_bytes bytes, src_stride bytes apart
  int64_t src_stride = 0;
  int64_t src_rows = 0;
  uint8_t* dst = nullptr;
  int64_t dst_stride = 0;
  int64_t dst_rows = 0;
  int64_t row_bytes = 0;
  const int32_t* offsets = nullptr;         // (E) ends of the groups of the unpadded rows
  const int32_t* padded_offsets = nullptr;  // (E) unpad: ends of the padded groups (input)
  int32_t* padded_offsets_out = nullptr;    // (E) pad: written by CTA 0
  int num_groups = 0;
  int64_t alignment = 1;
  int64_t unpadded_rows = 0;  // M, the row count the offsets refer to
};

inline constexpr int kPadThreads = 256;
inline constexpr int kPadWarps = kPadThreads / 32;

// s_pad[g] = P[g] from the clamped offsets s_offs: warp 0, inclusive sum-scan in int64 then
// clamped to int32 range (the caller's buffer has padded_rows(M, E, a) rows).
__device__ __forceinline__ void stage_padded_offsets(const int32_t* s_offs, int num_groups,
                                                     int64_t alignment, int64_t* s_pad) {
  if (threadIdx.x < 32) {
    const unsigned lane = threadIdx.x;
    int64_t carry = 0;
    for (int base = 0; base < num_groups; base += 32) {
      const int g = base + static_cast<int>(lane);
      int64_t v = 0;
      if (g < num_groups) {
        const int64_t size = s_offs[g] - (g > 0 ? s_offs[g - 1] : 0);
        v = (size + alignment - 1) / alignment * alignment;
      }
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int64_t o = __shfl_up_sync(0xFFFFFFFFu, v, d);
        if (lane >= static_cast<unsigned>(d)) v += o;
      }
      v += carry;
      if (g < num_groups) s_pad[g] = v;
      carry = __shfl_sync(0xFFFFFFFFu, v, 31);
    }
  }
  __syncthreads();
}

// Copies row_bytes bytes with W-byte words (W divides row_bytes and both row addresses), or
// writes zeros when src is null. One warp per row.
template <typename W>
__device__ __forceinline__ void copy_row(const uint8_t* src, uint8_t* dst, int64_t row_bytes,
                                         int lane) {
  const int64_t n = row_bytes / static_cast<int64_t>(sizeof(W));
  W* d = reinterpret_cast<W*>(dst);
  if (src == nullptr) {
    const W z{};
    for (int64_t k = lane; k < n; k += 32) d[k] = z;
  } else {
    const W* s = reinterpret_cast<const W*>(src);
    for (int64_t k = lane; k < n; k += 32) d[k] = s[k];
  }
}

// kPad: destination row p (padded) takes source row o[g-1] + (p - P[g-1]) when that is inside
// group g, else zeros. !kPad: destination row m (unpadded) takes padded row P[g-1] + (m -
// o[g-1]), zeros past the last group.
template <typename W, bool kPad>
__global__ void __launch_bounds__(kPadThreads) pad_rows_kernel(const PadParams p) {
  extern __shared__ int64_t s_mem[];
  int64_t* s_pad = s_mem;  // (E) int64 padded ends (pad) or (E) int32 clamped padded_offsets
  int32_t* s_offs = reinterpret_cast<int32_t*>(s_mem + p.num_groups);
  stage_clamped_offsets(p.offsets, p.num_groups, p.unpadded_rows, s_offs);
  if (kPad) {
    stage_padded_offsets(s_offs, p.num_groups, p.alignment, s_pad);
    if (blockIdx.x == 0)
      for (int g = threadIdx.x; g < p.num_groups; g += kPadThreads)
        p.padded_offsets_out[g] = static_cast<int32_t>(s_pad[g]);
  } else {
    // The given padded offsets, clamped like the others into [previous, src_rows].
    int32_t* s_poffs = reinterpret_cast<int32_t*>(s_pad);
    stage_clamped_offsets(p.padded_offsets, p.num_groups, p.src_rows, s_poffs);
  }
  const int lane = threadIdx.x & 31;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kPadWarps + (threadIdx.x >> 5);
  const int64_t num_warps = static_cast<int64_t>(gridDim.x) * kPadWarps;
  const int32_t* s_poffs32 = reinterpret_cast<const int32_t*>(s_pad);
  for (int64_t row = warp; row < p.dst_rows; row += num_warps) {
    const uint8_t* src = nullptr;
    if (kPad) {
      // group g: first g with P[g] > row
      int lo = 0, hi = p.num_groups;
      while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (s_pad[mid] > row)
          hi = mid;
        else
          lo = mid + 1;
      }
      if (lo < p.num_groups) {
        const int64_t start = lo > 0 ? s_pad[lo - 1] : 0;
        const int64_t o_prev = lo > 0 ? s_offs[lo - 1] : 0;
        const int64_t local = row - start, size = s_offs[lo] - o_prev;
        if (local < size && o_prev + local < p.src_rows)
          src = p.src + (o_prev + local) * p.src_stride;
      }
    } else {
      const int g = group_of_row(s_offs, p.num_groups, row);
      if (g < p.num_groups) {
        const int64_t local = row - (g > 0 ? s_offs[g - 1] : 0);
        const int64_t pstart = g > 0 ? s_poffs32[g - 1] : 0;
        if (pstart + local < s_poffs32[g]) src = p.src + (pstart + local) * p.src_stride;
      }
    }
    copy_row<W>(src, p.dst + row * p.dst_stride, p.row_bytes, lane);
  }
}

// zero_rows_past_groups: rows [end, dst_rows) of dst set to zero in W-byte words, end = the
// last clamped offset (the same rows as the GEMMs' "outside every group"). A thread per word,
// grid-stride: with end == dst_rows each CTA only stages the offsets.
template <typename W>
__global__ void __launch_bounds__(kPadThreads) zero_rows_past_kernel(const PadParams p) {
  extern __shared__ int64_t s_mem[];
  int32_t* s_offs = reinterpret_cast<int32_t*>(s_mem);
  stage_clamped_offsets(p.offsets, p.num_groups, p.dst_rows, s_offs);
  const int64_t end = s_offs[p.num_groups - 1];
  const int64_t words = p.row_bytes / static_cast<int64_t>(sizeof(W));
  const int64_t total = (p.dst_rows - end) * words;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kPadThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kPadThreads + threadIdx.x; i < total;
       i += step) {
    const int64_t r = i / words;
    reinterpret_cast<W*>(p.dst + (end + r) * p.dst_stride)[i - r * words] = W{};
  }
}

}  // namespace f46::cuda
