// LAB KERNELS, not in the library (dev/lean_lab.cu), measured 2026-12-05 (late session, H100,
// bytewise equal to the tile kernel; bench/RESULTS.md), '16x16 weights MAE' as a fraction of copy
// against the tile kernel's 0.52 / 0.53 / 0.53:
//   - tile16_lanes_kernel (one lane per tile, three passes): 0.46 / 0.56 / 0.58 at 4 CTAs, slower
//     at 5 and 6 (less L1 for the second read);
//   - four lanes per tile ("quad"), 0.54 / 0.57 / 0.57 as first written here (commit df524bf):
//     its slow path took the register arrays by reference, so every step stored them to local
//     memory; without that it runs at 0.77 / 0.88 / 0.90 and is the library's 16x16 kernel now
//     (src/cuda/quantize/quantize_quad.cuh, dev/lean_lab.cu times it against the tile kernel).
//
// One lane per tile: The tile kernel and dev/lean_tile16.cuh (one lane per tile row) both measure
// ~0.53 of copy on an H100 for '16x16 weights MAE', against ~0.84 for the rowwise lean kernel with
// the same per-element arithmetic; in both, every tile waits on a chain of half-warp shuffles
// (the tile amax before its scales, the error trees before the choice) and writes its codes and
// scales to 16 rows in pieces narrower than a sector.
//
// Here a warp takes a strip of 16 rows x 512 columns (32 tiles side by side), lane j tile j:
//   pass 1: the tile amax from the lane's 16 rows of 32 bytes (packed bf16 maxima; the warp
//           reads 16 rows of 1 KB);
//   pass 2: the rows again (L1/L2), both candidates' grid values, approximate errors and signed
//           code words (lean_block's arithmetic), the code words to a per-warp shared slot, the
//           row errors combined by the N3.4 tree in the lane;
//   choice: as quantize_block<M, true> (bound n = 16); the tiles the fast path does not admit
//           or whose approximate errors do not decide take tile16_lanes_slow (out of line);
//   pass 3: the chosen code words from shared memory to the 16 rows (256 contiguous bytes per
//           row and warp) and the scale byte (32 contiguous bytes per row and warp).
// No shuffles, no warp barrier (each lane reads only its own shared slot). Per tensor scope,
// error rules, bf16, cols % 16 == 0, rows % 16 == 0.
#pragma once

#include <cstdint>

#include "cuda/quantize/quantize_lean.cuh"
#include "lean_tma.cuh"  // smem_addr

