// The 16x16 weights kernel: bf16 input, 16x16 tiles, a per-tensor global amax, round to nearest,
// no RHT (the weights of a dense layer), rowwise and/or (kCol) columnwise output. Same arithmetic
// and results as quantize_tile_kernel<T, M, true> (N3.4: one scale per tile, the tile error a
// pairwise tree over its 16 row errors; N1.4: the columnwise output is the quantization of x^T,
// whose tile error sums the columns of x), laid out for register work instead of shared memory:
//   - four lanes per tile ("quad"): a warp step is 16 rows x 128 columns (8 tiles; with the
//     columnwise output a warp takes runs of 4 steps down one strip); lane 4 t + L
//     holds rows L, L + 4, L + 8, L + 12 of tile t (4 x 32 bytes, loaded once into registers),
//     so the first two levels of the N3.4 tree (rows i, i + 8, then i, i + 4) lie in the lane
//     and the last two, like the tile amax, are shuffles within the quad;
//   - the 4/6 arithmetic is lean_block's (quantize_lean.cuh: a 16-byte table entry per scale
//     byte, scaled grid values, approximate errors with their bound, code words with the signs
//     of the raw bf16 words); both candidates' code words stay in registers until the choice;
//   - the columnwise output: the tile amax, both scales and every code are those of x^T; only the
//     4/6 decision sums in the other order, and the approximate errors' bound covers both orders
//     (the same 16 sums of 16 terms and 4-level tree), so a decided tile takes the same candidate
//     for both outputs and its columnwise codes are the chosen row code words transposed across
//     the quad (quad_transpose: two shuffle rounds and byte permutes, ~1 instruction per element);
//   - the rare tiles (not admitted by the fast path, or undecided) go to quad_slow, out of line,
//     which reads its rows (and columns) again from x: no register array of the hot loop has its
//     address taken, so nothing goes through local memory (a form that passed them by reference
//     kept them there and ran 1.4-1.6x slower; docs/design.md, "16x16 weights").
// The CUDA tests compare it bitwise with the CPU reference (tests/cpp/cuda/test_cuda_quantize*
// .cpp: the bf16 per-tensor 16x16 cases without an own columnwise amax are dispatched here;
// CudaQuantizeEdge.Tile16QuadTiles is written for it).
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

// The raw bf16 words of row k of the lane (raw words 2 k and 2 k + 1); the row's code words.
__device__ __forceinline__ void quad_words(const uint4 (&raw)[8], int k, uint32_t (&w)[8]) {
  const uint4 a = raw[2 * k], b = raw[2 * k + 1];
  w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = b.x, w[5] = b.y, w[6] = b.z, w[7] = b.w;
}
__device__ __forceinline__ uint2 quad_codes(const float (&gv)[16], const uint32_t (&w)[8]) {
  return make_uint2(grid::signed_codes8(grid::even_odd_s(gv), w),
                    grid::signed_codes8(grid::even_odd_s(gv + 8), w + 4));
}

