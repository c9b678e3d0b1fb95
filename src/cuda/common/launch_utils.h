// Host-side launch helpers shared by the CUDA kernels: the context's stream, grid sizes,
// pointer alignment, the SM count.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "f46/error.h"
#include "f46/tensor.h"

namespace f46::cuda {

inline cudaStream_t stream_of(const Context& ctx) {
  return static_cast<cudaStream_t>(ctx.cuda_stream);
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Grid x-dimension for `n` work items of `per_cta` each; f46::Error past the CUDA limit.
inline unsigned grid_x(int64_t n, int64_t per_cta) {
  const int64_t g = ceil_div(n, per_cta);
  F46_CHECK(g < (int64_t{1} << 31), "grid too large: ", g, " CTAs for ", n, " items");
  return static_cast<unsigned>(g > 0 ? g : 1);
}

inline bool aligned_to(const void* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}

// The widest access (16, 8, 4, 2 or 1 bytes) that divides every size and every address (null
// counts as aligned): the word a row-copying kernel may move at a time. Host only, tested in CI.
inline int64_t access_bytes(std::initializer_list<int64_t> sizes,
                            std::initializer_list<const void*> addresses) {
  int64_t w = 16;
  for (; w > 1; w /= 2) {
    bool ok = true;
    for (int64_t s : sizes) ok = ok && s % w == 0;
    for (const void* a : addresses) ok = ok && aligned_to(a, w);
    if (ok) break;
  }
  return w;
}

// Streaming multiprocessors of CUDA device `device` (cached per device; src/cuda/device.cpp).
int sm_count(int device);
// ... of the current device.
int sm_count_current();

// Largest group-offset count the kernels stage in shared memory (48 KB of int32).
inline constexpr int kMaxGroups = 12288;

// Dynamic shared memory of `groups` staged int32 group ends, within this backend's limit
// (checked here, named with `op`).
inline size_t staged_offsets_bytes(int64_t groups, const char* op) {
  F46_CHECK(groups >= 1 && groups <= kMaxGroups, op,
            " (CUDA backend limit): group count must be in [1, ", kMaxGroups, "], got ", groups);
  return static_cast<size_t>(groups) * sizeof(int32_t);
}

}  // namespace f46::cuda
