// Scalar pieces of the CUDA quantizer's fast path (host + device, so the CPU tests check them
// against common/numerics.h without a GPU: tests/cpp/cuda/test_cuda_quantize_math.cpp).
// Each is an exact rewrite of the reference for the inputs the fast path admits (quantize_block.cuh
// checks those conditions per block and falls back to the reference otherwise):
//   - round_to_grid: E2M1 rounding of 0 <= v < 7 (no clamp needed: (6, 7) rounds to 6) in a max
//     and two FMAs. With m = max(v, 1 + 2^-21) and b = 2^floor(log2(max(v, 1))) (1, 2 or 4; the
//     E2M1 step of v's binade is b/2, 0.5 for v < 2): 2^22 m is a multiple of b/2 (m has 23
//     fraction bits below b), and c = RN(2^22 m - v) lies in the binade [2^22 b, 2^23 b) of
//     quantum b/2 (m >= 1 + 2^-21 keeps it above 2^22 for v < 2; m = v < 2b keeps it below), so
//     2^22 m - c (exact) is v rounded to the grid, a midpoint to the even multiple of b/2 (the
//     parity of 2^22 m / (b/2) is that of v's last fraction bit, 0 at a midpoint), i.e. the even
//     code (N5). Only for v in [b, b (1 + 2^-22)) does c fall into the binade below (quantum
//     b/4), which still rounds v to b. Checked for every float in [0, 7).
//   - floor_to_grid: with b as above (binade: a max and a mask), RZ(2^22 b + v) - 2^22 b, the
//     grid value at or below v (the `lo` of stochastic rounding, N6).
//   - the approximate 4/6 error and its bound (approx_bound_*), see quantize_block.cuh.
#pragma once

#include <cfenv>
#include <cmath>
#include <cstdint>

#include "common/numerics.h"

