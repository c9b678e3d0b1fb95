// The 16x16 weights kernel: bf16 input, 16x16 tiles, rowwise output only, a per-tensor global
// amax, round to nearest, no RHT (the forward weights of a dense layer). Same arithmetic and
// results as quantize_tile_kernel<T, M, true> (N3.4: one scale per tile, the tile error a
// pairwise tree over its 16 row errors), laid out for register work instead of shared memory:
//   - four lanes per tile ("quad"): a warp step is 16 rows x 128 columns (8 tiles); lane 4 t + L
//     holds rows L, L + 4, L + 8, L + 12 of tile t (4 x 32 bytes, loaded once into registers),
//     so the first two levels of the N3.4 tree (rows i, i + 8, then i, i + 4) lie in the lane
//     and the last two, like the tile amax, are shuffles within the quad;
//   - the 4/6 arithmetic is lean_block's (quantize_lean.cuh: a 16-byte table entry per scale
//     byte, scaled grid values, approximate errors with their bound, code words with the signs
//     of the raw bf16 words); both candidates' code words stay in registers until the choice;
//   - the rare tiles (not admitted by the fast path, or undecided) go to quad_slow, out of line,
//     which reads its rows again from x: no register array of the hot loop has its address
//     taken, so nothing goes through local memory (a lab version that passed its arrays by
//     reference spilled 160 bytes per lane and step and ran at 0.54-0.57 of copy instead of
//     0.77-0.90 on an H100, bench/RESULTS.md 2026-12-05 night).
// The CUDA tests compare it bitwise with the CPU reference (tests/cpp/cuda/test_cuda_quantize*
// .cpp: the bf16 per-tensor 16x16 rowwise cases are dispatched here).
#pragma once

#include <cstdint>

#include "cuda/quantize/quantize_lean.cuh"

namespace f46::cuda {

inline constexpr int kQuadWarps = kLeanThreads / 32;

// A step's head: the tile amax and the scale bytes with their table entries (t4 unused by the
// plain rules, whose one scale is s6).
struct QuadHead {
  float b;
  uint32_t s6, s4;
  LeanEntry t6, t4;
  bool fast;
};

// N3.4 over a tile whose rows i lie in lane i % 4 of the quad (e[k]: row L + 4 k): levels 8 and
// 4 in the lane, 2 and 1 across it; every lane of the quad gets the total.
template <QuantMode M>
__device__ __forceinline__ float quad_tree_step(float a, float b) {
  return M == QuantMode::kAbsMax ? num::max_keep_nan(a, b) : num::add(a, b);
}
template <QuantMode M>
__device__ __forceinline__ float quad_tree(const float (&e)[4], unsigned mask) {
  float f = quad_tree_step<M>(quad_tree_step<M>(e[0], e[2]), quad_tree_step<M>(e[1], e[3]));
  f = quad_tree_step<M>(f, __shfl_down_sync(mask, f, 2, 4));
  f = quad_tree_step<M>(f, __shfl_down_sync(mask, f, 1, 4));
  return __shfl_sync(mask, f, 0, 4);
}

template <QuantMode M>
__device__ __forceinline__ QuadHead quad_head(const uint4 (&raw)[8], const LeanEntry* tab,
                                              const GlobalScale& g) {
  uint32_t m = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k)
    m = bf16x2_absmax(
        m, bf16x2_absmax(bf16x2_absmax(raw[k].x, raw[k].y), bf16x2_absmax(raw[k].z, raw[k].w)));
  float b = max_nan(num::from_bits(m & 0x7FFF0000u), fabsf(num::from_bits(m << 16)));
  b = max_nan(b, __shfl_xor_sync(0xFFFFFFFFu, b, 1));
  b = max_nan(b, __shfl_xor_sync(0xFFFFFFFFu, b, 2));
  QuadHead h;
  h.b = b;
  if constexpr (is_error_rule<M>()) {  // as lean_block
    const float base = num::mul(grid::div6_fast(b), g.s_enc);
    const uint32_t s64 = e4m3x2(base, num::mul(base, 1.5f));
    h.s6 = s64 & 0xFFu, h.s4 = (s64 >> 8) & 0xFFu;
    h.t6 = tab[h.s6], h.t4 = tab[h.s4];
    h.fast = grid::div6_fast_ok(b) & (b < h.t6.limit) & (b < h.t4.limit);  // quad-uniform
  } else {
    h.s6 = h.s4 = plain_scale<M>(b, g);
    h.t6 = h.t4 = tab[h.s6];
    h.fast = b < h.t6.limit;
  }
  return h;
}

