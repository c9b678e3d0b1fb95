// Quantization of one 16-element block (or one row of a 16x16 tile, cooperating with the 15
// other rows of its tile in the same 16-lane half-warp). Every value is bitwise the CPU
// reference's: the reference formulas of common/numerics.h, with three exact rewrites that
// the CPU check tests (tests/cpp/cuda/test_cuda_quantize*.cpp):
//   - E2M1 rounding of |v| <= 6 by a magic-number add (round to the grid step of |v|'s binade,
//     ties to even), equal to num::e2m1_from_float for every float (exhaustively checked);
//   - the error division by 6*bound as a Markstein correction step (correctly rounded for
//     |t| in [2^-100, 2^120]; blocks whose terms may leave that range use num::row_error);
//   - the error on |x| instead of x (|q*s*a/d - x| is symmetric in the sign).
#pragma once

#include <cstdint>

#include "common/numerics.h"
#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

struct BlockCodes {
  uint64_t codes;  // 16 E2M1 codes, element i in bits [4i, 4i+4) (N1.2)
  uint8_t scale;   // E4M3 byte
};

// E4M3 byte -> float without integer-to-float conversions (those run at 1/8 of the FP32 rate):
// equal to num::e4m3_to_float for every byte. Sub-normals m * 2^-9 = bits(m << 20) * 2^120.
__device__ __forceinline__ float e4m3_value(uint8_t b) {
  const uint32_t e = (b >> 3) & 15u, m = b & 7u;
  float v;
  if (e == 15u && m == 7u)
    v = num::from_bits(0x7FC00000u);
  else if (e == 0u)
    v = num::mul(num::from_bits(m << 20), 1.329227995784916e+36f);  // 2^120
  else
    v = num::from_bits(((e + 120u) << 23) | (m << 20));
  return (b & 0x80u) ? -v : v;
}
// E2M1 code -> value, exact, no conversions: (code & 7) << 22 are the float bits of value*2^-126.
__device__ __forceinline__ float e2m1_decode(uint32_t code) {
  const float mag = num::mul(num::from_bits((code & 7u) << 22), 8.507059173023462e+37f);  // 2^126
  return num::from_bits(num::bits(mag) | ((code & 8u) << 28));
}
// num::inverse_scale with e4m3_value.
__device__ __forceinline__ float inverse_of(uint8_t scale, float s_dec) {
  return num::min_keep_nan(num::div(1.0f, num::mul(e4m3_value(scale), s_dec)), num::kFltMax);
}

// The global amax of a block with its encode/decode scales (N2), reused while it is unchanged.
struct GlobalScale {
  float amax, s_enc, s_dec;
};
__device__ __forceinline__ GlobalScale global_scale(float amax, float bound) {
  const float s_enc = num::encode_scale(amax, bound);
  return GlobalScale{amax, s_enc, num::div(1.0f, s_enc)};
}
// Recomputes `g` only when the amax bits change (per-tensor scope: once per thread).
__device__ __forceinline__ void update_global_scale(GlobalScale& g, float amax, float bound) {
  if (num::bits(amax) != num::bits(g.amax)) g = global_scale(amax, bound);
}

// Per-call constants of the 4/6 error (N3.3).
struct ErrorConsts {
  float bound, denom, rdenom;  // denom = 6*bound, rdenom = RN(1/denom)
};

// |v| rounded to the E2M1 grid (N3.2, N5): min(|v|, 6) (NaN -> 6), then nearest-even.
__device__ __forceinline__ float e2m1_round_abs(float v_abs) {
  const float a = fminf(v_abs, 6.0f);
  const float binade = num::from_bits(num::bits(fmaxf(a, 1.0f)) & 0x7F800000u);  // 1, 2 or 4
  const float magic = num::mul(binade, 4194304.0f);  // 2^22 * binade: its ulp is the grid step
  return num::sub(num::add(a, magic), magic);
}
// 3-bit magnitude code of a value of the E2M1 grid: q * 2^-126 has the E2M1 bits at bit 22.
__device__ __forceinline__ uint32_t e2m1_magnitude(float grid_value) {
  return num::bits(num::mul(grid_value, 1.17549435082228750797e-38f)) >> 22;
}
// Sign bit (as code bit 3) of x * inv as the CPU reference computes it: x86 multiplies return
// the first NaN operand, so a NaN x keeps its sign and a NaN inv gives +NaN (N9).
__device__ __forceinline__ uint32_t code_sign(float x, float inv) {
  return (num::is_nan(inv) && !num::is_nan(x)) ? 0u : (num::bits(x) >> 28) & 8u;
}

