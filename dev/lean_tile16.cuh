// LAB KERNEL, not in the library (dev/): measured on the H200 2026-12-05 (dev/gpu_lean.sh:
// bench_quantize while it was dispatched, the whole CUDA quantize suite passing) at
// 0.35/0.37/0.39 of copy for '16x16 weights MAE' against the tile kernel's 0.38/0.42/0.43
// (2026-12-04): half-warp tiles with per-lane 32-byte register loads and the shuffle trees did
// not beat the tile kernel's shared-memory units. The lab (dev/lean_lab.cu) compares the two.
//
// The lean 16x16 kernel: bf16 input, 16x16 blocks (weights, N1.4), rowwise output only, a
// per-tensor or per-group global amax, round to nearest, no RHT, cols % 32 == 0: the weights of
// training, quantized every step. Same arithmetic and results as the tile kernel
// (quantize_tile_kernel.cuh, quantize_block<M, true>), in the lean form of quantize_lean.cuh:
// the LeanEntry table per scale byte, signs from the raw bf16 words, each lane loading its row's
// 32 bytes straight into registers one step ahead.
//
// Work: steps of 16 rows x 32 columns (two tiles side by side), one per warp at a time; lane
// 16 h + i holds row i of tile h. Per tensor the warps take the steps round robin, per group
// each warp a contiguous range (a band left to right), so its table's group changes rarely.
// The tile's amax and its error tree (N3.4) are shuffles within the half-warp, so every
// decision is uniform over the tile. A tile takes the amax of its first row (for valid offsets,
// multiples of 16, every row of a tile is in one group).
#pragma once

#include <cstdint>

#include "cuda/common/group_offsets.cuh"
#include "cuda/quantize/quantize_lean.cuh"

namespace f46::cuda {

// Registers bounded for this many CTAs per SM (5 spills ~100 bytes in the error rules).
inline constexpr int kLeanTile16MinCtas = 4;

// Row i of a 16x16 tile (lanes of `half_mask`, one row each) from its 8 raw bf16 words:
// quantize_block<M, true> with the lean table. Its plain-rule branch and final code selection
// repeat lean_block's on purpose: moving them into shared helpers changed the machine code of
// the device-verified lean rows kernel (cuobjdump, 2026-12-05), which this lab kernel should not.
template <QuantMode M>
__device__ __forceinline__ BlockCodes lean_tile_row(const uint32_t (&w)[8], const LeanEntry* tab,
                                                    const GlobalScale& g, const ErrorConsts& c,
                                                    unsigned half_mask) {
  constexpr Rule kRule = rule_of<M>();
  float x[16];
  unpack_words(w, x);
  const float b = block_amax<true>(x, half_mask);  // the tile's amax, on all 16 lanes
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
    const uint32_t lo = grid::or_signs8_bf16(grid::pack_codes8_s(gv), w);
    const uint32_t hi = grid::or_signs8_bf16(grid::pack_codes8_s(gv + 8), w + 4);
    return BlockCodes{lo | (static_cast<uint64_t>(hi) << 32), scale};
  } else {
    const float base = num::mul(grid::div6_fast(b), g.s_enc);
    const uint32_t s64 = e4m3x2(base, num::mul(base, 1.5f));
    const uint32_t s6 = s64 & 0xFFu, s4 = (s64 >> 8) & 0xFFu;
    const LeanEntry t6 = tab[s6], t4 = tab[s4];
    // Uniform over the tile: b, the scales and their entries are.
    const bool fast = grid::div6_fast_ok(b) && e4m3x2_ok(base) && b < t6.limit && b < t4.limit;
    if (!fast) return reference_block_4over6<M, true>(x, b, g, c, half_mask);
    float gv[16];
    grid_values_s(x, t6.inv_s, gv);
    float e6 = grid::approx_error<kRule>(x, gv, t6.k64);
    const grid::CodeWords a6 = grid::even_odd_s(gv), b6 = grid::even_odd_s(gv + 8);
    grid_values_s(x, t4.inv_s, gv);
    float e4 = grid::approx_error<kRule>(x, gv, t4.k64);
    const grid::CodeWords a4 = grid::even_odd_s(gv), b4 = grid::even_odd_s(gv + 8);
    e6 = tile_error_tree<M>(e6, half_mask);
    e4 = tile_error_tree<M>(e4, half_mask);
    bool four = false;
    if (s4 != s6) {
      // K = k64 / 64 exactly (C2 keeps K below 2^108); the tile bounds of grid_math.h, n = 16.
      const float k6 = num::mul(t6.k64, 0.015625f), k4 = num::mul(t4.k64, 0.015625f);
      const float bound = num::add(approx_bound<M>(e6, k6, 16.0f), approx_bound<M>(e4, k4, 16.0f));
      if (!(fabsf(num::sub(e4, e6)) > bound)) {  // undecided (uniform): the exact errors
        grid_values_s(x, t6.inv_s, gv);
        e6 = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s6)), g.amax, c.denom,
                                      c.rdenom, 64.0f);
        grid_values_s(x, t4.inv_s, gv);
        e4 = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s4)), g.amax, c.denom,
                                      c.rdenom, 64.0f);
        e6 = tile_error_tree<M>(e6, half_mask);
        e4 = tile_error_tree<M>(e4, half_mask);
      }
      four = num::pick_map4(e4, e6);
    }
    const uint32_t lo = grid::or_signs8_bf16(grid::join_s(four ? a4 : a6), w);
    const uint32_t hi = grid::or_signs8_bf16(grid::join_s(four ? b4 : b6), w + 4);
    return BlockCodes{lo | (static_cast<uint64_t>(hi) << 32), static_cast<uint8_t>(four ? s4 : s6)};
  }
}

