// Device-side token-group offsets (N11, N12). Offsets are never read by the host: each CTA
// stages them in shared memory clamped into [previous offset, limit], so any offset values,
// valid or not, give in-bounds accesses.
#pragma once

#include <cstdint>

#include "cuda/common/group_rows.h"

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

}  // namespace f46::cuda