// RN(t / c.denom) for t = 0 or |t| in [2^-100, 2^120] (Markstein: y = RN(1/d), q = RN(t*y)
// faithful, r = t - q*d exact, RN(q + r*y) correctly rounded; no midpoint quotients exist).
__device__ __forceinline__ float div_denom(float t, const ErrorConsts& c) {
  const float q = num::mul(t, c.rdenom);
  const float r = __fmaf_rn(-q, c.denom, t);
  return __fmaf_rn(r, c.rdenom, q);
}

// Whether the fast error of a candidate is exact for this block: every product
// t = (q * sf) * amax is 0 or inside the Markstein range.
__device__ __forceinline__ bool fast_error_ok(float sf, float amax) {
  if (sf == 0.0f || amax == 0.0f) return num::abs(amax) < num::kFltMax || amax == 0.0f;
  const float lo = num::mul(num::mul(0.5f, sf), amax), hi = num::mul(num::mul(6.0f, sf), amax);
  return lo >= 7.88860905e-31f && hi <= 1.32922800e+36f;  // 2^-100, 2^120
}

// Error of one candidate over 16 values (N3.3) from |x|; ar[] receives the rounded |x*inv|.
template <QuantMode M>
__device__ __forceinline__ float candidate_error(const float (&x)[16], float inv, float sf,
                                                 float amax, const ErrorConsts& c,
                                                 float (&ar)[16]) {
  float err = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const float ax = num::abs(x[i]);
    ar[i] = e2m1_round_abs(num::mul(ax, inv));
    const float val = div_denom(num::mul(num::mul(ar[i], sf), amax), c);
    const float d = num::sub(val, ax);
    if constexpr (M == QuantMode::kMSE)
      err = num::add(err, num::mul(d, d));
    else if constexpr (M == QuantMode::kAbsMax)
      err = num::max_keep_nan(err, num::abs(d));
    else
      err = num::add(err, num::abs(d));
  }
  return err;
}

template <QuantMode M>
constexpr Rule rule_of() {
  return M == QuantMode::kMSE ? Rule::kMSE : (M == QuantMode::kAbsMax ? Rule::kAbsMax : Rule::kMAE);
}

// 16x16 tile: combine the 16 row errors of a half-warp with the pairwise tree of N3.4
// (lane i adds lane i+w for w = 8, 4, 2, 1) and broadcast lane 0's total.
template <QuantMode M>
__device__ __forceinline__ float tile_error_tree(float e, unsigned half_mask) {
#pragma unroll
  for (int w = 8; w >= 1; w >>= 1) {
    const float o = __shfl_down_sync(half_mask, e, w, 16);
    e = M == QuantMode::kAbsMax ? num::max_keep_nan(e, o) : num::add(e, o);
  }
  return __shfl_sync(half_mask, e, 0, 16);
}