template <QuantMode M>
__global__ void __launch_bounds__(kLeanThreads, kLeanTile16MinCtas)
    quantize_tile16_lean_kernel(const QuantizeParams p) {
  constexpr int kWarps = kLeanThreads / 32;
  __shared__ LeanEntry s_tab[kWarps][256];  // per warp
  extern __shared__ int32_t s_offs[];       // group scope: the clamped group ends
  const bool grouped = p.scope == ScopeKind::kGroup;
  if (grouped) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int h = lane / 16, i = lane % 16;
  const unsigned half_mask = 0xFFFFu << (16 * h);
  const int64_t pairs = p.cols / 32, n_steps = (p.rows / 16) * pairs;
  const int64_t warps = int64_t{gridDim.x} * kWarps;
  const int64_t gw = int64_t{blockIdx.x} * kWarps + warp;
  const int64_t s_begin = grouped ? n_steps * gw / warps : gw;
  const int64_t s_end = grouped ? n_steps * (gw + 1) / warps : n_steps;
  const int64_t s_inc = grouped ? 1 : warps;
  if (s_begin >= s_end) return;  // no CTA barrier below: a warp without work may leave

  // Lane's row and first column in step s.
  auto row_of = [&](int64_t s) { return (s / pairs) * 16 + i; };
  auto col_of = [&](int64_t s) { return (s % pairs) * 32 + 16 * h; };
  auto load = [&](int64_t s, uint4& a, uint4& b) {
    const auto* src = reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.x) +
                                                     row_of(s) * p.x_stride + col_of(s));
    a = load_x16(src);
    b = load_x16(src + 1);
  };
  const ErrorConsts consts = error_consts(p.bound);
  LeanEntry* tab = s_tab[warp];
  GlobalScale gs{};
  bool valid = false;
  uint4 a, b;
  load(s_begin, a, b);
  for (int64_t s = s_begin; s < s_end; s += s_inc) {
    const int64_t row0 = (s / pairs) * 16;
    float amax = p.amax[0];  // the tile's: its first row's (uniform over the warp)
    if (grouped) {
      const int g = group_of_row(s_offs, p.num_groups, row0);
      amax = g < p.num_groups ? p.amax[g] : 0.0f;
    }
    if (!valid || num::bits(amax) != num::bits(gs.amax)) {  // uniform
      __syncwarp();                                         // every lane is done with the old table
      gs = global_scale(amax, p.bound);
      for (int e = lane; e < 256; e += 32) tab[e] = lean_entry<M>(e, gs, consts);
      valid = true;
      __syncwarp();
    }
    const uint4 ca = a, cb = b;
    if (s + s_inc < s_end) load(s + s_inc, a, b);
    const uint32_t w[8] = {ca.x, ca.y, ca.z, ca.w, cb.x, cb.y, cb.z, cb.w};
    const BlockCodes r = lean_tile_row<M>(w, tab, gs, consts, half_mask);
    const int64_t row = row0 + i, col = col_of(s);
    *reinterpret_cast<uint64_t*>(p.codes + row * p.codes_stride + col / 2) = r.codes;
    p.scales[row * p.scales_stride + col / 16] = r.scale;
  }
}

}  // namespace f46::cuda
