// LAB KERNEL, not in the library (dev/lean_lab.cu). Measured 2026-12-05 (late session, H100,
// bytewise equal to the src kernel): 2-5 % SLOWER than the register loads of the src kernel in
// every configuration tried (4 or 6 stages at 5 CTAs, 4 stages at 6, 3 stages at 7), MAE 0.73-0.83
// against 0.77 / 0.85 / 0.86 (docs/lab_log.md): a deeper prefetch does not help the rowwise
// kernel, whose limit is issue and arithmetic, not the wait on its loads.
//
// The lean tensor kernel
// (quantize_rows_lean_tensor_kernel) with its input staged by bulk copies (TMA, 1D
// cp.async.bulk) into a ring of kStages shared-memory stages instead of register loads one step
// ahead. Nsight Compute (2026-12-05) put a third of the lean kernel's stall samples on the first
// use of each block's global load: the one-step register prefetch holds ~20 KB in flight per SM,
// below what the H200's bandwidth-latency product asks. Here (kStages - 1) x 4 KB per CTA are in
// flight and no registers hold the next block.
//   - a chunk is kLeanThreads consecutive 1x16 blocks (4 KB of bf16); CTA c takes chunks c,
//     c + G, ... (G CTAs); thread t quantizes block t of the chunk with lean_block (the same
//     arithmetic, bitwise the same results);
//   - full[s]: one arrival + the copy's bytes; empty[s]: one arrival per warp once its lanes have
//     read the stage into registers; thread 0 refills the stage of step k - 1 during step k.
#pragma once

#include <cstdint>

#include "cuda/quantize/quantize_lean.cuh"

namespace f46::cuda {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  uint32_t ok = 0;
  do {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, "
        "p; }"
        : "=r"(ok)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
  } while (!ok);
}
__device__ __forceinline__ void bulk_load(void* dst, const void* src, uint32_t bytes,
                                          uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

template <QuantMode M, int kStages, int kMinCtas>
__global__ void __launch_bounds__(kLeanThreads, kMinCtas) lean_tma_kernel(const QuantizeParams p) {
  constexpr uint32_t kChunkBytes = kLeanThreads * 32;
  __shared__ LeanEntry s_tab[256];
  __shared__ alignas(128) uint4 s_buf[kStages][2 * kLeanThreads];
  __shared__ alignas(8) uint64_t s_full[kStages], s_empty[kStages];
  const uint32_t total = static_cast<uint32_t>(p.rows * (p.cols / 16));  // < 2^31 (lab)
  const uint32_t chunks = (total + kLeanThreads - 1) / kLeanThreads;
  const uint32_t G = gridDim.x, c0 = blockIdx.x;
  const uint32_t n = chunks > c0 ? (chunks - c0 + G - 1) / G : 0;  // this CTA's chunks
  const uint4* src = static_cast<const uint4*>(p.x);
  auto issue = [&](uint32_t k) {  // thread 0: chunk k of this CTA into stage k % kStages
    const uint32_t c = c0 + k * G, s = k % kStages;
    const uint32_t blocks = min(static_cast<uint32_t>(kLeanThreads), total - c * kLeanThreads);
    mbar_expect_tx(&s_full[s], blocks * 32);
    bulk_load(s_buf[s], src + 2 * int64_t{c} * kLeanThreads, blocks * 32, &s_full[s]);
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) mbar_init(&s_full[s], 1), mbar_init(&s_empty[s], 4);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (uint32_t k = 0; k < kStages && k < n; ++k) issue(k);
  const ErrorConsts consts = error_consts(p.bound);
  const GlobalScale gs = global_scale(p.amax[0], p.bound);
  fill_lean_table<M>(s_tab, gs, consts);
  uint64_t* codes = reinterpret_cast<uint64_t*>(p.codes);
  const uint32_t t = threadIdx.x;
  static_assert(kChunkBytes == sizeof(s_buf[0]), "one chunk per stage");
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t s = k % kStages, par = (k / kStages) & 1u;
    const uint32_t blk = (c0 + k * G) * kLeanThreads + t;
    mbar_wait(&s_full[s], par);
    uint4 a{}, b{};
    if (blk < total) a = s_buf[s][2 * t], b = s_buf[s][2 * t + 1];
    __syncwarp();
    if ((t & 31) == 0) mbar_arrive(&s_empty[s]);
    if (t == 0 && k >= 1 && k - 1 + kStages < n) {  // refill the stage of step k - 1
      const uint32_t k1 = k - 1;
      mbar_wait(&s_empty[k1 % kStages], (k1 / kStages) & 1u);
      issue(k1 + kStages);
    }
    if (blk < total) lean_store<M>(a, b, s_tab, gs, consts, codes, p.scales, blk);
  }
}

}  // namespace f46::cuda
