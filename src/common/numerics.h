// The scalar numerics contract of docs/numerics.md, written once for the CPU reference and the
// CUDA kernels (host + device inline functions). Every operation is a separately rounded FP32
// operation (no FMA contraction): on the device through the __f*_rn intrinsics, on the host
// because the library is compiled with -ffp-contract=off.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "f46/quantize.h"

#if defined(__CUDACC__)
#define F46_HD __host__ __device__ __forceinline__
#define F46_HD_NOINLINE __host__ __device__ __noinline__  // rare paths kept out of hot loops
#else
#define F46_HD inline
#define F46_HD_NOINLINE inline
#endif

namespace f46::num {

inline constexpr float kFltMax = 3.40282346638528859811704183484516925e+38f;
inline constexpr float kE4M3Max = 448.0f;
inline constexpr uint8_t kE4M3NaN = 0x7F;

// ---- bit casts and unfused arithmetic (N1) ------------------------------------------------
F46_HD uint32_t bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
#endif
}
F46_HD float from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, 4);
  return x;
#endif
}
#if defined(__CUDA_ARCH__)
F46_HD float mul(float a, float b) { return __fmul_rn(a, b); }
F46_HD float add(float a, float b) { return __fadd_rn(a, b); }
F46_HD float sub(float a, float b) { return __fsub_rn(a, b); }
F46_HD float div(float a, float b) { return __fdiv_rn(a, b); }
#else
F46_HD float mul(float a, float b) { return a * b; }
F46_HD float add(float a, float b) { return a + b; }
F46_HD float sub(float a, float b) { return a - b; }
F46_HD float div(float a, float b) { return a / b; }
#endif
// a * b + c with one rounding (the contract's explicit fused operations, e.g. N13).
F46_HD float fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
F46_HD float abs(float x) { return from_bits(bits(x) & 0x7FFFFFFFu); }
F46_HD bool is_nan(float x) { return x != x; }

// min(x, bound) that keeps a NaN x (fminf would drop it; N9).
F46_HD float min_keep_nan(float x, float bound) { return x > bound ? bound : x; }
// max(a, b) that returns NaN when either is NaN.
F46_HD float max_keep_nan(float a, float b) {
  if (is_nan(a)) return a;
  return (is_nan(b) || b > a) ? b : a;
}
// Amax accumulation on |x| bit patterns: for non-negative floats the unsigned order is the float
// order and every NaN pattern is above +Inf, so an integer max propagates NaN (N9).
F46_HD uint32_t abs_bits(float x) { return bits(x) & 0x7FFFFFFFu; }

// ---- E4M3 (N1.3) ---------------------------------------------------------------------------
// Round a non-negative (or NaN) float to E4M3, nearest-even, saturating at 448.
F46_HD uint8_t e4m3_from_float(float x) {
  if (is_nan(x)) return kE4M3NaN;
  if (!(x < kE4M3Max)) return 0x7E;  // 448
  if (x < 0.015625f) {               // below 2^-6: sub-normal grid of 2^-9
#if defined(__CUDA_ARCH__)
    return static_cast<uint8_t>(rintf(x * 512.0f));
#else
    return static_cast<uint8_t>(__builtin_rintf(x * 512.0f));
#endif
  }
  uint32_t u = bits(x);
  u = u + 0x7FFFFu + ((u >> 20) & 1u);  // round mantissa to 3 bits, ties to even
  const uint32_t e = (u >> 23) - 127u + 7u;
  const uint32_t m = (u >> 20) & 7u;
  return static_cast<uint8_t>((e << 3) | m);
}
F46_HD float e4m3_to_float(uint8_t b) {
  const uint32_t e = (b >> 3) & 15u, m = b & 7u;
  float v;
  if (e == 15u && m == 7u) {
    v = from_bits(0x7FC00000u);
  } else if (e == 0u) {
    v = static_cast<float>(m) * 0.001953125f;  // m * 2^-9, exact
  } else {
    v = from_bits(((e - 7u + 127u) << 23) | (m << 20));
  }
  return (b & 0x80u) ? -v : v;
}