// Columnwise codes from the lane's four row code words (w[k]: row L + 4 k of the tile, nibble n of
// .x / .y = column n / 8 + n). Afterwards lane L = 2 p + h holds the x^T code words of columns
// 8 h + 4 p + {0, 1, 2, 3} (out[c]: nibble i = row i). Stage 1 (lanes L, L ^ 1): each keeps the
// half h of the columns and pairs its rows with the partner's into bytes (row 4 k + 2 p low
// nibble, 4 k + 2 p + 1 high), byte m = 2 k + p of the output; stage 2 (lanes L, L ^ 2): each
// keeps four of the eight columns and interleaves the byte pairs.
__device__ __forceinline__ void quad_transpose(const uint2 (&w)[4], int L, uint2 (&out)[4]) {
  const bool odd = L & 1, p = L & 2;
  uint32_t ev[4], od[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const uint32_t keep = odd ? w[k].y : w[k].x;
    const uint32_t recv = __shfl_xor_sync(0xFFFFFFFFu, odd ? w[k].x : w[k].y, 1);
    const uint32_t lo = odd ? recv : keep, hi = odd ? keep : recv;  // rows 4k + 2p, 4k + 2p + 1
    ev[k] = (lo & 0x0F0F0F0Fu) | ((hi & 0x0F0F0F0Fu) << 4);         // columns 0, 2, 4, 6
    od[k] = ((lo >> 4) & 0x0F0F0F0Fu) | (hi & 0xF0F0F0F0u);         // columns 1, 3, 5, 7
  }
  // Group g of the half (columns 4g .. 4g+3) as bytes [4g, 4g+2, 4g+1, 4g+3]; p keeps group p.
  const uint32_t sel_keep = p ? 0x7632u : 0x5410u, sel_send = p ? 0x5410u : 0x7632u;
  // a = byte pair of the even output byte (2k), b = odd (2k + 1): [a0 b0 a1 b1], [a2 b2 a3 b3].
  const uint32_t sel_lo = p ? 0x1504u : 0x5140u, sel_hi = p ? 0x3726u : 0x7362u;
  uint32_t ab_lo[4], ab_hi[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const uint32_t keep = grid::byte_perm(ev[k], od[k], sel_keep);
    const uint32_t recv = __shfl_xor_sync(0xFFFFFFFFu, grid::byte_perm(ev[k], od[k], sel_send), 2);
    ab_lo[k] = grid::byte_perm(keep, recv, sel_lo), ab_hi[k] = grid::byte_perm(keep, recv, sel_hi);
  }
  // Column 4g + {0, 2} from ab_lo bytes {0, 1} / {2, 3}, 4g + {1, 3} from ab_hi.
  out[0] = make_uint2(grid::byte_perm(ab_lo[0], ab_lo[1], 0x5410u),
                      grid::byte_perm(ab_lo[2], ab_lo[3], 0x5410u));
  out[2] = make_uint2(grid::byte_perm(ab_lo[0], ab_lo[1], 0x7632u),
                      grid::byte_perm(ab_lo[2], ab_lo[3], 0x7632u));
  out[1] = make_uint2(grid::byte_perm(ab_hi[0], ab_hi[1], 0x5410u),
                      grid::byte_perm(ab_hi[2], ab_hi[3], 0x5410u));
  out[3] = make_uint2(grid::byte_perm(ab_hi[0], ab_hi[1], 0x7632u),
                      grid::byte_perm(ab_hi[2], ab_hi[3], 0x7632u));
}

// Where a tile's outputs go (the lane's row L and column L of the tile).
struct QuadOut {
  uint8_t* codes;  // rowwise codes of row L, null: no rowwise output
  int64_t codes_stride;
  uint8_t* codes_t;  // columnwise codes of column L, null: no columnwise output
  int64_t codes_t_stride;
  uint8_t* scales_t;  // columnwise scale of column L
  int64_t scales_t_stride;
};

// The 4/6 choice (bit 8 of the result: the 4 candidate) and its scale (bits 0..7) of the tile
// whose 16 blocks (rows, or columns for x^T) lie four per lane, block(k, x) giving block L + 4 k,
// for a tile the fast path admits (exact errors from the grid values) or not (the reference).
template <QuantMode M, typename Block>
__device__ __forceinline__ uint32_t quad_choice(Block block, const QuadHead& h,
                                                const GlobalScale& g, const ErrorConsts& c,
                                                unsigned mask) {
  constexpr Rule kRule = rule_of<M>();
  uint32_t s6 = h.s6, s4 = h.s4;
  if (!h.fast) s6 = num::scale_map6(h.b, g.s_enc), s4 = num::scale_map4(h.b, g.s_enc);
  float e6[4], e4[4];
  for (int k = 0; k < 4; ++k) {
    float x[16];
    block(k, x);
    if (!h.fast) {
      Block16 xb;
      for (int i = 0; i < 16; ++i) xb.v[i] = x[i];
      const float2 e = reference_errors(xb, static_cast<uint8_t>(s6), static_cast<uint8_t>(s4),
                                        g.s_dec, g.amax, c.bound, kRule);
      e6[k] = e.x, e4[k] = e.y;
    } else {
      float gv[16];
      grid_values_s(x, h.t6.inv_s, gv);
      e6[k] = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s6)), g.amax, c.denom,
                                       c.rdenom, 64.0f);
      grid_values_s(x, h.t4.inv_s, gv);
      e4[k] = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s4)), g.amax, c.denom,
                                       c.rdenom, 64.0f);
    }
  }
  const bool four = s4 != s6 && num::pick_map4(quad_tree<M>(e4, mask), quad_tree<M>(e6, mask));
  return (four ? s4 : s6) | (four ? 0x100u : 0u);
}

