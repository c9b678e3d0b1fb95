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
// The dynamic shared memory `raw` as a T at its first 1024-byte aligned byte (128-byte swizzled
// operand tiles repeat every 8 rows; the launch adds 1024 bytes of slack). Offset arithmetic on
// the shared array keeps the accesses in the shared state space (STS/LDS, not generic).
template <class T>
__device__ __forceinline__ T& smem_aligned_1024(char* raw) {
  return *reinterpret_cast<T*>(raw + ((1024u - (shared_addr(raw) & 1023u)) & 1023u));
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
