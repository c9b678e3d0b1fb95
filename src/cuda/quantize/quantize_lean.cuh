// The lean rowwise kernel: bf16 input, 1x16 blocks, rowwise output only, a per-tensor or
// per-group global amax, x contiguous and 16-byte aligned, dense outputs, no RHT, round to
// nearest (the training activations and weights). Same arithmetic and the same results as
// quantize_rows_kernel (quantize_block.cuh), fewer instructions per block (the general rows
// kernel spends as many instructions around a block's element work as in it; docs/design.md).
// The block function, lean_block, is in lean_bf16_block.cuh:
//   - one shared table entry per scale byte (LeanEntry) holds inv * 2^-6, K * 64, the bound's K
//     term and the fast-path limit on the block amax (grid::fast_limit), so a candidate costs
//     one 16-byte shared load and no per-block multiplies or condition chains;
//   - the block amax comes from packed bf16 maxima of the raw words (packed_amax), the signs
//     from byte permutes of the raw words straight into the code words (grid::signed_codes8);
//   - error rules: both candidates are computed for every block and one branch at the end sends
//     the blocks the fast path does not admit to lean_reference and those it does not decide to
//     lean_exact_four, which returns only the choice (both out of line);
//   - the loop has no cursors: block i of the tensor is row-major block i of the outputs, and
//     each thread loads its next block straight into registers (no shared-memory ring); per
//     tensor (quantize_rows_lean_tensor_kernel) the loop has no group state, 32-bit indices
//     and is unrolled by two;
//   - group scope: the table holds the amax of the group of the step's first block (a step of
//     kLeanThreads blocks lies in one or a few rows, and the steps walk the rows in order), so it
//     is refilled (uniform, two barriers) only when that amax changes; a block of a later group
//     inside a step that straddles a group boundary takes lean_block_own (the general fast
//     path, its scale entries computed per block).
// The CUDA tests compare both kernels bitwise with the CPU reference
// (tests/cpp/cuda/test_cuda_quantize*.cpp: the bf16 per-tensor rowwise cases go to the tensor
// kernel, CudaQuantizeEdge.LeanGroupScope and the group-scope cases to the other);
// tests/cpp/cuda/test_cuda_lean_block.cpp runs lean_block itself on the CPU.
#pragma once

#include <cstdint>

#include "common/numerics.h"
#include "cuda/quantize/block_io.cuh"
#include "cuda/quantize/grid_rounding.h"
#include "cuda/quantize/lean_bf16_block.cuh"
#include "cuda/quantize/quantize_block.cuh"
#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

template <QuantMode M>
__device__ __forceinline__ void fill_lean_table(LeanEntry* tab, const GlobalScale& g,
                                                const ErrorConsts& c) {
  for (int s = threadIdx.x; s < 256; s += blockDim.x) tab[s] = lean_entry<M>(s, g, c);
  __syncthreads();
}

// A block whose group amax is not the table's (group scope, rare): quantize_block with its
// own scale entries. Out of line: the hot loop keeps its registers.
template <QuantMode M>
__device__ __noinline__ BlockCodes lean_block_own(uint4 a, uint4 b, float amax, float bound) {
  const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  float x[16];
  unpack_words(w, x);
  return quantize_block<M, false>(x, global_scale(amax, bound), error_consts(bound), false, 0u, 0u,
                                  0u, 0u, TableRef{nullptr, false});
}

// Group scope: the group of block `blk` (rows of group g end at row s_offs[g], rows past the
// last offset have amax 0, as RowAmax), searched forward from `g`; the first block past it.
struct LeanGroup {
  int g;
  int64_t end;  // first block past group g (INT64_MAX past the last offset)
  float amax;   // the group's global amax (0 past the last offset)
};
__device__ __forceinline__ LeanGroup lean_group(const QuantizeParams& p, const int32_t* s_offs,
                                                int64_t bpr, int g, int64_t blk) {
  while (g < p.num_groups && static_cast<int64_t>(s_offs[g]) * bpr <= blk) ++g;
  if (g >= p.num_groups) return LeanGroup{g, INT64_MAX, 0.0f};
  return LeanGroup{g, static_cast<int64_t>(s_offs[g]) * bpr, p.amax[g]};
}

