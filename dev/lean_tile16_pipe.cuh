// LAB KERNEL, not in the library (dev/lean_lab.cu). The four-lanes-per-tile 16x16 kernel of
// dev/lean_tile16_lanes.cuh (tile16_quad_kernel: lane 4 t + L holds rows L, L + 4, L + 8, L + 12
// of tile t, both candidates' code words in registers) with its steps software-pipelined, to test
// the explanation its profile gave (2026-12-05 late, H100: 46 % issue, each step one serial chain
// of loads, amax shuffles, scales, table loads, candidates, tree shuffles, choice, stores):
//   - the next step's 128 bytes per lane are loaded one step ahead;
//   - the next step's head (packed amax, its two quad shuffles, the scales, the two table loads)
//     runs between rows 1 and 2 of this step's candidates (kMid) or after all four (!kMid), so
//     its latency overlaps this step's arithmetic and the step starts with its entries known;
//   - the loop is unrolled by two over two register sets (no copies of the 32 raw words).
// Same arithmetic and results as tile16_quad_kernel (bytewise, checked by the lab).
#pragma once

#include <cstdint>

#include "lean_tile16_lanes.cuh"

namespace f46::cuda {

// A step's head: the tile amax, both candidate scales and their table entries.
struct QuadHead {
  float b;
  uint32_t s6, s4;
  LeanEntry t6, t4;
  bool fast;
};

__device__ __forceinline__ QuadHead quad_head(const uint4 (&raw)[8], const LeanEntry* tab,
                                              const GlobalScale& gs) {
  uint32_t m = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k)
    m = bf16x2_absmax(
        m, bf16x2_absmax(bf16x2_absmax(raw[k].x, raw[k].y), bf16x2_absmax(raw[k].z, raw[k].w)));
  float b = max_nan(num::from_bits(m & 0x7FFF0000u), fabsf(num::from_bits(m << 16)));
  b = max_nan(b, __shfl_xor_sync(0xFFFFFFFFu, b, 1));
  b = max_nan(b, __shfl_xor_sync(0xFFFFFFFFu, b, 2));
  const float base = num::mul(grid::div6_fast(b), gs.s_enc);  // as lean_block
  const uint32_t s64 = e4m3x2(base, num::mul(base, 1.5f));
  QuadHead h;
  h.b = b;
  h.s6 = s64 & 0xFFu, h.s4 = (s64 >> 8) & 0xFFu;
  h.t6 = tab[h.s6], h.t4 = tab[h.s4];
  h.fast = grid::div6_fast_ok(b) & (b < h.t6.limit) & (b < h.t4.limit);  // quad-uniform
  return h;
}

// Both candidates of row k (raw words 2k, 2k + 1): approximate errors and signed code words.
template <QuantMode M>
__device__ __forceinline__ void quad_row(const uint4 (&raw)[8], int k, const QuadHead& h,
                                         float (&e6)[4], float (&e4)[4], uint2 (&c6)[4],
                                         uint2 (&c4)[4]) {
  constexpr Rule kRule = rule_of<M>();
  const uint32_t w[8] = {raw[2 * k].x,     raw[2 * k].y,     raw[2 * k].z,     raw[2 * k].w,
                         raw[2 * k + 1].x, raw[2 * k + 1].y, raw[2 * k + 1].z, raw[2 * k + 1].w};
  float x[16], gv[16];
  unpack_words(w, x);
  grid_values_s(x, h.t6.inv_s, gv);
  e6[k] = grid::approx_error<kRule>(x, gv, h.t6.k64);
  c6[k] = make_uint2(grid::signed_codes8(grid::even_odd_s(gv), w),
                     grid::signed_codes8(grid::even_odd_s(gv + 8), w + 4));
  grid_values_s(x, h.t4.inv_s, gv);
  e4[k] = grid::approx_error<kRule>(x, gv, h.t4.k64);
  c4[k] = make_uint2(grid::signed_codes8(grid::even_odd_s(gv), w),
                     grid::signed_codes8(grid::even_odd_s(gv + 8), w + 4));
}

