// Quantization of one 16-element block (or one row of a 16x16 tile, cooperating with the 15
// other rows of its tile in the same 16-lane half-warp), bitwise equal to the CPU reference
// (tests/cpp/cuda/test_cuda_quantize*.cpp). The fast path, per element and candidate:
//   v = |x| * (inv 2^-6); g = round_to_grid_s(v) (grid_rounding.h, 3 instructions, no clamp), the
// grid value in units of 2^-6, whose E4M3 byte is 4 * its E2M1 code: one conversion per two
// elements gives the codes of each candidate; the chosen candidate's are kept and the signs
// come from x (nibble bit 3). K below is scaled by 64 to match g; the bounds use K.
//
// 4/6 decision without the exact error of every block ("approximate errors"): the error of a
// candidate only matters through the comparison err4 < err6 (N3.5). Each candidate's error is
// first computed with d' = RN(g * K - |x|) (one FMA; K = RN(RN(sf * A) / (6 bound)) is the value
// of grid point 1, while the reference rounds val = RN(RN(g * sf * A) / (6 bound)) first; the
// error uses |x| because |val - x| is symmetric in the sign). grid_rounding.h bounds
// |exact - approximate| by B (per rule); when |e4' - e6'| > B4 + B6 the exact errors compare
// the same way and cannot tie, so the decision is exact. Otherwise (rare: near-ties, constructed
// data) the exact errors are computed from the same g: with g = 2^e * m (m = 1 or 1.5),
// val = 2^e * RN(RN(m * sf * A) / (6 bound)) because scaling by 2^e commutes with RN while every
// intermediate is normal and finite, which the fast-path condition guarantees:
//   C1: RN(b * inv) < 7 for the block amax b (so every v < 7, no NaN, no Inf, inv finite);
//   C2: sf * A = 0 with A finite, or RN(sf * A) in [2^-100, 2^118].
// Blocks failing C1/C2 take the reference path (block_reference.cuh).
#pragma once

#include <cmath>
#include <cstdint>

#include "common/numerics.h"
#include "cuda/quantize/block_reference.cuh"
#include "cuda/quantize/grid_rounding.h"
#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

// ---- fast-path pieces -----------------------------------------------------------------------
F46_HD float max_nan(float a, float b) {  // NaN if either is NaN
#if defined(__CUDA_ARCH__)
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  if (a != a || b != b) return num::from_bits(0x7FFFFFFFu);  // the canonical NaN
  return std::fmax(a, b);  // max(+0, -0) may differ from the device's; no caller mixes them
#endif
}
F46_HD bool error_fast_ok(float sf, float amax) { return grid::error_fast_ok(sf, amax); }
using grid::e4m3_satfinite;
using grid::e4m3x2;
F46_HD bool e4m3x2_ok(float base) {
  return base >= 0.0f && base < 1.26765060e+30f;  // 2^100
}
// Both 4/6 candidate scale bytes (N3.1): bits 0..7 scale6, 8..15 scale4.
F46_HD uint32_t scales_4over6(float block_amax, float s_enc) {
  const float base = num::mul(grid::div6(block_amax), s_enc);
  if (e4m3x2_ok(base)) return e4m3x2(base, num::mul(base, 1.5f));
  return num::scale_map6(block_amax, s_enc) | (uint32_t{num::scale_map4(block_amax, s_enc)} << 8);
}
F46_HD uint8_t scale_one(float base) {
  return e4m3x2_ok(base) ? static_cast<uint8_t>(e4m3x2(base, 0.0f))
                         : num::e4m3_from_float(num::min_keep_nan(base, num::kE4M3Max));
}

