// LAB KERNEL, not in the library (dev/): measured on an H100 2026-12-05 (dev/gpu_lean.sh, the
// 16x16 section of dev/lean_lab.cu, bytewise equal to the tile kernel; the whole CUDA quantize
// suite passed while it was dispatched) at 0.54 / 0.53 / 0.53 of copy for '16x16 weights MAE'
// against the tile kernel's 0.53 / 0.54 / 0.53 in the same run: no gain, so the tile kernel
// serves 16x16. (Its first version, 2026-12-05 morning, had 64-bit divisions in the loop and
// ran at 0.35-0.39 on the H200.)
//
// The lean 16x16 kernel: bf16 input, 16x16 blocks (weights, N1.4), rowwise output only, a
// per-tensor or per-group global amax, round to nearest, no RHT, cols % 32 == 0, fewer than
// 2^31 steps. Same arithmetic and results as the tile kernel (quantize_tile_kernel.cuh,
// quantize_block<M, true>), in the lean form of quantize_lean.cuh: the LeanEntry table per
// scale byte, packed block amax, signs from the raw bf16 words, each lane loading its row's 32
// bytes straight into registers one step ahead.
//
// Work: steps of 16 rows x 32 columns (two tiles side by side), one per warp at a time; lane
// 16 h + i holds row i of tile h. Per tensor the warps take the steps round robin, per group
// each warp a contiguous range (a band left to right), so its table's group changes rarely. A
// step's tile row and column pair advance incrementally (no divisions in the loop). The tile's
// amax and its error tree (N3.4) are shuffles within the half-warp, so every decision is uniform
// over the tile. A tile takes the amax of its first row (for valid offsets, multiples of 16,
// every row of a tile is in one group).
#pragma once

#include <cstdint>

#include "cuda/common/group_offsets.cuh"
#include "cuda/quantize/quantize_lean.cuh"

namespace f46::cuda {

// Registers bounded for this many CTAs per SM (5: 96 registers, measured 5 % slower).
inline constexpr int kLeanTile16MinCtas = 4;

// The tiles lean_tile_row does not finish (uniform over the half-warp): not admitted by the fast
// path (the reference path) or undecided by the approximate errors (exact errors, tree, choice).
template <QuantMode M>
__device__ __noinline__ BlockCodes lean_tile_slow(const Block16 xb, float b, const GlobalScale g,
                                                  const ErrorConsts c, bool fast, uint32_t s6,
                                                  uint32_t s4, float inv6_s, float inv4_s,
                                                  unsigned half_mask) {
  constexpr Rule kRule = rule_of<M>();
  float x[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) x[i] = xb.v[i];
  if (!fast) return reference_block_4over6<M, true>(x, b, g, c, half_mask);
  float gv[16];
  grid_values_s(x, inv6_s, gv);
  float e6 = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s6)), g.amax, c.denom,
                                      c.rdenom, 64.0f);
  grid_values_s(x, inv4_s, gv);
  float e4 = grid::exact_error<kRule>(x, gv, e4m3_value(static_cast<uint8_t>(s4)), g.amax, c.denom,
                                      c.rdenom, 64.0f);
  e6 = tile_error_tree<M>(e6, half_mask);
  e4 = tile_error_tree<M>(e4, half_mask);
  const bool four = num::pick_map4(e4, e6);
  grid_values_s(x, four ? inv4_s : inv6_s, gv);
  return BlockCodes{pack_codes_s(gv) | sign_nibbles(x), static_cast<uint8_t>(four ? s4 : s6)};
}

// Row i of a 16x16 tile (lanes of `half_mask`, one row each) from its 8 raw bf16 words:
// quantize_block<M, true> with the lean table. Error rules only (the lab measures MAE; the plain
// rules' block code would repeat lean_block's).
template <QuantMode M>
__device__ __forceinline__ BlockCodes lean_tile_row(const uint32_t (&w)[8], const LeanEntry* tab,
                                                    const GlobalScale& g, const ErrorConsts& c,
                                                    unsigned half_mask) {
  constexpr Rule kRule = rule_of<M>();
  float x[16];
  unpack_words(w, x);
  float b = packed_amax(w);  // the tile's amax, on all 16 lanes
#pragma unroll
  for (int d = 8; d >= 1; d >>= 1) b = max_nan(b, __shfl_xor_sync(half_mask, b, d, 16));
  const float base = num::mul(grid::div6_fast(b), g.s_enc);  // as lean_block
  const uint32_t s64 = e4m3x2(base, num::mul(base, 1.5f));
  const uint32_t s6 = s64 & 0xFFu, s4 = (s64 >> 8) & 0xFFu;
  const LeanEntry t6 = tab[s6], t4 = tab[s4];
  const bool fast = grid::div6_fast_ok(b) & (b < t6.limit) & (b < t4.limit);  // uniform
  float gv[16];
  grid_values_s(x, t6.inv_s, gv);
  float e6 = grid::approx_error<kRule>(x, gv, t6.k64);
  const grid::CodeWords a6 = grid::even_odd_s(gv), b6 = grid::even_odd_s(gv + 8);
  grid_values_s(x, t4.inv_s, gv);
  float e4 = grid::approx_error<kRule>(x, gv, t4.k64);
  const grid::CodeWords a4 = grid::even_odd_s(gv), b4 = grid::even_odd_s(gv + 8);
  e6 = tile_error_tree<M>(e6, half_mask);
  e4 = tile_error_tree<M>(e4, half_mask);
  // K = k64 / 64 exactly (C2 keeps K below 2^108); the tile bounds of grid_math.h, n = 16.
  const float k6 = num::mul(t6.k64, 0.015625f), k4 = num::mul(t4.k64, 0.015625f);
  const float bound = num::add(approx_bound<M>(e6, k6, 16.0f), approx_bound<M>(e4, k4, 16.0f));
  const bool undecided = s4 != s6 && !(fabsf(num::sub(e4, e6)) > bound);  // uniform
  if (!fast || undecided) {
    Block16 xb;
#pragma unroll
    for (int i = 0; i < 16; ++i) xb.v[i] = x[i];
    return lean_tile_slow<M>(xb, b, g, c, fast, s6, s4, t6.inv_s, t4.inv_s, half_mask);
  }
  const bool four = num::pick_map4(e4, e6);  // equal scales: equal errors, 6
  const uint32_t lo = grid::signed_codes8(four ? a4 : a6, w);
  const uint32_t hi = grid::signed_codes8(four ? b4 : b6, w + 4);
  return BlockCodes{lo | (static_cast<uint64_t>(hi) << 32), static_cast<uint8_t>(four ? s4 : s6)};
}