namespace f46::cuda {

inline constexpr int kT16Warps = kLeanThreads / 32;
inline constexpr int kT16StripCols = 512;

// N3.4 for 16 row errors held by one lane: e[i] op= e[i+w] for w = 8, 4, 2, 1.
template <QuantMode M>
__device__ __forceinline__ float tree16_step(float a, float b) {
  return M == QuantMode::kAbsMax ? num::max_keep_nan(a, b) : num::add(a, b);
}
template <QuantMode M>
__device__ __forceinline__ float tree16_rest(float (&e)[8]) {  // e[i] = rows i and i + 8
#pragma unroll
  for (int i = 0; i < 4; ++i) e[i] = tree16_step<M>(e[i], e[i + 4]);
#pragma unroll
  for (int i = 0; i < 2; ++i) e[i] = tree16_step<M>(e[i], e[i + 2]);
  return tree16_step<M>(e[0], e[1]);
}

__device__ __forceinline__ void load_row32(const uint16_t* row, uint32_t (&w)[8]) {
  const uint4 a = load_x16(reinterpret_cast<const uint4*>(row));
  const uint4 b = load_x16(reinterpret_cast<const uint4*>(row) + 1);
  w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = b.x, w[5] = b.y, w[6] = b.z, w[7] = b.w;
}

// The rare tiles: not admitted (`fast` false: the reference formulas for the scales, the
// errors and the codes, which go to slot 6 of `slot`) or undecided (the exact errors of both
// candidates from their grid values; the codes in the slots stay). Returns the scale byte, and
// bit 8 set when the 4 slot is chosen.
template <QuantMode M>
__device__ __noinline__ uint32_t tile16_lanes_slow(const uint16_t* x0, int64_t stride, float b,
                                                   const GlobalScale g, const ErrorConsts c,
                                                   bool fast, uint32_t s6, uint32_t s4,
                                                   float inv6_s, float inv4_s, uint4* slot) {
  constexpr Rule kRule = rule_of<M>();
  if (!fast) {
    s6 = num::scale_map6(b, g.s_enc), s4 = num::scale_map4(b, g.s_enc);
  }
  float e6[8], e4[8];
  for (int r = 0; r < 16; ++r) {
    uint32_t w[8];
    load_row32(x0 + r * stride, w);
    float x[16];
    unpack_words(w, x);
    float r6, r4;
    if (!fast) {
      Block16 xb;
#pragma unroll
      for (int i = 0; i < 16; ++i) xb.v[i] = x[i];
      const float2 e = reference_errors(xb, static_cast<uint8_t>(s6), static_cast<uint8_t>(s4),
                                        g.s_dec, g.amax, c.bound, kRule);
      r6 = e.x, r4 = e.y;
    } else {
      float gv[16];
      grid_values_s(x, inv6_s, gv);
      r6 = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s6)), g.amax, c.denom,
                                    c.rdenom, 64.0f);
      grid_values_s(x, inv4_s, gv);
      r4 = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s4)), g.amax, c.denom,
                                    c.rdenom, 64.0f);
    }
    if (r < 8) {
      e6[r] = r6, e4[r] = r4;
    } else {
      e6[r - 8] = tree16_step<M>(e6[r - 8], r6), e4[r - 8] = tree16_step<M>(e4[r - 8], r4);
    }
  }
  const bool four = s4 != s6 && num::pick_map4(tree16_rest<M>(e4), tree16_rest<M>(e6));
  if (fast) return (four ? s4 : s6) | (four ? 0x100u : 0u);
  const uint8_t scale = static_cast<uint8_t>(four ? s4 : s6);
  for (int r = 0; r < 16; ++r) {
    uint32_t w[8];
    load_row32(x0 + r * stride, w);
    Block16 xb;
    float x[16];
    unpack_words(w, x);
#pragma unroll
    for (int i = 0; i < 16; ++i) xb.v[i] = x[i];
    const uint64_t codes = reference_codes(xb, inverse_of(scale, g.s_dec));
    slot[32 * r].x = static_cast<uint32_t>(codes),
              slot[32 * r].y = static_cast<uint32_t>(codes >> 32);
  }
  return scale;
}