// The reference codes (N3.2) of the lane's four blocks under `scale`, stored at dst + k stride.
template <typename Block>
__device__ __forceinline__ void quad_reference_codes(Block block, uint8_t scale, float s_dec,
                                                     uint8_t* dst, int64_t stride) {
  for (int k = 0; k < 4; ++k) {
    float x[16];
    block(k, x);
    Block16 xb;
    for (int i = 0; i < 16; ++i) xb.v[i] = x[i];
    const uint64_t q = reference_codes(xb, inverse_of(scale, s_dec));
    *reinterpret_cast<uint2*>(dst + k * stride) =
        make_uint2(static_cast<uint32_t>(q), static_cast<uint32_t>(q >> 32));
  }
}

// The rare tiles: not admitted by the fast path (the reference scales, errors and codes), or
// undecided (the exact errors from the grid values; the caller's code words stay). Reads the
// tile again from x0 (its row 0, column 0; `active`: the tile lies inside x): the lane's rows
// L + 4 k and, for the columnwise output, its columns L + 4 k, whose errors the x^T tree sums.
// Returns the rowwise choice in bits 0..8 (as quad_choice), bit 9 when the rowwise codes were
// stored here; the columnwise choice in bits 16..24, bit 25 when its codes and scales were stored.
template <QuantMode M>
__device__ __noinline__ uint32_t quad_slow(const uint16_t* x0, int64_t x_stride, int L, bool active,
                                           const QuadHead h, const GlobalScale g,
                                           const ErrorConsts c, unsigned mask, const QuadOut o) {
  auto row = [&](int k, float(&x)[16]) {  // row L + 4 k, zeros outside x
    uint4 a{}, b{};
    if (active) {
      const uint4* q = reinterpret_cast<const uint4*>(x0 + (L + 4 * k) * x_stride);
      a = load_x16(q), b = load_x16(q + 1);
    }
    const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    unpack_words(w, x);
  };
  auto column = [&](int k, float(&x)[16]) {  // column L + 4 k
    for (int i = 0; i < 16; ++i)
      x[i] = active ? num::from_bits(uint32_t{x0[i * x_stride + L + 4 * k]} << 16) : 0.0f;
  };
  uint32_t rows = h.s6, cols = h.s6;
  if constexpr (is_error_rule<M>()) {
    if (o.codes) rows = quad_choice<M>(row, h, g, c, mask);
    if (o.codes_t) cols = quad_choice<M>(column, h, g, c, mask);
  }
  if (h.fast || !active) return rows | (cols << 16);
  const float s_dec = g.s_dec;
  if (o.codes) {
    quad_reference_codes(row, static_cast<uint8_t>(rows), s_dec, o.codes, 4 * o.codes_stride);
    rows |= 0x200u;
  }
  if (o.codes_t) {
    quad_reference_codes(column, static_cast<uint8_t>(cols), s_dec, o.codes_t,
                         4 * o.codes_t_stride);
    for (int k = 0; k < 4; ++k) o.scales_t[4 * k * o.scales_t_stride] = static_cast<uint8_t>(cols);
    cols |= 0x200u;
  }
  return rows | (cols << 16);
}

// kCol: the columnwise output of a run of kQuadRun tile rows of one strip is gathered per warp in
// shared memory and then stored with the lanes of 8 columns x kQuadRun tile rows per instruction
// (32 contiguous code bytes and 4 scale bytes per column), not 8 bytes per column and tile row:
// that scattered form spent its time in the L1 store wavefronts (3.2x the rowwise-only time on an
// H100; docs/design.md). Layout per warp: tile t, column i of the tile, tile row j of the run at
// word t * 81 + 5 i + j of the codes (8 bytes each) and byte t * 68 + 4 i + j of the scales
// (padded so that a quad's writes and the stores' reads fall in distinct banks).
inline constexpr int kQuadTileWords = 16 * 5 + 1, kQuadTileScales = 16 * 4 + 4;