// Per-scale-byte constants of a global amax: x = inv (N3.2), y = K = RN(RN(sf A) / (6 bound))
// when C2 holds, NaN otherwise. The kernels tabulate them per CTA for its first row's amax.
F46_HD float2 scale_entry(uint32_t s, const GlobalScale& g, const ErrorConsts& c) {
  const float sf = e4m3_value(static_cast<uint8_t>(s));
  const float inv = num::min_keep_nan(num::div(1.0f, num::mul(sf, g.s_dec)), num::kFltMax);
  const float k =
      error_fast_ok(sf, g.amax) ? div_denom(num::mul(sf, g.amax), c) : num::from_bits(0x7FC00000u);
  return make_float2(inv, k);
}
// The CTA's table of scale_entry for the 256 scale bytes (a shared array, so lookups are plain
// shared loads) and whether it holds the block's global amax; if not, each block computes its
// own entries and `entries` is never read (lean_block_own passes null).
struct TableRef {
  const float2* entries;
  bool valid;
};
F46_HD float2 scale_lookup(TableRef tab, uint32_t s, const GlobalScale& g, const ErrorConsts& c) {
  return tab.valid ? tab.entries[s] : scale_entry(s, g, c);
}

template <QuantMode M>
F46_HD float approx_bound(float e, float k, float n) {
  if constexpr (M == QuantMode::kMSE) return grid::approx_bound_mse(e, k, n);
  if constexpr (M == QuantMode::kAbsMax) return grid::approx_bound_absmax(k);
  return grid::approx_bound_mae(e, k, n);
}

#if defined(__CUDACC__)  // device only from here to the #endif: byte permutes, shuffles
// Bit 4i+3 = sign bit of x[i], i < 8: the top bytes of x[0], x[2], x[4], x[6] (even nibbles)
// and x[1], x[3], x[5], x[7] (odd nibbles) gathered by byte permutes, then masked.
__device__ __forceinline__ uint32_t sign_nibbles8(const float* x) {
  const uint32_t e0 = __byte_perm(num::bits(x[0]), num::bits(x[2]), 0x0073);
  const uint32_t e1 = __byte_perm(num::bits(x[4]), num::bits(x[6]), 0x0073);
  const uint32_t o0 = __byte_perm(num::bits(x[1]), num::bits(x[3]), 0x0073);
  const uint32_t o1 = __byte_perm(num::bits(x[5]), num::bits(x[7]), 0x0073);
  const uint32_t even = __byte_perm(e0, e1, 0x5410), odd = __byte_perm(o0, o1, 0x5410);
  return ((even >> 4) & 0x08080808u) | (odd & 0x80808080u);
}
__device__ __forceinline__ uint64_t sign_nibbles(const float (&x)[16]) {
  return sign_nibbles8(x) | (static_cast<uint64_t>(sign_nibbles8(x + 8)) << 32);
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

// Stochastic codes (N6) of 16 values under `inv`, element index of x[0] `sr_index` (% 8 == 0):
// two Philox calls, element 8k + 2j + h taking half-word h of word j of call k.
// lo = the grid value below a = min(|x| inv, 6) (floor_to_grid), step = b/2; the reference's
// u < (a - lo) / step is u * step < a - lo, both sides exact (u * step = r * b * 2^-17).
__device__ __forceinline__ uint64_t stochastic_codes(const float (&x)[16], float inv, uint64_t seed,
                                                     uint64_t offset, uint64_t sr_index) {
  uint64_t codes = 0;
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const uint64_t q = (sr_index >> 3) + k;
    const num::U32x4 r =
        num::philox4x32_10(static_cast<uint32_t>(q), static_cast<uint32_t>(q >> 32),
                           static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32),
                           static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int i = 8 * k + e;
      const uint32_t r16 = (r.v[e / 2] >> (16 * (e % 2))) & 0xFFFFu;
      const float a = fminf(num::mul(fabsf(x[i]), inv), 6.0f);  // NaN -> 6
      const float b = grid::binade(a), lo = grid::floor_to_grid(a);
      const float u_step = num::mul(__uint2float_rn(r16), num::mul(b, grid::k2m17));
      const uint32_t c = grid::code_bits22(lo) + (u_step < num::sub(a, lo) ? (1u << 22) : 0u);
      codes |= static_cast<uint64_t>(c >> 22) << (4 * i);
    }
  }
  return codes;
}