namespace f46::cuda::grid {

inline constexpr float k2p22 = 4194304.0f;                    // 2^22
inline constexpr float k2m126 = 1.17549435082228750797e-38f;  // 2^-126
inline constexpr float k2m17 = 7.62939453125e-06f;            // 2^-17

F46_HD float fma_rn(float a, float b, float c) { return num::fma(a, b, c); }
F46_HD float fabs_(float v) {  // |v| as an operand modifier on the device
#if defined(__CUDA_ARCH__)
  return fabsf(v);
#else
  return std::fabs(v);
#endif
}
F46_HD float fmax_(float a, float b) {
#if defined(__CUDA_ARCH__)
  return fmaxf(a, b);
#else
  return std::fmax(a, b);
#endif
}

// 2^floor(log2(max(v, 1))) for finite v >= 0: the E2M1 step of v's binade is half of it.
F46_HD float binade(float v) { return num::from_bits(num::bits(fmax_(v, 1.0f)) & 0x7F800000u); }

// The E2M1 grid value nearest to v (ties to the even code) for 0 <= v < 7 (N5 after the clamp).
F46_HD float round_to_grid(float v) {
  const float m = fmax_(v, 1.00000047683715820312f);  // 1 + 2^-21
  const float c = fma_rn(m, k2p22, -v);               // RN(2^22 m - v)
  return fma_rn(m, k2p22, -c);                        // exact
}

// The same rounding in units of 2^-6 ("scaled grid values"): for v = 2^-6 u, 0 <= u < 7,
// round_to_grid_s(v) = 2^-6 round_to_grid(u) (every intermediate is the unscaled one times 2^-6,
// all normal; a sub-normal v is below a quarter step and gives 0 as u does). Scaled grid values
// are E4M3 numbers whose byte is the E2M1 magnitude code times 4 (0.5 * 2^-6 is the E4M3
// sub-normal 4 * 2^-9, 1 * 2^-6 the smallest normal, ..., 6 * 2^-6 = 0x1C), so one E4M3
// conversion of two values yields two codes (code_bytes_s).
inline constexpr float k2m6 = 0.015625f;  // 2^-6
F46_HD float round_to_grid_s(float v) {
  const float m = fmax_(v, 0.01562500745058059692f);  // 2^-6 (1 + 2^-21)
  const float c = fma_rn(m, k2p22, -v);
  return fma_rn(m, k2p22, -c);
}
// E4M3 bytes (N1.3) of lo and hi in one conversion (round to nearest even, saturating at 448):
// bits 0..7 lo, 8..15 hi. For 0 <= lo, hi < 2^100 equal to num::e4m3_from_float(min(., 448)).
// The host form: NaN -> 0x7F, else the sign bit and the magnitude rounded and saturated.
F46_HD uint32_t e4m3_satfinite(float v) {
  if (v != v) return num::kE4M3NaN;
  return ((num::bits(v) >> 24) & 0x80u) | num::e4m3_from_float(num::abs(v));
}
F46_HD uint32_t e4m3x2(float lo, float hi) {
#if defined(__CUDA_ARCH__)
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return e4m3_satfinite(lo) | (e4m3_satfinite(hi) << 8);
#endif
}
// E4M3 bytes of two scaled grid values, lo at bits 0..7 (= 4 * code), hi at bits 8..15.
F46_HD uint32_t code_bytes_s(float lo, float hi) { return e4m3x2(lo, hi); }
// Magnitude codes of 8 scaled grid values at nibbles 0..7 (pack_codes8_s): bytes 4 c0, 4 c2,
// 4 c4, 4 c6 (the `even` word) shifted down by 2, or'ed with bytes 4 c1, 4 c3, 4 c5, 4 c7 (`odd`)
// shifted up by 2 (no bits cross a byte). In two halves, so a choice between two candidates
// selects 2 words, not 8 values: even_odd_s gives the E4M3 words, join_s combines them.
struct CodeWords {
  uint32_t even, odd;
};
F46_HD CodeWords even_odd_s(const float* g) {
  return CodeWords{code_bytes_s(g[0], g[2]) | (code_bytes_s(g[4], g[6]) << 16),
                   code_bytes_s(g[1], g[3]) | (code_bytes_s(g[5], g[7]) << 16)};
}
F46_HD uint32_t join_s(CodeWords c) { return (c.even >> 2) | (c.odd << 2); }
F46_HD uint32_t pack_codes8_s(const float* g) { return join_s(even_odd_s(g)); }

// The E2M1 grid value at or below v, 0 <= v <= 6 (the `lo` of N6): the first FMA rounded
// toward zero truncates to the step.
F46_HD float floor_to_grid(float v) {
  const float b = binade(v);
#if defined(__CUDA_ARCH__)
  const float g = __fmaf_rz(b, k2p22, v);
#else
  const int mode = std::fegetround();
  std::fesetround(FE_TOWARDZERO);
  const float g = std::fma(b, k2p22, v);
  std::fesetround(mode);
#endif
  return fma_rn(-b, k2p22, g);  // exact
}

// 3-bit E2M1 magnitude code of a grid value, at bits 22..24: g * 2^-126 has the E2M1 bit
// pattern there (0.5 -> sub-normal 2^-127 = 1 << 22, ..., 6 -> 1.5 * 2^-124 = 7 << 22).
F46_HD uint32_t code_bits22(float g) { return num::bits(num::mul(g, k2m126)); }

// The fast-path conditions of quantize_block.cuh: C1 (codes; also no NaN/Inf in the block, inv
// finite) and C2 (the exact error rewrite: every val of the candidate normal and finite).
F46_HD bool codes_fast_ok(float block_amax, float inv) { return num::mul(block_amax, inv) < 7.0f; }
// C1 for the scaled reciprocal inv_s = inv * 2^-6 of the scaled grid values: codes_fast_ok(b,
// inv), and inv_s exact (normal).
F46_HD bool codes_fast_ok_s(float block_amax, float inv_s) {
  return num::mul(block_amax, inv_s) < 0.109375f && inv_s >= 1.17549435e-38f;  // 7/64, 2^-126
}
F46_HD bool error_fast_ok(float sf, float amax) {
  if (sf == 0.0f || amax == 0.0f) return amax <= num::kFltMax;
  const float y = num::mul(sf, amax);
  return y >= 7.88860905e-31f && y <= 3.32306999e+35f;  // 2^-100, 2^118
}

// The fast-path limit of a scale byte for the lean kernels (quantize_lean.cuh): the smallest
// b >= 0 with !codes_fast_ok_s(b, inv_s), so that codes_fast_ok_s(b, inv_s) == (b < limit) for
// every b >= 0, +Inf and NaN (RN(b * inv_s) is monotone in b); 0 where inv_s is not normal
// (codes_fast_ok_s refuses every b there). inv_s <= FLT_MAX * 2^-6 (N3.2 clamps inv).
F46_HD float fast_limit(float inv_s) {
  if (!(inv_s >= 1.17549435e-38f)) return 0.0f;  // 2^-126; also NaN
  float t = num::div(0.109375f, inv_s);          // 7/64 / inv_s, normal and finite
  while (!(num::mul(t, inv_s) >= 0.109375f)) t = num::from_bits(num::bits(t) + 1u);
  while (t > 0.0f && num::mul(num::from_bits(num::bits(t) - 1u), inv_s) >= 0.109375f)
    t = num::from_bits(num::bits(t) - 1u);
  return t;
}

// prmt.b32 in its default mode (the host emulates it for the tests): byte i of the result is
// byte (nibble i of s) & 7 of y:x; a nibble with bit 3 set replicates that byte's sign bit over
// the whole result byte.
F46_HD uint32_t prmt(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(s));
  return r;
#else
  const uint64_t v = x | (static_cast<uint64_t>(y) << 32);
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t n = (s >> (4 * i)) & 15u;
    uint32_t b = static_cast<uint32_t>(v >> (8 * (n & 7u))) & 0xFFu;
    if (n & 8u) b = (b & 0x80u) ? 0xFFu : 0u;
    r |= b << (8 * i);
  }
  return r;
