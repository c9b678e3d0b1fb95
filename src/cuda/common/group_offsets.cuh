// Device-side token-group offsets (N11, N12). Offsets are never read by the host: each CTA
// stages them in shared memory clamped into [previous offset, limit], so any offset values,
// valid or not, give in-bounds accesses.
#pragma once

#include <cstdint>

namespace f46::cuda {

// s_offs[g] = min(max(0, offs[0..g]), limit) for g < num_groups. Called by every thread of the
// CTA (contains __syncthreads); warp 0 runs an inclusive max-scan 32 offsets at a time.
__device__ __forceinline__ void stage_clamped_offsets(const int32_t* offs, int num_groups,
                                                      int64_t limit, int32_t* s_offs) {
  if (threadIdx.x < 32) {
    const unsigned lane = threadIdx.x;
    int32_t carry = 0;
    for (int base = 0; base < num_groups; base += 32) {
      const int g = base + static_cast<int>(lane);
      int32_t v = g < num_groups ? offs[g] : 0;
      v = v > carry ? v : carry;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int32_t o = __shfl_up_sync(0xFFFFFFFFu, v, d);
        if (lane >= static_cast<unsigned>(d)) v = o > v ? o : v;
      }
      const int32_t clamped = static_cast<int64_t>(v) > limit ? static_cast<int32_t>(limit) : v;
      if (g < num_groups) s_offs[g] = clamped;
      carry = __shfl_sync(0xFFFFFFFFu, clamped, 31);
    }
  }
  __syncthreads();
}

// The group whose rows [s_offs[g-1], s_offs[g]) contain `row`, or num_groups when the row is
// past the last offset (outside every group).
__device__ __forceinline__ int group_of_row(const int32_t* s_offs, int num_groups, int64_t row) {
  int lo = 0, hi = num_groups;  // first g with s_offs[g] > row
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (static_cast<int64_t>(s_offs[mid]) > row)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

// Virtual token-group padding (N12): the source row of padded row `row`, or -1 for a zero
// row. s_pad: the padded groups' clamped ends, s_src: the source groups' (each clamped on its
// own, so the source row stays below the source row count for any offsets).
__device__ __forceinline__ int64_t source_row(const int32_t* s_pad, const int32_t* s_src,
                                              int num_groups, int64_t row) {
  const int g = group_of_row(s_pad, num_groups, row);
  if (g >= num_groups) return -1;
  const int64_t pad_start = g > 0 ? s_pad[g - 1] : 0, src_start = g > 0 ? s_src[g - 1] : 0;
  const int64_t within = row - pad_start;
  return within < s_src[g] - src_start ? src_start + within : -1;
}

}  // namespace f46::cuda