// 16 bytes of x through the non-coherent path (x is read-only during the kernel).
__device__ __forceinline__ uint4 load_x16(const uint4* p) {
  uint4 r;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}
// kL2Ahead > 0 (not used by the library): a hint to bring block b + kL2Ahead * stride of x into L2
// (no registers, no wait); nothing for the library's kL2Ahead = 0.
template <int kL2Ahead>
__device__ __forceinline__ void prefetch_ahead(const uint4* src, uint32_t b, uint32_t stride,
                                               uint32_t total) {
  if constexpr (kL2Ahead > 0) {
    const int64_t pf = int64_t{b} + int64_t{kL2Ahead} * stride;
    if (pf < total) asm volatile("prefetch.global.L2 [%0];" ::"l"(src + 2 * pf));
  }
}

// The kernel. Work: steps of kLeanThreads consecutive 1x16 blocks, thread t block t of each
// step. Per tensor the CTAs take the steps round robin (CTA c: c, c + G, ...); per group each
// CTA takes a contiguous range [c S / G, (c + 1) S / G), so its table's group changes rarely.
// Each thread loads its block's 32 bytes straight into registers one step ahead (no shared
// ring, no barrier in the loop): 1.17-1.19x a cp.async ring on an H200 (docs/design.md).
template <QuantMode M>
__global__ void __launch_bounds__(kLeanThreads, kLeanMinCtas)
    quantize_rows_lean_kernel(const QuantizeParams p) {
  static_assert(kLeanThreads % 32 == 0, "whole warps");
  __shared__ LeanEntry s_tab[256];
  extern __shared__ int32_t s_offs[];  // group scope: the clamped group ends
  const bool grouped = p.scope == ScopeKind::kGroup;
  if (grouped) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);

  const int64_t total = p.rows * (p.cols / 16);  // blocks
  const int64_t steps = (total + kLeanThreads - 1) / kLeanThreads;
  const int64_t ctas = gridDim.x, cta = blockIdx.x;
  int64_t step0, step_inc, n_steps;
  if (grouped) {
    step0 = steps * cta / ctas;
    step_inc = 1;
    n_steps = steps * (cta + 1) / ctas - step0;
  } else {
    step0 = cta;
    step_inc = ctas;
    n_steps = steps > cta ? (steps - cta + ctas - 1) / ctas : 0;
  }
  const int64_t bpr = p.cols / 16;
  const ErrorConsts consts = error_consts(p.bound);
  LeanGroup tg{0, INT64_MAX, 0.0f};  // group scope: the table's group
  if (grouped) tg = lean_group(p, s_offs, bpr, 0, step0 * kLeanThreads);
  GlobalScale gs = global_scale(grouped ? tg.amax : p.amax[0], p.bound);
  fill_lean_table<M>(s_tab, gs, consts);

  const uint4* src = static_cast<const uint4*>(p.x);
  uint64_t* codes = reinterpret_cast<uint64_t*>(p.codes);
  const int64_t blk_inc = step_inc * kLeanThreads;
  int64_t blk = step0 * kLeanThreads + threadIdx.x;  // this thread's block of step k
  uint4 a{}, b{};                                    // its 32 bytes, loaded one step ahead
  if (n_steps > 0 && blk < total) a = load_x16(src + 2 * blk), b = load_x16(src + 2 * blk + 1);
  for (int64_t k = 0; k < n_steps; ++k, blk += blk_inc) {
    if (grouped) {  // uniform: the group of the step's first block
      const int64_t first = (step0 + k) * kLeanThreads;
      if (first >= tg.end) {
        tg = lean_group(p, s_offs, bpr, tg.g, first);
        if (num::bits(tg.amax) != num::bits(gs.amax)) {
          __syncthreads();  // every thread is done with the previous table
          gs = global_scale(tg.amax, p.bound);
          fill_lean_table<M>(s_tab, gs, consts);
        }
      }
    }
    const uint4 ca = a, cb = b;
    const int64_t next = blk + blk_inc;
    if (k + 1 < n_steps && next < total)
      a = load_x16(src + 2 * next), b = load_x16(src + 2 * next + 1);
    if (blk < total) {
      bool other = false;  // group scope, a block past the table's group with another amax
      float own = 0.0f;
      if (grouped && blk >= tg.end) {
        own = lean_group(p, s_offs, bpr, tg.g, blk).amax;
        other = num::bits(own) != num::bits(gs.amax);
      }
      const uint32_t w[8] = {ca.x, ca.y, ca.z, ca.w, cb.x, cb.y, cb.z, cb.w};
      const BlockCodes r =
          other ? lean_block_own<M>(ca, cb, own, p.bound) : lean_block<M>(w, s_tab, gs, consts);
      codes[blk] = r.codes;
      p.scales[blk] = r.scale;
    }
  }
}