#endif
}
// The same for selectors below 8 (no sign replication): __byte_perm on the device, which the
// compiler schedules as its own instruction (an asm prmt is opaque to it).
F46_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  return prmt(x, y, s);
#endif
}
// Codes of 8 elements with their signs (N1.2: nibble i = code of element i, bit 3 its sign),
// from the chosen candidate's E4M3 code words (even: bytes 4 c0, 4 c2, 4 c4, 4 c6; odd: 4 c1,
// ..., even_odd_s) and the raw bf16 words w[0..3] (element 2j in the low half of w[j], 2j+1 in
// the high half): bytes 1 and 3 of the words (the sign bytes) gathered, each element's sign
// replicated over its byte and masked to bit 5, then (even >> 2) + (odd << 2) moves bit 5 to
// bit 3 / bit 7 of the element's nibble (join_s with the signs in, two instructions fewer).
F46_HD uint32_t signed_codes8(CodeWords c, const uint32_t* w) {
  const uint32_t p = byte_perm(w[0], w[1], 0x7351u), q = byte_perm(w[2], w[3], 0x7351u);
  const uint32_t se = prmt(p, q, 0xDC98u), so = prmt(p, q, 0xFEBAu);  // bytes 0x00 / 0xFF
  return ((c.even | (se & 0x20202020u)) >> 2) + ((c.odd | (so & 0x20202020u)) << 2);
}

// Bounds on |exact error - approximate error| of one candidate (quantize_block.cuh,
// "approximate errors"), from the approximate error e and K = RN(RN(sf * A) / (6 * bound)) (~ the
// value of grid point 1), for n rows (1, or 16 for a tile). u = 2^-24. The derivations:
//  MAE: per element |d - d'| <= 24.01 u K + 2.0001 u |d| (val and q*K each within 2.0001 u of
//       q * sf * A / (6 bound), q <= 6; two roundings of d); the in-order sums add <= 15.01 u of
//       each sum; so a row differs by <= u (32.1 e + 385 K), a tile (tree of 4 levels) by
//       <= u (41.1 e + 6180 K). Used: 2^-17 (e + 8 n K) (2.6x margin or more).
//  MSE: |d| <= 7.002 K (v < 7), |d - d'| <= 38.02 u K, |d^2 - d'^2| <= 532.7 u K^2; row <=
//       u (8524 K^2 + 32.2 e), tile <= u (136384 K^2 + 40.3 e). Used: 2^-10 n K^2 + 2^-17 e.
//  abs_max: <= max |d - d'| <= 38.02 u K for a row and a tile. Used: 2^-17 K.
// Each adds 2^-120 for the absolute rounding errors of sub-normal intermediates (< 2^-144).
F46_HD float approx_bound_mae(float e, float k, float n) {
  return num::add(num::add(num::mul(num::mul(k, 6.103515625e-05f), n),  // 2^-14 n K
                           num::mul(e, 7.62939453125e-06f)),            // 2^-17 e
                  7.52316384526264005e-37f);                            // 2^-120
}
F46_HD float approx_bound_mse(float e, float k, float n) {
  return num::add(num::add(num::mul(num::mul(num::mul(k, k), 9.765625e-04f), n),  // 2^-10 n K^2
                           num::mul(e, 7.62939453125e-06f)),
                  7.52316384526264005e-37f);
}
F46_HD float approx_bound_absmax(float k) {
  return num::add(num::mul(k, 7.62939453125e-06f), 7.52316384526264005e-37f);
}