// ---- E2M1 (N1.1) ---------------------------------------------------------------------------
F46_HD float e2m1_value(uint8_t code) {
  const uint32_t mag = code & 7u;
  // 0, 0.5, 1, 1.5, 2, 3, 4, 6
  const float v = mag < 4u ? static_cast<float>(mag) * 0.5f
                           : (mag == 7u ? 6.0f : static_cast<float>(mag - 2u));
  return (code & 8u) ? -v : v;
}
// Nearest-even E2M1 code of v in [-6, 6] (NaN gives the code of 6 with v's sign).
F46_HD uint8_t e2m1_from_float(float v) {
  const float a = abs(v);
  uint8_t c;
  if (a <= 0.25f) c = 0;
  else if (a < 0.75f) c = 1;
  else if (a <= 1.25f) c = 2;
  else if (a < 1.75f) c = 3;
  else if (a <= 2.5f) c = 4;
  else if (a < 3.5f) c = 5;
  else if (a <= 5.0f) c = 6;
  else c = 7;
  return static_cast<uint8_t>(c | ((bits(v) >> 28) & 8u));
}
F46_HD float clamp6(float v) { return v > 6.0f ? 6.0f : (v < -6.0f ? -6.0f : v); }
// Sign bit (code bit 3) of the code of x under the inverse scale inv (N5): x's sign, except
// that a non-NaN x under a NaN inv (a NaN scale byte or global amax) gives +. Taken from x, not
// from the product x * inv: on x86 the sign of a NaN product with two NaN operands is that of
// whichever operand the compiler placed first, so it differed between toolchains.
F46_HD uint32_t code_sign(float x, float inv) {
  return (is_nan(inv) && !is_nan(x)) ? 0u : (bits(x) >> 28) & 8u;
}