// The 16 values and raw words of row k of the lane (raw words 2 k and 2 k + 1).
__device__ __forceinline__ void quad_words(const uint4 (&raw)[8], int k, uint32_t (&w)[8]) {
  const uint4 a = raw[2 * k], b = raw[2 * k + 1];
  w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = b.x, w[5] = b.y, w[6] = b.z, w[7] = b.w;
}
__device__ __forceinline__ uint2 quad_codes(const float (&gv)[16], const uint32_t (&w)[8]) {
  return make_uint2(grid::signed_codes8(grid::even_odd_s(gv), w),
                    grid::signed_codes8(grid::even_odd_s(gv + 8), w + 4));
}

// The rare tiles: not admitted by the fast path (the reference scales, errors and codes), or
// undecided (the exact errors from the grid values; the caller's code words stay). Reads the
// lane's rows again from x0 (row L of the tile, `active`: the tile lies inside x). Returns the
// scale byte, bit 8 when the 4 candidate's code words are chosen, bit 9 when the codes were
// stored here.
template <QuantMode M>
__device__ __noinline__ uint32_t quad_slow(const uint16_t* x0, int64_t x_stride, bool active,
                                           const QuadHead h, const GlobalScale g,
                                           const ErrorConsts c, unsigned mask, uint8_t* codes,
                                           int64_t codes_stride) {
  auto row = [&](int k, float(&x)[16]) {  // row L + 4 k of the tile, zeros outside x
    uint4 a{}, b{};
    if (active) {
      const uint4* q = reinterpret_cast<const uint4*>(x0 + 4 * k * x_stride);
      a = load_x16(q), b = load_x16(q + 1);
    }
    const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    unpack_words(w, x);
  };
  uint8_t scale = static_cast<uint8_t>(h.s6);
  if constexpr (is_error_rule<M>()) {
    constexpr Rule kRule = rule_of<M>();
    uint32_t s6 = h.s6, s4 = h.s4;
    if (!h.fast) s6 = num::scale_map6(h.b, g.s_enc), s4 = num::scale_map4(h.b, g.s_enc);
    float e6[4], e4[4];
    for (int k = 0; k < 4; ++k) {
      float x[16];
      row(k, x);
      if (!h.fast) {
        Block16 xb;
        for (int i = 0; i < 16; ++i) xb.v[i] = x[i];
        const float2 e = reference_errors(xb, static_cast<uint8_t>(s6), static_cast<uint8_t>(s4),
                                          g.s_dec, g.amax, c.bound, kRule);
        e6[k] = e.x, e4[k] = e.y;
      } else {
        float gv[16];
        grid_values_s(x, h.t6.inv_s, gv);
        e6[k] = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s6)), g.amax,
                                         c.denom, c.rdenom, 64.0f);
        grid_values_s(x, h.t4.inv_s, gv);
        e4[k] = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s4)), g.amax,
                                         c.denom, c.rdenom, 64.0f);
      }
    }
    const bool four = s4 != s6 && num::pick_map4(quad_tree<M>(e4, mask), quad_tree<M>(e6, mask));
    if (h.fast) return (four ? s4 : s6) | (four ? 0x100u : 0u);
    scale = static_cast<uint8_t>(four ? s4 : s6);
  }
  for (int k = 0; k < 4 && active; ++k) {  // the reference codes (N3.2)
    float x[16];
    row(k, x);
    Block16 xb;
    for (int i = 0; i < 16; ++i) xb.v[i] = x[i];
    const uint64_t q = reference_codes(xb, inverse_of(scale, g.s_dec));
    *reinterpret_cast<uint2*>(codes + 4 * k * codes_stride) =
        make_uint2(static_cast<uint32_t>(q), static_cast<uint32_t>(q >> 32));
  }
  return scale | 0x200u;
}

