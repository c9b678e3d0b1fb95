// The lean rowwise kernel: bf16 input, 1x16 blocks, rowwise output only, a per-tensor or
// per-group global amax, x contiguous and 16-byte aligned, dense outputs, no RHT, round to
// nearest (the training activations and weights). Same arithmetic and the same results as
// quantize_rows_kernel (quantize_block.cuh), fewer instructions per block (Nsight Compute,
// 2026-12-03: the general rows kernel spent as many instructions around a block's element work
// as in it):
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
// kernel, CudaQuantizeEdge.LeanGroupScope and the group-scope cases to the other).
#pragma once

#include <cstdint>

#include "common/numerics.h"
#include "cuda/quantize/grid_math.h"
#include "cuda/quantize/quantize_block.cuh"
#include "cuda/quantize/quantize_kernel_parts.cuh"
#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

// Per scale byte s for the tensor's global amax (scale_entry): inv_s = inv * 2^-6, k64 = K * 64
// (the scaled grid values' K), kterm = grid::bound_kterm(K), limit = grid::fast_limit(inv_s),
// set to 0 for the error rules where K is NaN (C2 fails: every block with s takes the reference).
struct LeanEntry {
  float inv_s, k64, kterm, limit;
};

template <QuantMode M>
__device__ __forceinline__ LeanEntry lean_entry(uint32_t s, const GlobalScale& g,
                                                const ErrorConsts& c) {
  const float2 e = scale_entry(s, g, c);
  const float inv_s = num::mul(e.x, grid::k2m6);
  float limit = grid::fast_limit(inv_s);
  if (is_error_rule<M>() && !(e.y == e.y)) limit = 0.0f;
  return LeanEntry{inv_s, num::mul(e.y, 64.0f), grid::bound_kterm<rule_of<M>()>(e.y), limit};
}
template <QuantMode M>
__device__ __forceinline__ void fill_lean_table(LeanEntry* tab, const GlobalScale& g,
                                                const ErrorConsts& c) {
  for (int s = threadIdx.x; s < 256; s += blockDim.x) tab[s] = lean_entry<M>(s, g, c);
  __syncthreads();
}

// The 16 values of a block from its 8 raw bf16 words (element 2j in the low half of w[j]).
__device__ __forceinline__ void unpack_words(const uint32_t (&w)[8], float (&x)[16]) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    x[2 * j] = num::from_bits(w[j] << 16);
    x[2 * j + 1] = num::from_bits(w[j] & 0xFFFF0000u);
  }
}

// Block amax (N9) of 16 bf16 values from their raw words: max |.| of bf16 pairs (NaN if either
// is NaN; the sign bits of the result are junk, masked), then of the two halves. Equal to
// block_amax on the unpacked values except for a NaN's payload, which no output depends on.
__device__ __forceinline__ uint32_t bf16x2_absmax(uint32_t a, uint32_t b) {
  uint32_t r;
  asm("max.NaN.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
__device__ __forceinline__ float packed_amax(const uint32_t (&w)[8]) {
  const uint32_t m =
      bf16x2_absmax(bf16x2_absmax(bf16x2_absmax(w[0], w[1]), bf16x2_absmax(w[2], w[3])),
                    bf16x2_absmax(bf16x2_absmax(w[4], w[5]), bf16x2_absmax(w[6], w[7])));
  return max_nan(num::from_bits(m & 0x7FFF0000u), fabsf(num::from_bits(m << 16)));
}

// The blocks of an error rule that lean_block does not finish, out of line (rare): those the
// fast path does not admit take the reference path (lean_reference); for those it admits but
// whose approximate errors do not decide (nearly all exact ties e4 == e6 with s4 != s6),
// lean_exact_four gives the choice from the exact errors and lean_block keeps the codes it has.
// The block travels as its 32 raw bytes (a, b).
template <QuantMode M>
__device__ __noinline__ BlockCodes lean_reference(const uint4 a, const uint4 b, const GlobalScale g,
                                                  const ErrorConsts c) {
  const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  float x[16];
  unpack_words(w, x);
  return reference_block_4over6<M, false>(x, packed_amax(w), g, c, 0u);
}
template <QuantMode M>
__device__ __noinline__ bool lean_exact_four(const uint4 a, const uint4 b, const GlobalScale g,
                                             const ErrorConsts c, uint32_t s6, uint32_t s4,
                                             float inv6_s, float inv4_s) {
  constexpr Rule kRule = rule_of<M>();
  const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  float x[16], gv[16];
  unpack_words(w, x);
  grid_values_s(x, inv6_s, gv);
  const float e6 = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s6)), g.amax,
                                            c.denom, c.rdenom, 64.0f);
  grid_values_s(x, inv4_s, gv);
  const float e4 = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s4)), g.amax,
                                            c.denom, c.rdenom, 64.0f);
  return num::pick_map4(e4, e6);
}

