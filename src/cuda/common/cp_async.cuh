// Asynchronous global -> shared copies (cp.async, L2 only for 16 bytes), their group commit and
// wait, and the proxy fence that makes generic-proxy shared-memory writes (st.shared, cp.async)
// visible to the async proxy (WGMMA operands). Shared by the quantizers (quantize/block_io.cuh)
// and the fused GEMM kernels (gemm/fused_fp4_gemm_kernel.cuh, gemm/w4_gemm_kernel.cuh).
#pragma once

#include <cstdint>

namespace f46::cuda {

__device__ __forceinline__ uint32_t shared_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(uint32_t smem, const void* gmem) {  // shared address
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  cp_async16(shared_addr(smem), gmem);
}
__device__ __forceinline__ void cp_async4(uint32_t smem, const void* gmem) {  // shared address
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

}  // namespace f46::cuda