// Warp w of the grid takes steps w, w + W, ... (W warps): step s is tile row s / spr, columns
// 128 (s % spr) + [0, 128) (spr steps per tile row); kCol: runs of kQuadRun steps down one strip
// (run u: strip u % spr, tile rows kQuadRun (u / spr) + j). Host: rows % 16 == 0, cols % 16 == 0,
// (rows / 16) * spr < 2^31, x rows 16-byte aligned, codes 8-byte aligned with stride % 8 == 0,
// kCol: codes_t likewise and the columnwise amax the rowwise one (p.rowwise may be false).
// kRun (<= 4): tile rows per run; kMinCtas: the register bound. The library uses the defaults.
// kBatch: quantize_experts' form, gridDim.y experts at the QuantizeParams::*_batch strides (a
// template flag: the offsets cost the single-tensor form registers it does not have to spare).
// What one warp's steps share: the block scales' table, the global scale, the lane's place.
struct QuadWarp {
  const LeanEntry* tab;
  GlobalScale gs;
  ErrorConsts consts;
  const uint16_t* xs;  // x of the item
  uint32_t item;       // quantize_experts: the expert (0 for a single tensor)
  int t, L;            // the lane's tile of the step (lane / 4) and its row quarter (lane % 4)
  unsigned qmask;      // the lane's quad
  bool rowwise;
  uint2* buf_t;  // kCol: this tile's columns in the warp's run buffers
  uint8_t* sbuf_t;
};

// One warp step: tile row `tr` of strip `strip` (16 rows x kQuadCols columns, a quad per 16x16
// tile), the j-th of its run (kCol): the rowwise codes and scales stored, the columnwise ones
// written transposed into the run buffers.
template <QuantMode M, bool kCol>
__device__ __forceinline__ void quad_step(const QuantizeParams& p, const QuadWarp& qw, uint32_t tr,
                                          uint32_t strip, int j) {
  const GlobalScale& gs = qw.gs;
  const ErrorConsts& consts = qw.consts;
  const int t = qw.t, L = qw.L;
  const uint32_t item = qw.item;
  const bool rowwise = qw.rowwise;
  uint2* const buf_t = qw.buf_t;
  uint8_t* const sbuf_t = qw.sbuf_t;
  const uint16_t* const xs = qw.xs;
  const LeanEntry* const s_tab = qw.tab;
  const unsigned qmask = qw.qmask;
  const int64_t col = int64_t{strip} * kQuadCols + 16 * t;  // the tile's first column
  const bool active = col < p.cols;                         // uniform over the quad
  const int64_t row0 = int64_t{tr} * 16;                    // the tile's first row
  const uint16_t* x0 = xs + row0 * p.x_stride + col;
  uint4 raw[8];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const uint4* q = reinterpret_cast<const uint4*>(x0 + (L + 4 * k) * p.x_stride);
    raw[2 * k] = active ? load_x16(q) : make_uint4(0, 0, 0, 0);
    raw[2 * k + 1] = active ? load_x16(q + 1) : make_uint4(0, 0, 0, 0);
  }
  const QuadHead h = quad_head<M>(raw, s_tab, gs);
  uint2 c6[4], c4[4];
  bool slow = !h.fast;
  float te6 = 0.0f, te4 = 0.0f;
  constexpr Rule kRule = rule_of<M>();
  float e6[4], e4[4];  // error rules: the rows' approximate errors
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    uint32_t w[8];
    quad_words(raw, k, w);
    float x[16], gv[16];
    unpack_words(w, x);
    grid_values_s(x, h.t6.inv_s, gv);
    if constexpr (is_error_rule<M>()) e6[k] = grid::approx_error<kRule>(x, gv, h.t6.k64);
    c6[k] = quad_codes(gv, w);
    if constexpr (is_error_rule<M>()) {
      grid_values_s(x, h.t4.inv_s, gv);
      e4[k] = grid::approx_error<kRule>(x, gv, h.t4.k64);
      c4[k] = quad_codes(gv, w);
    } else {
      c4[k] = c6[k];
    }
  }
  if constexpr (is_error_rule<M>()) {
    te6 = quad_tree<M>(e6, 0xFFFFFFFFu), te4 = quad_tree<M>(e4, 0xFFFFFFFFu);
    // The tile bound (n = 16 rows, K = k64 / 64 exactly), as quantize_block<M, true>; it holds
    // for the x^T order of the sums too.
    const float k6 = num::mul(h.t6.k64, 0.015625f), k4 = num::mul(h.t4.k64, 0.015625f);
    const float bound = num::add(approx_bound<M>(te6, k6, 16.0f), approx_bound<M>(te4, k4, 16.0f));
    slow = slow || (h.s4 != h.s6 && !(fabsf(num::sub(te4, te6)) > bound));  // quad-uniform
  }
  QuadOut o{};
  if (rowwise)
    o.codes = p.codes + int64_t{item} * p.codes_batch + (row0 + L) * p.codes_stride + col / 2;
  o.codes_stride = p.codes_stride;
  if (kCol) {  // column L of the tile in this warp's run buffers (slow path: L + 4 k)
    o.codes_t = reinterpret_cast<uint8_t*>(buf_t + 5 * L + j);
    o.codes_t_stride = 5 * sizeof(uint2);
    o.scales_t = sbuf_t + 4 * L + j;
    o.scales_t_stride = 4;
  }
  uint32_t pick = h.s6;  // rowwise choice in bits 0..9, columnwise in 16..25 (as quad_slow)
  if (slow) {
    pick = quad_slow<M>(x0, p.x_stride, L, active, h, gs, consts, qmask, o);
  } else {
    if (is_error_rule<M>() && num::pick_map4(te4, te6)) pick = h.s4 | 0x100u;
    pick |= pick << 16;
  }
  if (rowwise && active) {
    uint8_t* scales =
        p.scales + int64_t{item} * p.scales_batch + (row0 + L) * p.scales_stride + col / 16;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if (!(pick & 0x200u))
        *reinterpret_cast<uint2*>(o.codes + 4 * k * p.codes_stride) =
            (pick & 0x100u) ? c4[k] : c6[k];
      scales[4 * k * p.scales_stride] = static_cast<uint8_t>(pick);
    }
  }
  if constexpr (kCol) {
    // Uniform over the warp (the shuffles): a tile whose codes the slow path wrote to the
    // buffers still takes part, its lanes write nothing.
    const uint32_t cp = pick >> 16;
    uint2 w[4], ct[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) w[k] = (cp & 0x100u) ? c4[k] : c6[k];
    quad_transpose(w, L, ct);
    if (!(cp & 0x200u)) {
      const int c0 = 8 * (L & 1) + 2 * (L & 2);  // columns c0 .. c0 + 3 of the tile
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        buf_t[5 * (c0 + c) + j] = ct[c];
        sbuf_t[4 * (c0 + c) + j] = static_cast<uint8_t>(cp);
      }
    }
  }
}