// One 1x16 block from its 8 raw bf16 words (element 2j low half of w[j]); quantize_block's
// fast path with the table's constants, the reference path for the blocks it does not admit.
template <QuantMode M>
__device__ __forceinline__ BlockCodes lean_block(const uint32_t (&w)[8], const LeanEntry* tab,
                                                 const GlobalScale& g, const ErrorConsts& c) {
  constexpr Rule kRule = rule_of<M>();
  float x[16];
  unpack_words(w, x);
  const float b = packed_amax(w);
  if constexpr (!is_error_rule<M>()) {
    const uint8_t scale = plain_scale<M>(b, g);
    const LeanEntry t = tab[scale];
    if (!(b < t.limit)) {
      Block16 xb;
#pragma unroll
      for (int i = 0; i < 16; ++i) xb.v[i] = x[i];
      return BlockCodes{reference_codes(xb, inverse_of(scale, g.s_dec)), scale};
    }
    float gv[16];
    grid_values_s(x, t.inv_s, gv);
    const uint32_t lo = grid::signed_codes8(grid::even_odd_s(gv), w);
    const uint32_t hi = grid::signed_codes8(grid::even_odd_s(gv + 8), w + 4);
    return BlockCodes{lo | (static_cast<uint64_t>(hi) << 32), scale};
  } else {
    // The candidate scales (N3.1) by the fast formulas, their entries; `fast`: the block meets
    // C1 and C2 for both (b < limit) and b/6 by Markstein holds (b = 0 or b >= 2^-100). The
    // conversion needs no range check: it saturates every base >= 448 (+Inf too) to 0x7E and
    // gives 0x7F for NaN, as e4m3_from_float(min(base, 448)) does (base >= 0 or NaN).
    const float base = num::mul(grid::div6_fast(b), g.s_enc);
    const uint32_t s64 = e4m3x2(base, num::mul(base, 1.5f));
    const uint32_t s6 = s64 & 0xFFu, s4 = (s64 >> 8) & 0xFFu;
    const LeanEntry t6 = tab[s6], t4 = tab[s4];
    const bool fast = grid::div6_fast_ok(b) & (b < t6.limit) & (b < t4.limit);  // no branches
    // Both candidates for every block, one after the other keeping only its error and code
    // words (fewer registers live); then one branch for the blocks not admitted or undecided.
    float gv[16];
    grid_values_s(x, t6.inv_s, gv);
    const float e6 = grid::approx_error<kRule>(x, gv, t6.k64);
    const grid::CodeWords a6 = grid::even_odd_s(gv), b6 = grid::even_odd_s(gv + 8);
    grid_values_s(x, t4.inv_s, gv);
    const float e4 = grid::approx_error<kRule>(x, gv, t4.k64);
    const grid::CodeWords a4 = grid::even_odd_s(gv), b4 = grid::even_odd_s(gv + 8);
    // Equal scales give equal errors: 6, never undecided.
    const bool undecided = s4 != s6 && !(fabsf(num::sub(e4, e6)) >
                                         grid::lean_bound<kRule>(e6, e4, t6.kterm, t4.kterm));
    bool four;
    if (!fast || undecided) {  // one branch to the rare blocks
      const uint4 a = make_uint4(w[0], w[1], w[2], w[3]), bw = make_uint4(w[4], w[5], w[6], w[7]);
      if (!fast) return lean_reference<M>(a, bw, g, c);
      four = lean_exact_four<M>(a, bw, g, c, s6, s4, t6.inv_s, t4.inv_s);
    } else {
      four = num::pick_map4(e4, e6);
    }
    const uint32_t lo = grid::signed_codes8(four ? a4 : a6, w);
    const uint32_t hi = grid::signed_codes8(four ? b4 : b6, w + 4);
    return BlockCodes{lo | (static_cast<uint64_t>(hi) << 32), static_cast<uint8_t>(four ? s4 : s6)};
  }
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
// A hint to bring the 32 bytes at p into L2 (no registers, no wait; dev/lean_lab.cu only).
__device__ __forceinline__ void prefetch_l2(const uint4* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

// The kernel. Work: steps of kLeanThreads consecutive 1x16 blocks, thread t block t of each
// step. Per tensor the CTAs take the steps round robin (CTA c: c, c + G, ...); per group each
// CTA takes a contiguous range [c S / G, (c + 1) S / G), so its table's group changes rarely.
// Each thread loads its block's 32 bytes straight into registers one step ahead (no shared
// ring, no barrier in the loop): 1.17-1.19x the former cp.async-ring form on an H200
// (2026-12-05, bench/RESULTS.md), its all6 mode at 0.79-0.92 of copy bandwidth.
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
// kMinCtas and kL2Ahead are open for dev/lean_lab.cu: kL2Ahead > 0 also asks L2 for the block
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
    if constexpr (kL2Ahead > 0) {
      const int64_t pf = int64_t{nb} + int64_t{kL2Ahead} * stride;
      if (pf < total) prefetch_l2(src + 2 * pf);
    }
    lean_store<M>(a0, a1, s_tab, gs, consts, codes, p.scales, blk);
    if (nb >= total) break;
    blk = nb + stride;
    if (blk < total)
      a0 = load_x16(src + 2 * int64_t{blk}), a1 = load_x16(src + 2 * int64_t{blk} + 1);
    if constexpr (kL2Ahead > 0) {
      const int64_t pf = int64_t{blk} + int64_t{kL2Ahead} * stride;
      if (pf < total) prefetch_l2(src + 2 * pf);
    }
    lean_store<M>(b0, b1, s_tab, gs, consts, codes, p.scales, nb);
  }
}

}  // namespace f46::cuda