// Quantize 16 values x (already RHT-transformed when enabled) with global amax `amax`.
// kTile: the block is one row of a 16x16 tile held by the 16 lanes of this half-warp
// (half_mask); the tile shares one scale (N1.4, N3.4). `sr_index`: element index of x[0] for
// stochastic rounding (N6).
template <QuantMode M, bool kTile>
__device__ __forceinline__ BlockCodes quantize_block(const float (&x)[16], const GlobalScale& g,
                                                     const ErrorConsts& c, bool stochastic,
                                                     uint64_t seed, uint64_t offset,
                                                     uint64_t sr_index, unsigned half_mask) {
  const float amax = g.amax;
  uint32_t mb = 0;  // N9: integer max of |x| bits propagates NaN
#pragma unroll
  for (int i = 0; i < 16; ++i) mb = max(mb, num::abs_bits(x[i]));
  if constexpr (kTile) {
#pragma unroll
    for (int w = 8; w >= 1; w >>= 1) mb = max(mb, __shfl_xor_sync(half_mask, mb, w, 16));
  }
  const float block_amax = num::from_bits(mb);
  const float s_enc = g.s_enc, s_dec = g.s_dec;

  uint8_t scale;
  float ar[16];
  float inv_chosen = 0.0f;
  bool have_ar = false;
  if constexpr (M == QuantMode::kGradient) {
    scale = num::scale_gradient(block_amax, s_enc);  // N4
  } else if constexpr (M == QuantMode::kAll6) {
    scale = num::scale_map6(block_amax, s_enc);
  } else if constexpr (M == QuantMode::kAll4) {
    scale = num::scale_map4(block_amax, s_enc);
  } else {
    const uint8_t s6 = num::scale_map6(block_amax, s_enc), s4 = num::scale_map4(block_amax, s_enc);
    const float sf6 = e4m3_value(s6), sf4 = e4m3_value(s4);
    const float inv6 = num::min_keep_nan(num::div(1.0f, num::mul(sf6, s_dec)), num::kFltMax);
    const float inv4 = num::min_keep_nan(num::div(1.0f, num::mul(sf4, s_dec)), num::kFltMax);
    float ar6[16], ar4[16];
    float e6, e4;
    if (fast_error_ok(sf6, amax) && fast_error_ok(sf4, amax)) {
      e6 = candidate_error<M>(x, inv6, sf6, amax, c, ar6);
      e4 = candidate_error<M>(x, inv4, sf4, amax, c, ar4);
    } else {  // the reference, verbatim
      e6 = num::row_error(x, s6, s_dec, amax, c.bound, rule_of<M>());
      e4 = num::row_error(x, s4, s_dec, amax, c.bound, rule_of<M>());
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        ar6[i] = e2m1_round_abs(num::mul(num::abs(x[i]), inv6));
        ar4[i] = e2m1_round_abs(num::mul(num::abs(x[i]), inv4));
      }
    }
    if constexpr (kTile) {
      e6 = tile_error_tree<M>(e6, half_mask);
      e4 = tile_error_tree<M>(e4, half_mask);
    }
    const bool four = num::pick_map4(e4, e6);  // N3.5
    scale = four ? s4 : s6;
    inv_chosen = four ? inv4 : inv6;
#pragma unroll
    for (int i = 0; i < 16; ++i) ar[i] = four ? ar4[i] : ar6[i];
    have_ar = true;
  }
  const float inv = have_ar ? inv_chosen : inverse_of(scale, s_dec);

  uint64_t codes = 0;
  if (stochastic) {  // N6: one Philox call per 4 elements (sr_index % 4 == 0)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint64_t q = (sr_index >> 2) + k;
      const num::U32x4 r =
          num::philox4x32_10(static_cast<uint32_t>(q), static_cast<uint32_t>(q >> 32),
                             static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32),
                             static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int i = 4 * k + j;
        const float v = num::clamp6(num::mul(num::abs(x[i]), inv));
        const uint32_t mag = num::e2m1_from_float_stochastic(v, r.v[j]) & 7u;
        codes |= static_cast<uint64_t>(mag | code_sign(x[i], inv)) << (4 * i);
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const float g = have_ar ? ar[i] : e2m1_round_abs(num::mul(num::abs(x[i]), inv));
      codes |= static_cast<uint64_t>(e2m1_magnitude(g) | code_sign(x[i], inv)) << (4 * i);
    }
  }
  return BlockCodes{codes, scale};
}

}  // namespace f46::cuda