// Warp w of the grid takes steps w, w + W, ... (W warps): step s is tile row s / spr, columns
// 128 (s % spr) + [0, 128) (spr steps per tile row). Host: rows % 16 == 0, cols % 16 == 0,
// (rows / 16) * spr < 2^31, x rows 16-byte aligned, codes 8-byte aligned with stride % 8 == 0.
template <QuantMode M>
__global__ void __launch_bounds__(kLeanThreads, kLeanTensorMinCtas)
    quantize_tile16_quad_kernel(const QuantizeParams p) {
  __shared__ LeanEntry s_tab[256];
  const ErrorConsts consts = error_consts(p.bound);
  const GlobalScale gs = global_scale(p.amax[0], p.bound);
  fill_lean_table<M>(s_tab, gs, consts);
  const int lane = threadIdx.x & 31, t = lane / 4, L = lane % 4;
  const unsigned qmask = 0xFu << (lane & ~3);
  const uint32_t spr = static_cast<uint32_t>((p.cols + kQuadCols - 1) / kQuadCols);
  const uint32_t n = static_cast<uint32_t>(p.rows / 16) * spr;
  const uint32_t W = gridDim.x * kQuadWarps;
  const uint16_t* xs = static_cast<const uint16_t*>(p.x);
  for (uint32_t s = blockIdx.x * kQuadWarps + threadIdx.x / 32; s < n; s += W) {  // uniform
    const int64_t col = int64_t{s % spr} * kQuadCols + 16 * t;
    const bool active = col < p.cols;  // uniform over the quad
    const int64_t row = int64_t{s / spr} * 16 + L;
    const uint16_t* x0 = xs + row * p.x_stride + col;
    uint4 raw[8];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint4* q = reinterpret_cast<const uint4*>(x0 + 4 * k * p.x_stride);
      raw[2 * k] = active ? load_x16(q) : make_uint4(0, 0, 0, 0);
      raw[2 * k + 1] = active ? load_x16(q + 1) : make_uint4(0, 0, 0, 0);
    }
    const QuadHead h = quad_head<M>(raw, s_tab, gs);
    uint2 c6[4], c4[4];
    bool slow = !h.fast;
    float te6 = 0.0f, te4 = 0.0f;
    if constexpr (is_error_rule<M>()) {
      constexpr Rule kRule = rule_of<M>();
      float e6[4], e4[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        uint32_t w[8];
        quad_words(raw, k, w);
        float x[16], gv[16];
        unpack_words(w, x);
        grid_values_s(x, h.t6.inv_s, gv);
        e6[k] = grid::approx_error<kRule>(x, gv, h.t6.k64);
        c6[k] = quad_codes(gv, w);
        grid_values_s(x, h.t4.inv_s, gv);
        e4[k] = grid::approx_error<kRule>(x, gv, h.t4.k64);
        c4[k] = quad_codes(gv, w);
      }
      te6 = quad_tree<M>(e6, 0xFFFFFFFFu), te4 = quad_tree<M>(e4, 0xFFFFFFFFu);
      // The tile bound (n = 16 rows, K = k64 / 64 exactly), as quantize_block<M, true>.
      const float k6 = num::mul(h.t6.k64, 0.015625f), k4 = num::mul(h.t4.k64, 0.015625f);
      const float bound =
          num::add(approx_bound<M>(te6, k6, 16.0f), approx_bound<M>(te4, k4, 16.0f));
      slow = slow || (h.s4 != h.s6 && !(fabsf(num::sub(te4, te6)) > bound));  // quad-uniform
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        uint32_t w[8];
        quad_words(raw, k, w);
        float x[16], gv[16];
        unpack_words(w, x);
        grid_values_s(x, h.t6.inv_s, gv);
        c6[k] = c4[k] = quad_codes(gv, w);
      }
    }
    uint8_t* codes = p.codes + row * p.codes_stride + col / 2;
    const uint32_t pick =
        slow ? quad_slow<M>(x0, p.x_stride, active, h, gs, consts, qmask, codes, p.codes_stride)
             : (is_error_rule<M>() && num::pick_map4(te4, te6) ? (h.s4 | 0x100u) : h.s6);
    if (active) {
      uint8_t* scales = p.scales + row * p.scales_stride + col / 16;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        if (!(pick & 0x200u))
          *reinterpret_cast<uint2*>(codes + 4 * k * p.codes_stride) =
              (pick & 0x100u) ? c4[k] : c6[k];
        scales[4 * k * p.scales_stride] = static_cast<uint8_t>(pick);
      }
    }
  }
}

}  // namespace f46::cuda