template <QuantMode M, int kMinCtas>
__global__ void __launch_bounds__(kLeanThreads, kMinCtas)
    tile16_lanes_kernel(const QuantizeParams p) {
  static_assert(is_error_rule<M>(), "error rules only (a lab kernel)");
  constexpr Rule kRule = rule_of<M>();
  __shared__ LeanEntry s_tab[256];
  __shared__ uint4 s_codes[kT16Warps][16][32];  // per warp: row, lane -> (lo6, hi6, lo4, hi4)
  const ErrorConsts consts = error_consts(p.bound);
  const GlobalScale gs = global_scale(p.amax[0], p.bound);
  fill_lean_table<M>(s_tab, gs, consts);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t spr = static_cast<uint32_t>((p.cols + kT16StripCols - 1) / kT16StripCols);
  const uint32_t n = static_cast<uint32_t>(p.rows / 16) * spr;  // strips, < 2^31 (lab)
  const uint32_t W = gridDim.x * kT16Warps;
  uint4* slot = &s_codes[warp][0][lane];
  const uint16_t* xs = static_cast<const uint16_t*>(p.x);
  for (uint32_t s = blockIdx.x * kT16Warps + warp; s < n; s += W) {
    const uint32_t tr = s / spr, sc = s % spr;
    const int64_t col = int64_t{sc} * kT16StripCols + 16 * lane;
    if (col >= p.cols) continue;  // no warp-wide operations below
    const int64_t row0 = int64_t{tr} * 16;
    const uint16_t* x0 = xs + row0 * p.x_stride + col;
    // pass 1: the tile amax
    uint32_t m = 0;
#pragma unroll 4
    for (int r = 0; r < 16; ++r) {
      uint32_t w[8];
      load_row32(x0 + r * p.x_stride, w);
      m = bf16x2_absmax(
          m, bf16x2_absmax(bf16x2_absmax(bf16x2_absmax(w[0], w[1]), bf16x2_absmax(w[2], w[3])),
                           bf16x2_absmax(bf16x2_absmax(w[4], w[5]), bf16x2_absmax(w[6], w[7]))));
    }
    const float b = max_nan(num::from_bits(m & 0x7FFF0000u), fabsf(num::from_bits(m << 16)));
    const float base = num::mul(grid::div6_fast(b), gs.s_enc);  // as lean_block
    const uint32_t s64 = e4m3x2(base, num::mul(base, 1.5f));
    const uint32_t s6 = s64 & 0xFFu, s4 = (s64 >> 8) & 0xFFu;
    const LeanEntry t6 = s_tab[s6], t4 = s_tab[s4];
    const bool fast = grid::div6_fast_ok(b) & (b < t6.limit) & (b < t4.limit);
    // pass 2: both candidates, row by row
    float e6[8], e4[8];
#pragma unroll 2
    for (int r = 0; r < 16; ++r) {
      uint32_t w[8];
      load_row32(x0 + r * p.x_stride, w);
      float x[16], gv[16];
      unpack_words(w, x);
      grid_values_s(x, t6.inv_s, gv);
      const float r6 = grid::approx_error<kRule>(x, gv, t6.k64);
      const grid::CodeWords a6 = grid::even_odd_s(gv), b6 = grid::even_odd_s(gv + 8);
      grid_values_s(x, t4.inv_s, gv);
      const float r4 = grid::approx_error<kRule>(x, gv, t4.k64);
      const grid::CodeWords a4 = grid::even_odd_s(gv), b4 = grid::even_odd_s(gv + 8);
      slot[32 * r] = make_uint4(grid::signed_codes8(a6, w), grid::signed_codes8(b6, w + 4),
                                grid::signed_codes8(a4, w), grid::signed_codes8(b4, w + 4));
      if (r < 8) {
        e6[r] = r6, e4[r] = r4;
      } else {
        e6[r - 8] = tree16_step<M>(e6[r - 8], r6), e4[r - 8] = tree16_step<M>(e4[r - 8], r4);
      }
    }
    const float te6 = tree16_rest<M>(e6), te4 = tree16_rest<M>(e4);
    // the choice (quantize_block<M, true>): K = k64 / 64 exactly, the tile bounds (n = 16)
    const float k6 = num::mul(t6.k64, 0.015625f), k4 = num::mul(t4.k64, 0.015625f);
    const float bound = num::add(approx_bound<M>(te6, k6, 16.0f), approx_bound<M>(te4, k4, 16.0f));
    const bool undecided = s4 != s6 && !(fabsf(num::sub(te4, te6)) > bound);
    uint32_t pick;  // scale byte, bit 8: the 4 slot
    if (!fast || undecided)
      pick = tile16_lanes_slow<M>(x0, p.x_stride, b, gs, consts, fast, s6, s4, t6.inv_s, t4.inv_s,
                                  slot);
    else
      pick = num::pick_map4(te4, te6) ? (s4 | 0x100u) : s6;
    // pass 3: the chosen code words and the scale, row by row
    uint8_t* codes = p.codes + row0 * p.codes_stride + col / 2;
    uint8_t* scales = p.scales + row0 * p.scales_stride + col / 16;
#pragma unroll 4
    for (int r = 0; r < 16; ++r) {
      const uint4 v = slot[32 * r];
      *reinterpret_cast<uint2*>(codes + r * p.codes_stride) =
          (pick & 0x100u) ? make_uint2(v.z, v.w) : make_uint2(v.x, v.y);
      scales[r * p.scales_stride] = static_cast<uint8_t>(pick);
    }
  }
}

}  // namespace f46::cuda
