// The launch of the persistent fused GEMM kernels (plans (b) and (c)): at most one CTA per SM
// (fewer when there are fewer tiles), their dynamic shared memory attribute set once per
// kernel, each launch counted (tests tell a forced plan from its fall-back to plan (a)).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "cuda/common/cuda_check.h"
#include "cuda/common/launch_utils.h"

namespace f46::cuda::gemm_detail {

template <class Args>
void launch_persistent(void (*kernel)(Args), const Args& p, int threads, int smem, int max_tiles,
                       std::once_flag& attr_once, std::atomic<uint64_t>& launches, const char* name,
                       cudaStream_t stream) {
  std::call_once(attr_once, [&] {
    F46_CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  });
  const int grid = std::max(1, std::min(sm_count_current(), max_tiles));
  kernel<<<grid, threads, smem, stream>>>(p);
  F46_CHECK_LAUNCH(name);
  launches.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace f46::cuda::gemm_detail