// lean_block of block i from its 32 bytes (a, b), stored.
template <QuantMode M>
__device__ __forceinline__ void lean_store(const uint4& a, const uint4& b, const LeanEntry* tab,
                                           const GlobalScale& gs, const ErrorConsts& c,
                                           uint64_t* codes, uint8_t* scales, int64_t i) {
  const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  const BlockCodes r = lean_block<M>(w, tab, gs, c);
  codes[i] = r.codes;
  scales[i] = r.scale;
}

// Per-tensor scope, fewer than 2^31 blocks: the same blocks without the group-scope checks,
// 32-bit block indices, grid-stride (thread t of the grid: blocks t, t + S, ...), the loop
// unrolled by two so the next block's registers alternate between two sets (nothing copied).
// kMinCtas and kL2Ahead are tuning parameters: kL2Ahead > 0 also asks L2 for the block
// kL2Ahead strides past the one loaded into registers (more bytes in flight for the H200's
// bandwidth-latency product, no registers); the library uses the defaults.
template <QuantMode M, int kMinCtas = kLeanTensorMinCtas, int kL2Ahead = 0>
__global__ void __launch_bounds__(kLeanThreads, kMinCtas)
    quantize_rows_lean_tensor_kernel(const QuantizeParams p) {
  __shared__ LeanEntry s_tab[256];
  const ErrorConsts consts = error_consts(p.bound);
  const GlobalScale gs = global_scale(p.amax[0], p.bound);
  fill_lean_table<M>(s_tab, gs, consts);
  const uint32_t total = static_cast<uint32_t>(p.rows * (p.cols / 16));  // < 2^31 (host)
  const uint32_t stride = gridDim.x * kLeanThreads;
  uint32_t blk = blockIdx.x * kLeanThreads + threadIdx.x;
  const uint4* src = static_cast<const uint4*>(p.x);
  uint64_t* codes = reinterpret_cast<uint64_t*>(p.codes);
  uint4 a0{}, a1{}, b0{}, b1{};
  if (blk < total) a0 = load_x16(src + 2 * int64_t{blk}), a1 = load_x16(src + 2 * int64_t{blk} + 1);
  while (blk < total) {
    const uint32_t nb = blk + stride;  // < 2^32: total < 2^31 and stride < 2^31
    if (nb < total) b0 = load_x16(src + 2 * int64_t{nb}), b1 = load_x16(src + 2 * int64_t{nb} + 1);
    prefetch_ahead<kL2Ahead>(src, nb, stride, total);
    lean_store<M>(a0, a1, s_tab, gs, consts, codes, p.scales, blk);
    if (nb >= total) break;
    blk = nb + stride;
    if (blk < total)
      a0 = load_x16(src + 2 * int64_t{blk}), a1 = load_x16(src + 2 * int64_t{blk} + 1);
    prefetch_ahead<kL2Ahead>(src, blk, stride, total);
    lean_store<M>(b0, b1, s_tab, gs, consts, codes, p.scales, nb);
  }
}

}  // namespace f46::cuda
