// One bf16 1x16 block of the lean kernels (quantize_lean.cuh, quantize_rowcol.cuh,
// quantize_quad.cuh): lean_block with its table entries (LeanEntry) and rare paths, and the packed
// block amax. Host + device: the kernels run it on the GPU, and
// tests/cpp/cuda/test_cuda_lean_block.cpp runs the same code on the CPU (host forms of the three
// PTX instructions it uses: max.NaN, max.NaN.xorsign.abs.bf16x2 and cvt.rn.satfinite.e4m3x2)
// against the CPU reference, so CI checks it without a GPU.
#pragma once

#include <cstdint>

#include "common/numerics.h"
#include "cuda/quantize/block_reference.cuh"
#include "cuda/quantize/grid_rounding.h"
#include "cuda/quantize/quantize_block.cuh"
#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

// Per scale byte s for the tensor's global amax (scale_entry): inv_s = inv * 2^-6, k64 = K * 64
// (the scaled grid values' K), kterm = grid::bound_kterm(K), limit = grid::fast_limit(inv_s),
// set to 0 for the error rules where K is NaN (C2 fails: every block with s takes the reference).
struct LeanEntry {
  float inv_s, k64, kterm, limit;
};

template <QuantMode M>
F46_HD LeanEntry lean_entry(uint32_t s, const GlobalScale& g, const ErrorConsts& c) {
  const float2 e = scale_entry(s, g, c);
  const float inv_s = num::mul(e.x, grid::k2m6);
  float limit = grid::fast_limit(inv_s);
  if (is_error_rule<M>() && !(e.y == e.y)) limit = 0.0f;
  return LeanEntry{inv_s, num::mul(e.y, 64.0f), grid::bound_kterm<rule_of<M>()>(e.y), limit};
}
// The 16 values of a block from its 8 raw bf16 words (element 2j in the low half of w[j]).
F46_HD void unpack_words(const uint32_t (&w)[8], float (&x)[16]) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    x[2 * j] = num::from_bits(w[j] << 16);
    x[2 * j + 1] = num::from_bits(w[j] & 0xFFFF0000u);
  }
}

// Block amax (N9) of 16 bf16 values from their raw words: max |.| of bf16 pairs (NaN if either
// is NaN; the sign bits of the result are junk, masked), then of the two halves. Equal to
// block_amax on the unpacked values except for a NaN's payload, which no output depends on.
F46_HD uint32_t bf16x2_absmax(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("max.NaN.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
#else  // per half: the canonical NaN 0x7FFF if either is NaN, else the larger magnitude
  uint32_t r = 0;
  for (int h = 0; h < 32; h += 16) {
    const uint32_t x = (a >> h) & 0x7FFFu, y = (b >> h) & 0x7FFFu;
    const uint32_t sign = ((a ^ b) >> h) & 0x8000u;
    r |= (x > 0x7F80u || y > 0x7F80u ? 0x7FFFu : (x > y ? x : y) | sign) << h;
  }
  return r;
#endif
}
F46_HD float packed_amax(const uint32_t (&w)[8]) {
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
F46_HD_NOINLINE BlockCodes lean_reference(const uint4 a, const uint4 b, const GlobalScale g,
                                          const ErrorConsts c) {
  const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  float x[16];
  unpack_words(w, x);
  return reference_block_4over6<M, false>(x, packed_amax(w), g, c, 0u);
}
template <QuantMode M>
F46_HD_NOINLINE bool lean_exact_four(const uint4 a, const uint4 b, const GlobalScale g,
                                     const ErrorConsts c, uint32_t s6, uint32_t s4, float inv6_s,
                                     float inv4_s) {
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
F46_HD BlockCodes lean_block(const uint32_t (&w)[8], const LeanEntry* tab, const GlobalScale& g,
                             const ErrorConsts& c) {
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

}  // namespace f46::cuda
