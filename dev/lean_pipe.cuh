// LAB KERNEL, not in the library (dev/): measured SLOWER on an H100 2026-12-05 (dev/lean_lab.cu
// with LAB_ROWS_ONLY=1, bytewise equal): MAE 0.64 / 0.71 / 0.71 of copy at 5 CTAs (spills) and
// 0.68 / 0.74 / 0.75 at 4, against the landed lean tensor kernel's 0.75 / 0.84 / 0.84 in the
// same run. More live registers (or fewer warps) cost more than the earlier lookup saves.
//
// The per-tensor lean rows loop with the table lookup of
// the next block moved ahead. Nsight Compute (bench/RESULTS.md, 2026-12-05 afternoon) has a
// third of the lean tensor kernel's stall cycles on the shared-memory load of the scale-table
// entries, which every block's candidates wait for. Here a block is cut into three parts:
//   lean_head:   block amax, candidate scale bytes, the two table entries (the LDS);
//   lean_cands:  both candidates' grid values, approximate errors and code words;
//   lean_finish: the decision, the one branch to lean_slow, signs and codes.
// and the loop runs the next block's head between this block's candidates and its finish, so
// that block's table loads are in flight while this one finishes and stores. Error rules only
// (the plain rules have one candidate and no such wait to speak of). Same arithmetic as
// lean_block: dev/lean_lab.cu compares it bytewise with the general rows kernel.
#pragma once

#include <cstdint>

#include "cuda/quantize/quantize_lean.cuh"

namespace f46::cuda {

struct LeanHead {
  float b;
  uint32_t s6, s4;
  LeanEntry t6, t4;
};
struct LeanCands {
  float e6, e4;
  grid::CodeWords a6, b6, a4, b4;
};

__device__ __forceinline__ LeanHead lean_head(const uint32_t (&w)[8], const LeanEntry* tab,
                                              const GlobalScale& g) {
  const float b = packed_amax(w);
  const float base = num::mul(grid::div6_fast(b), g.s_enc);
  const uint32_t s64 = e4m3x2(base, num::mul(base, 1.5f));
  const uint32_t s6 = s64 & 0xFFu, s4 = (s64 >> 8) & 0xFFu;
  return LeanHead{b, s6, s4, tab[s6], tab[s4]};
}

template <QuantMode M>
__device__ __forceinline__ LeanCands lean_cands(const uint32_t (&w)[8], const LeanHead& h) {
  constexpr Rule kRule = rule_of<M>();
  float x[16];
  unpack_words(w, x);
  LeanCands r;
  float gv[16];
  grid_values_s(x, h.t6.inv_s, gv);
  r.e6 = grid::approx_error<kRule>(x, gv, h.t6.k64);
  r.a6 = grid::even_odd_s(gv);
  r.b6 = grid::even_odd_s(gv + 8);
  grid_values_s(x, h.t4.inv_s, gv);
  r.e4 = grid::approx_error<kRule>(x, gv, h.t4.k64);
  r.a4 = grid::even_odd_s(gv);
  r.b4 = grid::even_odd_s(gv + 8);
  return r;
}

template <QuantMode M>
__device__ __forceinline__ BlockCodes lean_finish(const uint32_t (&w)[8], const LeanHead& h,
                                                  const LeanCands& r, const GlobalScale& g,
                                                  const ErrorConsts& c) {
  constexpr Rule kRule = rule_of<M>();
  const bool fast = grid::div6_fast_ok(h.b) & (h.b < h.t6.limit) & (h.b < h.t4.limit);
  const bool undecided =
      h.s4 != h.s6 &&
      !(fabsf(num::sub(r.e4, r.e6)) > grid::lean_bound<kRule>(r.e6, r.e4, h.t6.kterm, h.t4.kterm));
  if (!fast || undecided) {
    float x[16];
    unpack_words(w, x);
    Block16 xb;
#pragma unroll
    for (int i = 0; i < 16; ++i) xb.v[i] = x[i];
    return lean_slow<M>(xb, h.b, g, c, fast, h.s6, h.s4, h.t6.inv_s, h.t4.inv_s);
  }
  const bool four = num::pick_map4(r.e4, r.e6);
  const uint32_t lo = grid::signed_codes8(four ? r.a4 : r.a6, w);
  const uint32_t hi = grid::signed_codes8(four ? r.b4 : r.b6, w + 4);
  return BlockCodes{lo | (static_cast<uint64_t>(hi) << 32),
                    static_cast<uint8_t>(four ? h.s4 : h.s6)};
}

// quantize_rows_lean_tensor_kernel's loop with the head of the next block between the
// candidates and the finish of the current one.
template <QuantMode M, int kMinCtas>
__global__ void __launch_bounds__(kLeanThreads, kMinCtas) lean_pipe_kernel(const QuantizeParams p) {
  static_assert(is_error_rule<M>(), "error rules only");
  __shared__ LeanEntry s_tab[256];
  const ErrorConsts consts = error_consts(p.bound);
  const GlobalScale gs = global_scale(p.amax[0], p.bound);
  fill_lean_table<M>(s_tab, gs, consts);
  const uint32_t total = static_cast<uint32_t>(p.rows * (p.cols / 16));  // < 2^31
  const uint32_t stride = gridDim.x * kLeanThreads;
  uint32_t blk = blockIdx.x * kLeanThreads + threadIdx.x;
  const uint4* src = static_cast<const uint4*>(p.x);
  uint64_t* codes = reinterpret_cast<uint64_t*>(p.codes);
  auto words = [](const uint4& a, const uint4& b, uint32_t(&w)[8]) {
    w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = b.x, w[5] = b.y, w[6] = b.z, w[7] = b.w;
  };
  uint4 a0{}, a1{}, b0{}, b1{};
  uint32_t wa[8], wb[8];
  LeanHead ha{}, hb{};
  if (blk < total) {
    a0 = load_x16(src + 2 * int64_t{blk}), a1 = load_x16(src + 2 * int64_t{blk} + 1);
    words(a0, a1, wa);
    ha = lean_head(wa, s_tab, gs);
  }
  while (blk < total) {
    const uint32_t nb = blk + stride;
    if (nb < total) b0 = load_x16(src + 2 * int64_t{nb}), b1 = load_x16(src + 2 * int64_t{nb} + 1);
    words(a0, a1, wa);
    const LeanCands ra = lean_cands<M>(wa, ha);
    if (nb < total) words(b0, b1, wb), hb = lean_head(wb, s_tab, gs);
    const BlockCodes qa = lean_finish<M>(wa, ha, ra, gs, consts);
    codes[blk] = qa.codes;
    p.scales[blk] = qa.scale;
    if (nb >= total) break;
    blk = nb + stride;
    if (blk < total)
      a0 = load_x16(src + 2 * int64_t{blk}), a1 = load_x16(src + 2 * int64_t{blk} + 1);
    const LeanCands rb = lean_cands<M>(wb, hb);
    if (blk < total) words(a0, a1, wa), ha = lean_head(wa, s_tab, gs);
    const BlockCodes qb = lean_finish<M>(wb, hb, rb, gs, consts);
    codes[nb] = qb.codes;
    p.scales[nb] = qb.scale;
  }
}

}  // namespace f46::cuda