// The columnwise walk (kCol, here and in amax_quantize_experts' pass): warps take runs of kRun
// tile rows down one strip. The run slots, and slot u's strip and run r; false for a slot of a
// partial block past the edges (kBatch: blocks of 8 runs x 4 strips, the kernel says why).
template <bool kBatch, int kRun>
F46_HD uint32_t quad_run_slots(uint32_t trows, uint32_t spr) {
  return kBatch ? ((trows + kRun - 1) / kRun + 7) / 8 * ((spr + 3) / 4) * 32
                : (trows + kRun - 1) / kRun * spr;
}
template <bool kBatch, int kRun>
__device__ __forceinline__ bool quad_run_at(uint32_t u, uint32_t trows, uint32_t spr,
                                            uint32_t& strip, uint32_t& r) {
  strip = u % spr, r = u / spr;
  if constexpr (kBatch) {  // (recomputed per slot: values held across the loop spill)
    const uint32_t blk = u / 32, i = u % 32, bstrips = (spr + 3) / 4;
    r = blk / bstrips * 8 + i % 8;
    strip = blk % bstrips * 4 + i / 8;
    return !(kRun * r >= trows || strip >= spr);  // uniform over the warp
  }
  return true;
}

// A run's columnwise codes and scales from the warp's run buffers to W^T of `item`: lane
// column 8 i + lane / 4 of the strip, tile row lane % 4 of the run, a column's 8 * nj code bytes
// and nj scale bytes per instruction.
__device__ __forceinline__ void quad_store_run(const QuantizeParams& p, uint32_t item,
                                               uint32_t strip, uint32_t tr0, uint32_t nj, int lane,
                                               const uint2* rbuf, const uint8_t* rsbuf) {
  const uint32_t j = lane % 4;
#pragma unroll 4
  for (int i = 0; i < 16; ++i) {
    const int cs = 8 * i + lane / 4, tt = cs / 16, ci = cs % 16;
    const int64_t c = int64_t{strip} * kQuadCols + cs;
    if (c < p.cols && j < nj) {
      const int64_t ct = int64_t{item} * p.codes_t_batch + c * p.codes_t_stride;
      *reinterpret_cast<uint2*>(p.codes_t + ct + (tr0 + j) * 8) =
          rbuf[tt * kQuadTileWords + 5 * ci + j];
      p.scales_t[int64_t{item} * p.scales_t_batch + c * p.scales_t_stride + tr0 + j] =
          rsbuf[tt * kQuadTileScales + 4 * ci + j];
    }
  }
}