// The rare tiles (quad_slow's cases) without taking the address of any register array: the
// rows are read again from x, and a tile the fast path does not admit has its codes stored here
// (bit 9 of the result set). Out of line; nothing of the caller goes through local memory.
template <QuantMode M>
__device__ __noinline__ uint32_t quad_slow_g(const uint16_t* x0, int64_t stride, bool active,
                                             float b, const GlobalScale g, const ErrorConsts c,
                                             bool fast, uint32_t s6, uint32_t s4, float inv6_s,
                                             float inv4_s, unsigned qmask, uint8_t* codes,
                                             int64_t codes_stride) {
  constexpr Rule kRule = rule_of<M>();
  if (!fast) s6 = num::scale_map6(b, g.s_enc), s4 = num::scale_map4(b, g.s_enc);
  auto row = [&](int k, float (&x)[16]) {
    uint32_t w[8] = {};
    if (active) load_row32(x0 + 4 * k * stride, w);
    unpack_words(w, x);
  };
  float e6[4], e4[4];
  for (int k = 0; k < 4; ++k) {
    float x[16];
    row(k, x);
    if (!fast) {
      Block16 xb;
      for (int i = 0; i < 16; ++i) xb.v[i] = x[i];
      const float2 e = reference_errors(xb, static_cast<uint8_t>(s6), static_cast<uint8_t>(s4),
                                        g.s_dec, g.amax, c.bound, kRule);
      e6[k] = e.x, e4[k] = e.y;
    } else {
      float gv[16];
      grid_values_s(x, inv6_s, gv);
      e6[k] = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s6)), g.amax, c.denom,
                                       c.rdenom, 64.0f);
      grid_values_s(x, inv4_s, gv);
      e4[k] = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s4)), g.amax, c.denom,
                                       c.rdenom, 64.0f);
    }
  }
  const float t6 = rows_tree<M, 4>(e6, qmask);
  const float t4 = rows_tree<M, 4>(e4, qmask);
  const bool four = s4 != s6 && num::pick_map4(t4, t6);
  if (fast) return (four ? s4 : s6) | (four ? 0x100u : 0u);
  const uint8_t scale = static_cast<uint8_t>(four ? s4 : s6);
  for (int k = 0; k < 4 && active; ++k) {
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

// kPipe: the pipelined loop (kMid: the next head between rows 1 and 2); !kPipe: the plain quad
// loop (load, head, rows, tail per step), as tile16_quad_kernel without its local-memory arrays.
template <QuantMode M, int kMinCtas, bool kPipe, bool kMid>
__global__ void __launch_bounds__(kLeanThreads, kMinCtas)
    tile16_quad_pipe_kernel(const QuantizeParams p) {
  static_assert(is_error_rule<M>(), "error rules only (a lab kernel)");
  __shared__ LeanEntry s_tab[256];
  const ErrorConsts consts = error_consts(p.bound);
  const GlobalScale gs = global_scale(p.amax[0], p.bound);
  fill_lean_table<M>(s_tab, gs, consts);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int t = lane / 4, L = lane % 4;
  const unsigned qmask = 0xFu << (lane & ~3);
  const uint32_t spr = static_cast<uint32_t>((p.cols + kQuadCols - 1) / kQuadCols);
  const uint32_t n = static_cast<uint32_t>(p.rows / 16) * spr;  // steps, < 2^31 (lab)
  const uint32_t W = gridDim.x * kT16Warps;
  const uint16_t* xs = static_cast<const uint16_t*>(p.x);
  auto col_of = [&](uint32_t s) { return int64_t{s % spr} * kQuadCols + 16 * t; };
  auto load = [&](uint32_t s, uint4(&raw)[8]) {
    const int64_t col = col_of(s);
    if (col >= p.cols) {
#pragma unroll
      for (int k = 0; k < 8; ++k) raw[k] = make_uint4(0, 0, 0, 0);
      return;
    }
    const uint16_t* x0 = xs + (int64_t{s / spr} * 16 + L) * p.x_stride + col;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint4* q = reinterpret_cast<const uint4*>(x0 + 4 * k * p.x_stride);
      raw[2 * k] = load_x16(q), raw[2 * k + 1] = load_x16(q + 1);
    }
  };
  // Step s from `cur` with head `h`; loads step s + 2W into `cur` once it is consumed and
  // computes the head of step s + W (in `nxt`) into `hn`. Warp-uniform control.
  auto step = [&](uint32_t s, uint4(&cur)[8], const QuadHead& h, const uint4(&nxt)[8],
                  QuadHead& hn) {
    float e6[4], e4[4];
    uint2 c6[4], c4[4];
    const bool more = s + W < n;
    quad_row<M>(cur, 0, h, e6, e4, c6, c4);
    quad_row<M>(cur, 1, h, e6, e4, c6, c4);
    if (kPipe && kMid && more) hn = quad_head(nxt, s_tab, gs);
    quad_row<M>(cur, 2, h, e6, e4, c6, c4);
    quad_row<M>(cur, 3, h, e6, e4, c6, c4);
    if (kPipe && !kMid && more) hn = quad_head(nxt, s_tab, gs);
    const float te6 = rows_tree<M, 4>(e6, 0xFFFFFFFFu);
    const float te4 = rows_tree<M, 4>(e4, 0xFFFFFFFFu);
    const float k6 = num::mul(h.t6.k64, 0.015625f), k4 = num::mul(h.t4.k64, 0.015625f);
    const float bound = num::add(approx_bound<M>(te6, k6, 16.0f), approx_bound<M>(te4, k4, 16.0f));
    const bool undecided = h.s4 != h.s6 && !(fabsf(num::sub(te4, te6)) > bound);  // quad-uniform
    const int64_t col = col_of(s);
    const bool active = col < p.cols;
    const int64_t row = int64_t{s / spr} * 16 + L;
    uint8_t* codes = p.codes + row * p.codes_stride + col / 2;
    uint32_t pick;
    if (!h.fast || undecided) {
      pick = quad_slow_g<M>(xs + row * p.x_stride + col, p.x_stride, active, h.b, gs, consts,
                            h.fast, h.s6, h.s4, h.t6.inv_s, h.t4.inv_s, qmask, codes,
                            p.codes_stride);
    } else {
      pick = num::pick_map4(te4, te6) ? (h.s4 | 0x100u) : h.s6;
    }
    if (kPipe && s + 2 * W < n) load(s + 2 * W, cur);
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
  };
  uint32_t s = blockIdx.x * kT16Warps + warp;
  if (s >= n) return;  // warp-uniform; no CTA barrier below
  uint4 ra[8], rb[8];
  QuadHead ha, hb;
  if constexpr (!kPipe) {
    for (; s < n; s += W) {
      load(s, ra);
      ha = quad_head(ra, s_tab, gs);
      step(s, ra, ha, rb, hb);
    }
    return;
  }
  load(s, ra);
  if (s + W < n) load(s + W, rb);
  ha = quad_head(ra, s_tab, gs);
  while (true) {
    step(s, ra, ha, rb, hb);
    s += W;
    if (s >= n) break;
    step(s, rb, hb, ra, ha);
    s += W;
    if (s >= n) break;
  }
}

}  // namespace f46::cuda