// A step's position: tile row `tr` (rows 16 tr ..), column pair `pc` (columns 32 pc ..).
struct Tile16Pos {
  uint32_t tr, pc;
};

template <QuantMode M, int kMinCtas = kLeanTile16MinCtas>  // kMinCtas: open for dev/lean_lab.cu
__global__ void __launch_bounds__(kLeanThreads, kMinCtas)
    quantize_tile16_lean_kernel(const QuantizeParams p) {
  static_assert(is_error_rule<M>(), "error rules only (a lab kernel)");
  constexpr int kWarps = kLeanThreads / 32;
  __shared__ LeanEntry s_tab[kWarps][256];  // per warp
  extern __shared__ int32_t s_offs[];       // group scope: the clamped group ends
  const bool grouped = p.scope == ScopeKind::kGroup;
  if (grouped) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int h = lane / 16, i = lane % 16;
  const unsigned half_mask = 0xFFFFu << (16 * h);
  const uint32_t pairs = static_cast<uint32_t>(p.cols / 32);
  const uint32_t n_steps = static_cast<uint32_t>(p.rows / 16) * pairs;  // < 2^31 (host)
  const uint32_t warps = gridDim.x * kWarps, gw = blockIdx.x * kWarps + warp;
  const uint32_t s_begin = grouped ? static_cast<uint32_t>(uint64_t{n_steps} * gw / warps) : gw;
  const uint32_t s_end =
      grouped ? static_cast<uint32_t>(uint64_t{n_steps} * (gw + 1) / warps) : n_steps;
  const uint32_t s_inc = grouped ? 1u : warps;
  if (s_begin >= s_end) return;  // no CTA barrier below: a warp without work may leave
  const Tile16Pos d{s_inc / pairs, s_inc % pairs};
  auto advance = [&](Tile16Pos q) {
    q.tr += d.tr;
    q.pc += d.pc;
    if (q.pc >= pairs) q.pc -= pairs, ++q.tr;
    return q;
  };
  auto load = [&](Tile16Pos q, uint4& a, uint4& b) {
    const int64_t row = int64_t{q.tr} * 16 + i, col = int64_t{q.pc} * 32 + 16 * h;
    const auto* src =
        reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.x) + row * p.x_stride + col);
    a = load_x16(src);
    b = load_x16(src + 1);
  };
  const ErrorConsts consts = error_consts(p.bound);
  LeanEntry* tab = s_tab[warp];
  GlobalScale gs{};
  bool valid = false;
  int64_t g_lo = 0, g_hi = -1;  // group scope: rows [g_lo, g_hi) share the cached amax
  float g_amax = 0.0f;
  Tile16Pos pos{s_begin / pairs, s_begin % pairs};
  uint4 a, b;
  load(pos, a, b);
  for (uint32_t s = s_begin; s < s_end; s += s_inc) {
    const int64_t row0 = int64_t{pos.tr} * 16;
    float amax = p.amax[0];  // the tile's: its first row's (uniform over the warp)
    if (grouped) {
      if (row0 < g_lo || row0 >= g_hi) {  // uniform; rare with contiguous ranges
        const int g = group_of_row(s_offs, p.num_groups, row0);
        g_lo = g > 0 ? s_offs[g - 1] : 0;
        g_hi = g < p.num_groups ? s_offs[g] : INT64_MAX;
        g_amax = g < p.num_groups ? p.amax[g] : 0.0f;
      }
      amax = g_amax;
    }
    if (!valid || num::bits(amax) != num::bits(gs.amax)) {  // uniform
      __syncwarp();                                         // every lane is done with the old table
      gs = global_scale(amax, p.bound);
      for (int e = lane; e < 256; e += 32) tab[e] = lean_entry<M>(e, gs, consts);
      valid = true;
      __syncwarp();
    }
    const uint4 ca = a, cb = b;
    const Tile16Pos next = advance(pos);
    if (s + s_inc < s_end) load(next, a, b);
    const uint32_t w[8] = {ca.x, ca.y, ca.z, ca.w, cb.x, cb.y, cb.z, cb.w};
    const BlockCodes r = lean_tile_row<M>(w, tab, gs, consts, half_mask);
    const int64_t row = row0 + i, col = int64_t{pos.pc} * 32 + 16 * h;
    *reinterpret_cast<uint64_t*>(p.codes + row * p.codes_stride + col / 2) = r.codes;
    p.scales[row * p.scales_stride + col / 16] = r.scale;
    pos = next;
  }
}

}  // namespace f46::cuda