template <QuantMode M, bool kCol, int kRun = kQuadRun,
          int kMinCtas = kCol ? kQuadColMinCtas : kLeanTensorMinCtas, bool kBatch = false>
__global__ void __launch_bounds__(kLeanThreads, kMinCtas)
    quantize_tile16_quad_kernel(const QuantizeParams p) {
  __shared__ LeanEntry s_tab[256];
  constexpr int kWarpsBuf = kCol ? kQuadWarps : 1;
  __shared__ uint2 s_codes_t[kWarpsBuf][kCol ? 8 * kQuadTileWords : 1];
  __shared__ uint8_t s_scales_t[kWarpsBuf][kCol ? 8 * kQuadTileScales : 1];
  const ErrorConsts consts = error_consts(p.bound);
  // quantize_experts: the expert (0 for a single tensor). Its output offsets are formed where
  // they are used: pointers held for the whole loop cost registers.
  const uint32_t item = kBatch ? blockIdx.y : 0u;
  const GlobalScale gs = global_scale(p.amax[int64_t{item} * p.amax_batch], p.bound);
  fill_lean_table<M>(s_tab, gs, consts);
  const int lane = threadIdx.x & 31, t = lane / 4, L = lane % 4, warp = threadIdx.x / 32;
  const unsigned qmask = 0xFu << (lane & ~3);
  const uint32_t spr = static_cast<uint32_t>((p.cols + kQuadCols - 1) / kQuadCols);
  const uint32_t trows = static_cast<uint32_t>(p.rows / 16);
  const uint32_t W = gridDim.x * kQuadWarps;
  const uint16_t* xs = static_cast<const uint16_t*>(p.x) + int64_t{item} * p.x_batch;
  const bool rowwise = !kCol || p.rowwise;
  uint2* buf_t = s_codes_t[kCol ? warp : 0] + t * kQuadTileWords;  // this tile's columns
  uint8_t* sbuf_t = s_scales_t[kCol ? warp : 0] + t * kQuadTileScales;
  // Tile row `tr` of strip `strip`, j-th of its run (kCol).
  QuadWarp qw;
  qw.tab = s_tab;
  qw.gs = gs;
  qw.consts = consts;
  qw.xs = xs;
  qw.item = item;
  qw.t = t;
  qw.L = L;
  qw.qmask = qmask;
  qw.rowwise = rowwise;
  qw.buf_t = buf_t;
  qw.sbuf_t = sbuf_t;
  auto step = [&](uint32_t tr, uint32_t strip, int j) { quad_step<M, kCol>(p, qw, tr, strip, j); };
  if constexpr (!kCol) {
    const uint32_t n = trows * spr;
    for (uint32_t s = blockIdx.x * kQuadWarps + warp; s < n; s += W) step(s / spr, s % spr, 0);
  } else {
    static_assert(kRun >= 1 && kRun <= 4, "the buffers hold 4 tile rows per column");
    // kBatch: an expert has fewer warps than strips, so in the order below the runs down one
    // strip came far apart in time and each 4-byte piece of a columnwise scale sector (8 runs
    // of a strip) reached L2 alone, to be written back partially (Qwen3 experts under Nsight
    // Compute: 24% more DRAM reads, 40% more writes, twice the single-tensor time per
    // element). There the runs go in blocks of 8 runs x 4 strips, which fill the sectors of
    // both scale outputs (columnwise: 8 runs of a strip; rowwise: 4 strips of a run) together;
    // slots of a partial block past the edges are skipped.
    const uint32_t n = quad_run_slots<kBatch, kRun>(trows, spr);
    const uint2* rbuf = s_codes_t[warp];
    const uint8_t* rsbuf = s_scales_t[warp];
    for (uint32_t u = blockIdx.x * kQuadWarps + warp; u < n; u += W) {  // uniform
      uint32_t strip, r;
      if (!quad_run_at<kBatch, kRun>(u, trows, spr, strip, r)) continue;
      const uint32_t tr0 = kRun * r;
      const uint32_t nj = trows - tr0 < kRun ? trows - tr0 : kRun;
      for (uint32_t j = 0; j < nj; ++j) step(tr0 + j, strip, static_cast<int>(j));
      __syncwarp();
      quad_store_run(p, item, strip, tr0, nj, lane, rbuf, rsbuf);
      __syncwarp();  // the buffers are written again by the next run
    }
  }
}

}  // namespace f46::cuda