// ---- Philox4x32-10 and stochastic rounding (N6) --------------------------------------------
struct U32x4 {
  uint32_t v[4];
};
F46_HD uint32_t mulhi32(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}
F46_HD U32x4 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                           uint32_t k1) {
  for (int i = 0; i < 10; ++i) {
    const uint32_t hi0 = mulhi32(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const uint32_t hi1 = mulhi32(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return U32x4{{c0, c1, c2, c3}};
}
// The 16 random bits of element `idx` (N6): counter (idx/8, offset), key seed; half-word idx%2
// (low half first) of word (idx%8)/2. One Philox call serves 8 consecutive elements.
F46_HD uint32_t random_bits(uint64_t seed, uint64_t offset, uint64_t idx) {
  const uint64_t q = idx >> 3;
  const U32x4 r = philox4x32_10(static_cast<uint32_t>(q), static_cast<uint32_t>(q >> 32),
                                static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32),
                                static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return (r.v[(idx >> 1) & 3] >> (16 * (idx & 1))) & 0xFFFFu;
}
// Stochastic E2M1 code of v in [-6, 6]: |v| goes up to the next grid point with probability
// (|v| - lo) / (hi - lo), decided by u = r * 2^-16 < p for the 16 random bits r < 2^16.
F46_HD uint8_t e2m1_from_float_stochastic(float v, uint32_t r) {
  const float a = abs(v);
  uint8_t lo;
  if (is_nan(a) || a >= 6.0f) lo = 7;
  else if (a < 2.0f) lo = static_cast<uint8_t>(static_cast<int>(a * 2.0f));  // exact floor
  else if (a < 4.0f) lo = static_cast<uint8_t>(static_cast<int>(a) + 2);
  else lo = 6;
  uint8_t c = lo;
  if (lo < 7) {
    const float glo = e2m1_value(lo), ghi = e2m1_value(static_cast<uint8_t>(lo + 1));
    if (a != glo) {
      const float p = div(sub(a, glo), sub(ghi, glo));
      const float u = mul(static_cast<float>(r & 0xFFFFu), 1.52587890625e-05f);  // 2^-16
      if (u < p) c = static_cast<uint8_t>(lo + 1);
    }
  }
  return static_cast<uint8_t>(c | ((bits(v) >> 28) & 8u));
}

// ---- Random Hadamard transform of 16 values (N7) --------------------------------------------
// y = 0.25 * H16 diag(s) x in FP32, H16[i][j] = (-1)^popc(i&j) (Sylvester order), computed by
// the butterfly order of rht16 below.
F46_HD uint32_t rht_sign_mask() { return 0xD7E8u; }  // bit j set where s[j] = -1
// Signs, then the fast Walsh-Hadamard transform in four stages of sums and differences
// (stage h = 8, 4, 2, 1: elements j and j + h of each 2h-block become their sum and difference),
// then * 0.25. 64 additions instead of 240; the same function on the CPU and the GPU.
F46_HD void rht16(const float* x, float* y) {
  float v[16];
  for (int j = 0; j < 16; ++j) v[j] = ((rht_sign_mask() >> j) & 1u) ? -x[j] : x[j];
  for (int h = 8; h >= 1; h >>= 1)
    for (int j = 0; j < 16; ++j)
      if ((j & h) == 0) {
        const float a = v[j], b = v[j + h];
        v[j] = add(a, b);
        v[j + h] = sub(a, b);
      }
  for (int i = 0; i < 16; ++i) y[i] = mul(v[i], 0.25f);
}

// ---- Global scales (N2) -------------------------------------------------------------------
F46_HD float encode_scale(float amax, float bound) {
  float s = div(mul(bound, 6.0f), amax);
  s = min_keep_nan(s, kFltMax);
  if (amax == 0.0f || s == 0.0f) s = 1.0f;
  return s;
}
// Dequantization factor of one block (N8).
F46_HD float decode_factor(uint8_t scale, float amax, float bound) {
  return mul(mul(e4m3_to_float(scale), amax), div(1.0f, mul(6.0f, bound)));
}

// ---- Block scales and codes (N3, N4) ------------------------------------------------------
F46_HD uint8_t scale_map6(float block_amax, float s_enc) {
  const float base = mul(div(block_amax, 6.0f), s_enc);
  return e4m3_from_float(min_keep_nan(base, kE4M3Max));
}
F46_HD uint8_t scale_map4(float block_amax, float s_enc) {
  const float base = mul(div(block_amax, 6.0f), s_enc);
  return e4m3_from_float(min_keep_nan(mul(base, 1.5f), kE4M3Max));
}
F46_HD uint8_t scale_gradient(float block_amax, float s_enc) {
  return e4m3_from_float(min_keep_nan(mul(block_amax, mul(s_enc, 1.0f / 6.0f)), kE4M3Max));
}
// Reciprocal applied to x before rounding; s_dec = 1 / s_enc.
F46_HD float inverse_scale(uint8_t scale, float s_dec) {
  return min_keep_nan(div(1.0f, mul(e4m3_to_float(scale), s_dec)), kFltMax);
}
F46_HD uint8_t code_rne(float x, float inv) { return e2m1_from_float(clamp6(mul(x, inv))); }

// Error of one 16-element row under a candidate scale (N3.3): element order, each step rounded.
F46_HD float row_error(const float* x, uint8_t scale, float s_dec, float amax, float bound,
                       Rule rule) {
  const float inv = inverse_scale(scale, s_dec);
  const float sf = e4m3_to_float(scale);
  const float denom = mul(6.0f, bound);
  float err = 0.0f;
  for (int i = 0; i < 16; ++i) {
    const float q = e2m1_value(code_rne(x[i], inv));
    const float val = div(mul(mul(q, sf), amax), denom);
    const float d = sub(val, x[i]);
    if (rule == Rule::kMSE) err = add(err, mul(d, d));
    else if (rule == Rule::kAbsMax) err = max_keep_nan(err, abs(d));
    else err = add(err, abs(d));
  }
  return err;
}
// Combine per-row errors of a 16x16 tile with the pairwise tree (N3.4); abs_max takes the max.
F46_HD float tile_error(float* e, Rule rule) {
  for (int w = 8; w >= 1; w >>= 1)
    for (int i = 0; i < w; ++i)
      e[i] = rule == Rule::kAbsMax ? max_keep_nan(e[i], e[i + w]) : add(e[i], e[i + w]);
  return e[0];
}
// Map-to-4 wins only on a strictly smaller error (N3.5).
F46_HD bool pick_map4(float err4, float err6) { return err4 < err6; }

}  // namespace f46::num