// Block amax (N9) with a NaN-propagating max: equal to the integer max of the |x| bits except
// for the NaN payload, which no output depends on (a NaN block amax gives scale 0x7F). kTile:
// the max over the 16 rows of the half-warp's tile.
template <bool kTile>
__device__ __forceinline__ float block_amax(const float (&x)[16], unsigned half_mask) {
  float m8[8];  // a tree (depth 4, not 15)
#pragma unroll
  for (int i = 0; i < 8; ++i) m8[i] = max_nan(fabsf(x[i]), fabsf(x[i + 8]));
#pragma unroll
  for (int i = 0; i < 4; ++i) m8[i] = max_nan(m8[i], m8[i + 4]);
  float b = max_nan(max_nan(m8[0], m8[2]), max_nan(m8[1], m8[3]));
  if constexpr (kTile) {
#pragma unroll
    for (int w = 8; w >= 1; w >>= 1) b = max_nan(b, __shfl_xor_sync(half_mask, b, w, 16));
  }
  return b;
}

#else
template <QuantMode M>
float tile_error_tree(float e, unsigned half_mask);  // tiles: device only (never defined here)
#endif

// Scaled grid values (grid_rounding.h round_to_grid_s) of |x| * inv, inv_s = inv * 2^-6.
F46_HD void grid_values_s(const float (&x)[16], float inv_s, float (&g)[16]) {
#pragma unroll
  for (int i = 0; i < 16; ++i) g[i] = grid::round_to_grid_s(num::mul(fabsf(x[i]), inv_s));
}
F46_HD uint64_t pack_codes_s(const float (&g)[16]) {
  return grid::pack_codes8_s(g) | (static_cast<uint64_t>(grid::pack_codes8_s(g + 8)) << 32);
}

// The reference path of one block of an error rule (N3): the scales and both errors by the
// formulas of common/numerics.h, the tile tree, the choice and the codes. Uniform over a tile.
template <QuantMode M, bool kTile>
F46_HD BlockCodes reference_block_4over6(const float (&x)[16], float b, const GlobalScale& g,
                                         const ErrorConsts& c, unsigned half_mask) {
  const uint8_t s6 = num::scale_map6(b, g.s_enc), s4 = num::scale_map4(b, g.s_enc);
  Block16 xb;
#pragma unroll
  for (int i = 0; i < 16; ++i) xb.v[i] = x[i];
  const float2 e = reference_errors(xb, s6, s4, g.s_dec, g.amax, c.bound, rule_of<M>());
  float e6 = e.x, e4 = e.y;
  if constexpr (kTile) {
    e6 = tile_error_tree<M>(e6, half_mask);
    e4 = tile_error_tree<M>(e4, half_mask);
  }
  const uint8_t scale = num::pick_map4(e4, e6) ? s4 : s6;
  return BlockCodes{reference_codes(xb, inverse_of(scale, g.s_dec)), scale};
}

// The scale byte of the rules without a 4/6 decision: all6, all4 (N3.1) or gradient (N4).
template <QuantMode M>
F46_HD uint8_t plain_scale(float b, const GlobalScale& g) {
  if constexpr (M == QuantMode::kGradient) {
    return scale_one(num::mul(b, num::mul(g.s_enc, 1.0f / 6.0f)));
  } else {
    const uint32_t s64 = scales_4over6(b, g.s_enc);
    return static_cast<uint8_t>(M == QuantMode::kAll6 ? s64 : s64 >> 8);
  }
}

