// Scalar helpers of the CUDA quantizer and the reference path of one block: the formulas of
// common/numerics.h verbatim (plus exact conversion rewrites), used for the blocks the fast
// path of quantize_block.cuh does not admit (NaN/Inf, E4M3 sub-normal or saturated scales,
// extreme global amaxes). The reference functions are not inlined: they are rare and large.
// Host + device: tests/cpp/cuda/test_cuda_lean_block.cpp runs them (with quantize_block.cuh's
// fast-path pieces and lean_bf16_block.cuh) on the CPU.
#pragma once

#include <cmath>
#include <cstdint>

#if !defined(__CUDACC__)
#include <cuda_runtime.h>  // float2 and make_float2 for host compilers (tests/cpp/cuda)
#endif

#include "common/numerics.h"
#include "cuda/quantize/grid_rounding.h"
#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

struct BlockCodes {
  uint64_t codes;  // 16 E2M1 codes, element i in bits [4i, 4i+4) (N1.2)
  uint8_t scale;   // E4M3 byte
};

// 16 values passed by value to the out-of-line reference functions (in registers).
struct Block16 {
  float v[16];
};

// E4M3 byte -> float without integer-to-float conversions (those run at 1/8 of the FP32 rate):
// equal to num::e4m3_to_float for every byte. Sub-normals m * 2^-9 = bits(m << 20) * 2^120.
F46_HD float e4m3_value(uint8_t b) {
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
F46_HD float e2m1_decode(uint32_t code) {
  const float mag = num::mul(num::from_bits((code & 7u) << 22), 8.507059173023462e+37f);  // 2^126
  return num::from_bits(num::bits(mag) | ((code & 8u) << 28));
}
// num::inverse_scale with e4m3_value.
F46_HD float inverse_of(uint8_t scale, float s_dec) {
  return num::min_keep_nan(num::div(1.0f, num::mul(e4m3_value(scale), s_dec)), num::kFltMax);
}

// The global amax of a block with its encode/decode scales (N2), reused while it is unchanged.
struct GlobalScale {
  float amax, s_enc, s_dec;
};
F46_HD GlobalScale global_scale(float amax, float bound) {
  const float s_enc = num::encode_scale(amax, bound);
  return GlobalScale{amax, s_enc, num::div(1.0f, s_enc)};
}
// Recomputes `g` only when the amax bits change (per-tensor scope: once per thread).
F46_HD void update_global_scale(GlobalScale& g, float amax, float bound) {
  if (num::bits(amax) != num::bits(g.amax)) g = global_scale(amax, bound);
}

// Per-call constants of the 4/6 error (N3.3).
struct ErrorConsts {
  float bound, denom, rdenom;  // denom = 6*bound, rdenom = RN(1/denom)
};

F46_HD ErrorConsts error_consts(float bound) {
  const float denom = num::mul(6.0f, bound);
  return ErrorConsts{bound, denom, num::div(1.0f, denom)};
}

// RN(t / c.denom) for t = 0 or |t| in [2^-100, 2^120] (grid::div_by).
F46_HD float div_denom(float t, const ErrorConsts& c) { return grid::div_by(t, c.denom, c.rdenom); }

// |v| rounded to the E2M1 grid (N3.2, N5): min(|v|, 6) (NaN -> 6), then nearest-even.
F46_HD float e2m1_round_abs(float v_abs) {
  const float a = fminf(v_abs, 6.0f);
  const float binade = num::from_bits(num::bits(fmaxf(a, 1.0f)) & 0x7F800000u);  // 1, 2 or 4
  const float magic = num::mul(binade, 4194304.0f);  // 2^22 * binade: its ulp is the grid step
  return num::sub(num::add(a, magic), magic);
}
// 3-bit magnitude code of a value of the E2M1 grid: q * 2^-126 has the E2M1 bits at bit 22.
F46_HD uint32_t e2m1_magnitude(float grid_value) {
  return num::bits(num::mul(grid_value, 1.17549435082228750797e-38f)) >> 22;
}
template <QuantMode M>
constexpr bool is_error_rule() {  // a 4/6 decision by the candidates' errors
  return M == QuantMode::kMAE || M == QuantMode::kMSE || M == QuantMode::kAbsMax;
}
template <QuantMode M>
constexpr Rule rule_of() {
  return M == QuantMode::kMSE ? Rule::kMSE : (M == QuantMode::kAbsMax ? Rule::kAbsMax : Rule::kMAE);
}

// ---- the reference path (out of line) -----------------------------------------------------
// Errors (N3.3) of both candidates of one row: x = err6, y = err4.
static F46_HD_NOINLINE float2 reference_errors(const Block16 x, uint8_t s6, uint8_t s4, float s_dec,
                                               float amax, float bound, Rule rule) {
  return make_float2(num::row_error(x.v, s6, s_dec, amax, bound, rule),
                     num::row_error(x.v, s4, s_dec, amax, bound, rule));
}
// Round-to-nearest-even codes (N3.2, N5) of 16 values under the reciprocal scale `inv`.
static F46_HD_NOINLINE uint64_t reference_codes(const Block16 x, float inv) {
  uint64_t codes = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const float g = e2m1_round_abs(num::mul(num::abs(x.v[i]), inv));
    codes |= static_cast<uint64_t>(e2m1_magnitude(g) | num::code_sign(x.v[i], inv)) << (4 * i);
  }
  return codes;
}
// Sign bits (code bit 3 of each nibble) of 16 values as the reference gives them (NaN rules).
static F46_HD_NOINLINE uint64_t reference_signs(const Block16 x, float inv) {
  uint64_t s = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i) s |= static_cast<uint64_t>(num::code_sign(x.v[i], inv)) << (4 * i);
  return s;
}

}  // namespace f46::cuda
