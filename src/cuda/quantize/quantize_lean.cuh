// The lean rowwise kernel: bf16 input, 1x16 blocks, rowwise output only, a per-tensor or
// per-group global amax, x contiguous and 16-byte aligned, dense outputs, no RHT, round to
// nearest (the training activations and weights). Same arithmetic and the same results as
// quantize_rows_kernel (quantize_block.cuh), fewer instructions per block (Nsight Compute,
// 2026-12-03: the general rows kernel spent as many instructions around a block's element work
// as in it):
//   - one shared table entry per scale byte (LeanEntry) holds inv * 2^-6, K * 64, the bound's K
//     term and the fast-path limit on the block amax (grid::fast_limit), so a candidate costs
//     one 16-byte shared load and no per-block multiplies or condition chains;
//   - signs come from the raw bf16 words (grid::or_signs8_bf16) and are or'ed into the codes;
//   - the loop has no cursors: block i of the tensor is row-major block i of the outputs, and
//     each thread loads its next block straight into registers (no shared-memory ring);
//   - group scope: the table holds the amax of the group of the step's first block (a step of
//     kLeanThreads blocks lies in one or a few rows, and the steps walk the rows in order), so it
//     is refilled (uniform, two barriers) only when that amax changes; a block of a later group
//     inside a step that straddles a group boundary takes lean_block_own (the general fast
//     path, its scale entries computed per block).
// The CUDA tests compare it bitwise with the CPU reference (tests/cpp/cuda/test_cuda_quantize*.cpp:
// the bf16 per-tensor rowwise cases, and CudaQuantizeEdge.LeanGroupScope for group scope).
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

// One 1x16 block from its 8 raw bf16 words (element 2j low half of w[j]); quantize_block's
// fast path with the table's constants, the reference path for the blocks it does not admit.
template <QuantMode M>
__device__ __forceinline__ BlockCodes lean_block(const uint32_t (&w)[8], const LeanEntry* tab,
                                                 const GlobalScale& g, const ErrorConsts& c) {
  constexpr Rule kRule = rule_of<M>();
  float x[16];
  unpack_words(w, x);
  const float b = block_amax<false>(x, 0u);
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
    const uint32_t lo = grid::or_signs8_bf16(grid::pack_codes8_s(gv), w);
    const uint32_t hi = grid::or_signs8_bf16(grid::pack_codes8_s(gv + 8), w + 4);
    return BlockCodes{lo | (static_cast<uint64_t>(hi) << 32), scale};
  } else {
    // The candidate scales (N3.1) by the fast formulas, their entries; `fast`: the block meets
    // C1 and C2 for both (b < limit) and the fast formulas hold (b = 0 or b >= 2^-100 for the
    // Markstein b / 6, base < 2^100 for the conversion).
    const float base = num::mul(grid::div6_fast(b), g.s_enc);
    const uint32_t s64 = e4m3x2(base, num::mul(base, 1.5f));
    const uint32_t s6 = s64 & 0xFFu, s4 = (s64 >> 8) & 0xFFu;
    const LeanEntry t6 = tab[s6], t4 = tab[s4];
    const bool fast = grid::div6_fast_ok(b) && e4m3x2_ok(base) && b < t6.limit && b < t4.limit;
    if (!fast) return reference_block_4over6<M, false>(x, b, g, c, 0u);
    // One candidate after the other, keeping only its error and code words (fewer registers
    // live: more resident warps); the rare undecided block computes its grid values again.
    float gv[16];
    grid_values_s(x, t6.inv_s, gv);
    float e6 = grid::approx_error<kRule>(x, gv, t6.k64);
    const grid::CodeWords a6 = grid::even_odd_s(gv), b6 = grid::even_odd_s(gv + 8);
    grid_values_s(x, t4.inv_s, gv);
    float e4 = grid::approx_error<kRule>(x, gv, t4.k64);
    const grid::CodeWords a4 = grid::even_odd_s(gv), b4 = grid::even_odd_s(gv + 8);
    bool four = false;
    if (s4 != s6) {  // equal scales give equal errors: 6
      const float bound = grid::lean_bound<kRule>(e6, e4, t6.kterm, t4.kterm);
      if (!(fabsf(num::sub(e4, e6)) > bound)) {  // undecided: the exact errors
        grid_values_s(x, t6.inv_s, gv);
        e6 = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s6)), g.amax, c.denom,
                                      c.rdenom, 64.0f);
        grid_values_s(x, t4.inv_s, gv);
        e4 = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s4)), g.amax, c.denom,
                                      c.rdenom, 64.0f);
      }
      four = num::pick_map4(e4, e6);
    }
    const uint32_t lo = grid::or_signs8_bf16(grid::join_s(four ? a4 : a6), w);
    const uint32_t hi = grid::or_signs8_bf16(grid::join_s(four ? b4 : b6), w + 4);
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

}  // namespace f46::cuda