#if defined(__CUDACC__)  // device only
// Quantize 16 values x (already RHT-transformed when enabled) with global amax `g.amax`.
// kTile: the block is one row of a 16x16 tile held by the 16 lanes of this half-warp
// (half_mask); the tile shares one scale (N1.4, N3.4). `sr_index`: element index of x[0] for
// stochastic rounding (N6).
template <QuantMode M, bool kTile>
__device__ __forceinline__ BlockCodes quantize_block(const float (&x)[16], const GlobalScale& g,
                                                     const ErrorConsts& c, bool stochastic,
                                                     uint64_t seed, uint64_t offset,
                                                     uint64_t sr_index, unsigned half_mask,
                                                     TableRef tab) {
  const float b = block_amax<kTile>(x, half_mask);

  if constexpr (!is_error_rule<M>()) {
    const uint8_t scale = plain_scale<M>(b, g);
    const float inv = scale_lookup(tab, scale, g, c).x;
    Block16 xb;
#pragma unroll
    for (int i = 0; i < 16; ++i) xb.v[i] = x[i];
    if (stochastic) {
      const uint64_t mags = stochastic_codes(x, inv, seed, offset, sr_index);
      const bool clean = !num::is_nan(b) && !num::is_nan(inv);
      return BlockCodes{mags | (clean ? sign_nibbles(x) : reference_signs(xb, inv)), scale};
    }
    const float inv_s = num::mul(inv, grid::k2m6);
    if (!grid::codes_fast_ok_s(b, inv_s)) return BlockCodes{reference_codes(xb, inv), scale};
    float gv[16];
    grid_values_s(x, inv_s, gv);
    return BlockCodes{pack_codes_s(gv) | sign_nibbles(x), scale};
  } else {
    // Both candidate scales (N3.1) and their table entries; `fast`: the block meets C1 and C2
    // for both (uniform over a tile) and the scales came out of the fast formulas (b = 0 or
    // b >= 2^-100 for the Markstein b / 6, 0 <= base < 2^100 for the conversion).
    const float base = num::mul(grid::div6_fast(b), g.s_enc);
    const uint32_t s64 = e4m3x2(base, num::mul(base, 1.5f));
    const uint8_t s6 = static_cast<uint8_t>(s64), s4 = static_cast<uint8_t>(s64 >> 8);
    const float2 t6 = scale_lookup(tab, s6, g, c), t4 = scale_lookup(tab, s4, g, c);
    const float inv6 = num::mul(t6.x, grid::k2m6), inv4 = num::mul(t4.x, grid::k2m6);
    const float k6 = t6.y, k4 = t4.y;
    const bool fast = grid::div6_fast_ok(b) && e4m3x2_ok(base) && grid::codes_fast_ok_s(b, inv6) &&
                      grid::codes_fast_ok_s(b, inv4) && k6 == k6 && k4 == k4;
    // Blocks outside the fast path (NaN/Inf, extreme scales or amaxes): the reference.
    if (!fast) return reference_block_4over6<M, kTile>(x, b, g, c, half_mask);
    // Scaled grid values, approximate errors (K scaled by 64 to match), the choice (N3.5), one
    // candidate after the other (only its error and codes stay live: fewer registers). Equal
    // scales give equal errors: 6. When the approximate errors are closer than their bounds,
    // the exact ones from the grid values computed again.
    float gv[16];
    grid_values_s(x, inv6, gv);
    float e6 = grid::approx_error<rule_of<M>()>(x, gv, num::mul(k6, 64.0f));
    const uint64_t mags6 = pack_codes_s(gv);
    grid_values_s(x, inv4, gv);
    float e4 = grid::approx_error<rule_of<M>()>(x, gv, num::mul(k4, 64.0f));
    const uint64_t mags4 = pack_codes_s(gv);
    if constexpr (kTile) {
      e6 = tile_error_tree<M>(e6, half_mask);
      e4 = tile_error_tree<M>(e4, half_mask);
    }
    bool four = false;
    if (s4 != s6) {
      const float rows = kTile ? 16.0f : 1.0f;
      const float bound = num::add(approx_bound<M>(e6, k6, rows), approx_bound<M>(e4, k4, rows));
      if (!(fabsf(num::sub(e4, e6)) > bound)) {  // undecided (uniform over a tile)
        grid_values_s(x, inv6, gv);
        e6 = grid::exact_error<rule_of<M>()>(x, gv, e4m3_value(s6), g.amax, c.denom, c.rdenom,
                                             64.0f);
        grid_values_s(x, inv4, gv);
        e4 = grid::exact_error<rule_of<M>()>(x, gv, e4m3_value(s4), g.amax, c.denom, c.rdenom,
                                             64.0f);
        if constexpr (kTile) {
          e6 = tile_error_tree<M>(e6, half_mask);
          e4 = tile_error_tree<M>(e4, half_mask);
        }
      }
      four = num::pick_map4(e4, e6);
    }
    const uint64_t mags = four ? mags4 : mags6;
    return BlockCodes{mags | sign_nibbles(x), four ? s4 : s6};
  }
}

#endif  // __CUDACC__

}  // namespace f46::cuda