// The lean kernels' bound for one row: a K term per scale byte from the table, kterm(K) =
// RN(RN(c K^j) + 2^-120) (MAE c = 2^-14, j = 1; MSE 2^-10, j = 2; abs_max 2^-17, j = 1), and
// lean_bound = RN(RN(e6 + e4) * ce + RN(kterm6 + kterm4)), ce = 2^-17 (0 for abs_max). Each
// of its four roundings is relative (all terms >= 0), so it is at least (1 - 2^-22) times the
// exact sum approx_bound(e6, K6, 1) + approx_bound(e4, K4, 1) stands for; the derivations above
// need less than 1/2.6 of that.
template <Rule R>
F46_HD float bound_kterm(float k) {
  if constexpr (R == Rule::kMSE)
    return num::add(num::mul(num::mul(k, k), 9.765625e-04f), 7.52316384526264005e-37f);
  else if constexpr (R == Rule::kAbsMax)
    return num::add(num::mul(k, 7.62939453125e-06f), 7.52316384526264005e-37f);
  else
    return num::add(num::mul(k, 6.103515625e-05f), 7.52316384526264005e-37f);
}
template <Rule R>
F46_HD float lean_bound(float e6, float e4, float kterm6, float kterm4) {
  const float ce = R == Rule::kAbsMax ? 0.0f : 7.62939453125e-06f;
  return fma_rn(num::add(e6, e4), ce, num::add(kterm6, kterm4));
}

// RN(t / d) for t = 0 or |t| in [2^-100, 2^120], d = 6 * bound (1536 or 2688), rd = RN(1/d)
// (Markstein: q = RN(t rd) is faithful, r = t - q d exact, RN(q + r rd) correctly rounded).
F46_HD float div_by(float t, float d, float rd) {
  const float q = num::mul(t, rd);
  return fma_rn(fma_rn(-q, d, t), rd, q);
}
// RN(b / 6) by Markstein as div_by, for b = 0 or b >= 2^-100 (div6_fast_ok; checked for every
// float up to FLT_MAX; it fails only for b < 2^-125); div6: the true division below that.
F46_HD bool div6_fast_ok(float b) { return b == 0.0f || b >= 7.88860905e-31f; }
F46_HD float div6_fast(float b) { return div_by(b, 6.0f, 0.16666667163372039795f); }
F46_HD float div6(float b) {
  if (!(b >= 7.88860905e-31f)) return num::div(b, 6.0f);
  return div6_fast(b);
}

// Approximate error (quantize_block.cuh) of one candidate: grid values g of |x| * inv,
// K = RN(RN(sf A) / (6 bound)); d' = RN(g K - |x|).
// MAE sums four interleaved partial sums (elements c, c+4, c+8, c+12), then pairwise: a depth of
// 5 roundings instead of 15 (more independent work per thread; the bound below is derived for
// 15 and covers it).
template <Rule R>
F46_HD float approx_error(const float* x, const float* g, float k) {
  if constexpr (R == Rule::kMAE) {
    float s[4];
    for (int c = 0; c < 4; ++c) {
      s[c] = num::add(fabs_(fma_rn(g[c], k, -fabs_(x[c]))),
                      fabs_(fma_rn(g[c + 4], k, -fabs_(x[c + 4]))));
      s[c] = num::add(s[c], fabs_(fma_rn(g[c + 8], k, -fabs_(x[c + 8]))));
      s[c] = num::add(s[c], fabs_(fma_rn(g[c + 12], k, -fabs_(x[c + 12]))));
    }
    return num::add(num::add(s[0], s[1]), num::add(s[2], s[3]));
  }
  float err = 0.0f;
  for (int i = 0; i < 16; ++i) {
    const float d = fma_rn(g[i], k, -fabs_(x[i]));
    if constexpr (R == Rule::kMSE)
      err = fma_rn(d, d, err);
    else
      err = fabs_(d) > err ? fabs_(d) : err;  // abs_max; no NaN here
  }
  return err;
}
// Exact error (N3.3) from the grid values when C1 and C2 hold: with g = 2^e m (m = 1 or 1.5),
// val = E * vm exactly, E = g without its mantissa bit (2^e or 0), vm = v1 or v15.
// With scaled grid values (round_to_grid_s) pass g_unit = 64: E and v1, v15 are scaled back
// by powers of two, exactly.
template <Rule R>
F46_HD float exact_error(const float* x, const float* g, float sf, float amax, float d, float rd,
                         float g_unit = 1.0f) {
  const float v1 = num::mul(div_by(num::mul(sf, amax), d, rd), g_unit);
  const float v15 = num::mul(div_by(num::mul(num::mul(1.5f, sf), amax), d, rd), g_unit);
  float err = 0.0f;
  for (int i = 0; i < 16; ++i) {
    const uint32_t gb = num::bits(g[i]), mb = gb & 0x400000u;  // mantissa bit: 1.5, 3, 6
    const float dd = fma_rn(num::from_bits(gb - mb), mb ? v15 : v1, -fabs_(x[i]));
    if constexpr (R == Rule::kMSE)
      err = num::add(err, num::mul(dd, dd));
    else if constexpr (R == Rule::kAbsMax)
      err = num::max_keep_nan(err, fabs_(dd));
    else
      err = num::add(err, fabs_(dd));
  }
  return err;
}

}  // namespace f46::cuda::grid
