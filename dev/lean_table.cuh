// LAB KERNELS, not in the library (dev/lean_lab.cu): the lean tensor kernel with other layouts
// of the per-scale table, to test whether the wait on its shared-memory lookups (a third of the
// stall cycles, Nsight Compute 2026-12-05) comes from the 16-byte entries (LDS.128, whose
// lanes conflict when their scale bytes are equal mod 8):
//   SoaTable:     four arrays of 256 floats, four 4-byte loads per candidate (conflicts only
//                 between scale bytes equal mod 32);
//   CompactTable: 8-byte entries (inv_s, K * 64), the fast-path admission as
//                 RN(b * inv_s) < 7/64 with inv_s NaN where the entry admits nothing (inv_s
//                 not normal, or K NaN: grid::fast_limit's 0), the bound's K term computed.
// The error rules only; the results are those of lean_block (the lab compares them bytewise).
// Their rare blocks go to lean_block's lean_reference / lean_exact_four, so the AoS table is the
// src arithmetic in this loop (the control). Until commit 6d2aa6a the control kept the former
// slow path (bench/RESULTS.md, 2026-12-05 evening, measured with that form).
// Timing ceilings (wrong results, the lab reports them unequal): Ceiling::kNoCvt, the E4M3
// code conversions (F2FP) replaced by an XOR; Ceiling::kNoTable, no table loads (every block
// takes entries 0x60 and 0x64 from registers as its two candidates', admitted; two distinct
// entries, or the compiler merges the candidates); Ceiling::kNoSlow, the table loads kept and
// every block admitted and decided (no out-of-line path).
#pragma once

#include <cstdint>

#include "cuda/quantize/quantize_lean.cuh"

namespace f46::cuda {

struct AosTable {  // the src layout (control)
  LeanEntry e[256];
  template <QuantMode M>
  __device__ void fill(const GlobalScale& g, const ErrorConsts& c) {
    fill_lean_table<M>(e, g, c);
  }
  template <QuantMode M>
  __device__ __forceinline__ LeanEntry get(uint32_t s) const {
    return e[s];
  }
  __device__ __forceinline__ static bool admit(float b, const LeanEntry& t) { return b < t.limit; }
};

struct SoaTable {
  float inv_s[256], k64[256], kterm[256], limit[256];
  template <QuantMode M>
  __device__ void fill(const GlobalScale& g, const ErrorConsts& c) {
    for (int s = threadIdx.x; s < 256; s += blockDim.x) {
      const LeanEntry e = lean_entry<M>(s, g, c);
      inv_s[s] = e.inv_s, k64[s] = e.k64, kterm[s] = e.kterm, limit[s] = e.limit;
    }
    __syncthreads();
  }
  template <QuantMode M>
  __device__ __forceinline__ LeanEntry get(uint32_t s) const {
    return LeanEntry{inv_s[s], k64[s], kterm[s], limit[s]};
  }
  __device__ __forceinline__ static bool admit(float b, const LeanEntry& t) { return b < t.limit; }
};

struct CompactTable {
  float2 e[256];  // (inv_s or NaN, K * 64)
  template <QuantMode M>
  __device__ void fill(const GlobalScale& g, const ErrorConsts& c) {
    for (int s = threadIdx.x; s < 256; s += blockDim.x) {
      const LeanEntry t = lean_entry<M>(s, g, c);
      e[s] = make_float2(t.limit > 0.0f ? t.inv_s : num::from_bits(0x7FC00000u), t.k64);
    }
    __syncthreads();
  }
  template <QuantMode M>
  __device__ __forceinline__ LeanEntry get(uint32_t s) const {
    const float2 v = e[s];
    float kterm;  // grid::bound_kterm of K = k64 / 64
    if constexpr (rule_of<M>() == Rule::kMSE)
      kterm = grid::fma_rn(num::mul(v.y, v.y), 2.384185791015625e-07f, 7.52316384526264005e-37f);
    else
      kterm = grid::fma_rn(v.y, 9.5367431640625e-07f, 7.52316384526264005e-37f);
    return LeanEntry{v.x, v.y, kterm, 0.0f};
  }
  __device__ __forceinline__ static bool admit(float b, const LeanEntry& t) {
    return num::mul(b, t.inv_s) < 0.109375f;
  }
};

enum class Ceiling { kNone, kNoCvt, kNoTable, kNoSlow };
__device__ __forceinline__ grid::CodeWords fake_even_odd(const float* g) {  // kNoCvt
  return grid::CodeWords{num::bits(g[0]) ^ num::bits(g[2]) ^ num::bits(g[4]),
                         num::bits(g[1]) ^ num::bits(g[3]) ^ num::bits(g[5]) ^ num::bits(g[6])};
}

// lean_block's error-rule branch with the table `Tab`.
template <QuantMode M, class Tab, Ceiling kC = Ceiling::kNone>
__device__ __forceinline__ BlockCodes lean_block_tab(const uint32_t (&w)[8], const Tab& tab,
                                                     const GlobalScale& g, const ErrorConsts& c,
                                                     const LeanEntry& fixed6,
                                                     const LeanEntry& fixed4) {
  static_assert(is_error_rule<M>(), "error rules only");
  constexpr Rule kRule = rule_of<M>();
  float x[16];
  unpack_words(w, x);
  const float b = packed_amax(w);
  const float base = num::mul(grid::div6_fast(b), g.s_enc);
  const uint32_t s64 = e4m3x2(base, num::mul(base, 1.5f));
  const uint32_t s6 = s64 & 0xFFu, s4 = (s64 >> 8) & 0xFFu;
  LeanEntry t6, t4;
  bool fast;
  if constexpr (kC == Ceiling::kNoTable) {
    t6 = fixed6, t4 = fixed4;
    fast = true;
  } else {
    t6 = tab.template get<M>(s6), t4 = tab.template get<M>(s4);
    fast = grid::div6_fast_ok(b) & Tab::admit(b, t6) & Tab::admit(b, t4);
  }
  float gv[16];
  grid_values_s(x, t6.inv_s, gv);
  const float e6 = grid::approx_error<kRule>(x, gv, t6.k64);
  const grid::CodeWords a6 = kC == Ceiling::kNoCvt ? fake_even_odd(gv) : grid::even_odd_s(gv),
                        b6 = kC == Ceiling::kNoCvt ? fake_even_odd(gv + 8)
                                                   : grid::even_odd_s(gv + 8);
  grid_values_s(x, t4.inv_s, gv);
  const float e4 = grid::approx_error<kRule>(x, gv, t4.k64);
  const grid::CodeWords a4 = kC == Ceiling::kNoCvt ? fake_even_odd(gv) : grid::even_odd_s(gv),
                        b4 = kC == Ceiling::kNoCvt ? fake_even_odd(gv + 8)
                                                   : grid::even_odd_s(gv + 8);
  const bool undecided =
      kC != Ceiling::kNoSlow && s4 != s6 &&
      !(fabsf(num::sub(e4, e6)) > grid::lean_bound<kRule>(e6, e4, t6.kterm, t4.kterm));
  bool four;
  if ((kC != Ceiling::kNoSlow && !fast) || undecided) {
    const uint4 a = make_uint4(w[0], w[1], w[2], w[3]), bw = make_uint4(w[4], w[5], w[6], w[7]);
    if (!fast) return lean_reference<M>(a, bw, g, c);
    four = lean_exact_four<M>(a, bw, g, c, s6, s4, t6.inv_s, t4.inv_s);
  } else {
    four = num::pick_map4(e4, e6);
  }
  const uint32_t lo = grid::signed_codes8(four ? a4 : a6, w);
  const uint32_t hi = grid::signed_codes8(four ? b4 : b6, w + 4);
  return BlockCodes{lo | (static_cast<uint64_t>(hi) << 32), static_cast<uint8_t>(four ? s4 : s6)};
}

// quantize_rows_lean_tensor_kernel with the table `Tab`.
template <QuantMode M, class Tab, int kMinCtas = kLeanTensorMinCtas, Ceiling kC = Ceiling::kNone>
__global__ void __launch_bounds__(kLeanThreads, kMinCtas)
    lean_table_kernel(const QuantizeParams p) {
  __shared__ Tab s_tab;
  const ErrorConsts consts = error_consts(p.bound);
  const GlobalScale gs = global_scale(p.amax[0], p.bound);
  s_tab.template fill<M>(gs, consts);
  const LeanEntry fixed6 = s_tab.template get<M>(0x60), fixed4 = s_tab.template get<M>(0x64);
  const uint32_t total = static_cast<uint32_t>(p.rows * (p.cols / 16));
  const uint32_t stride = gridDim.x * kLeanThreads;
  uint32_t blk = blockIdx.x * kLeanThreads + threadIdx.x;
  const uint4* src = static_cast<const uint4*>(p.x);
  uint64_t* codes = reinterpret_cast<uint64_t*>(p.codes);
  auto store = [&](const uint4& a, const uint4& b, uint32_t i) {
    const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    const BlockCodes r = lean_block_tab<M, Tab, kC>(w, s_tab, gs, consts, fixed6, fixed4);
    codes[i] = r.codes;
    p.scales[i] = r.scale;
  };
  uint4 a0{}, a1{}, b0{}, b1{};
  if (blk < total) a0 = load_x16(src + 2 * int64_t{blk}), a1 = load_x16(src + 2 * int64_t{blk} + 1);
  while (blk < total) {
    const uint32_t nb = blk + stride;
    if (nb < total) b0 = load_x16(src + 2 * int64_t{nb}), b1 = load_x16(src + 2 * int64_t{nb} + 1);
    store(a0, a1, blk);
    if (nb >= total) break;
    blk = nb + stride;
    if (blk < total)
      a0 = load_x16(src + 2 * int64_t{blk}), a1 = load_x16(src + 2 * int64_t{blk} + 1);
    store(b0, b1, nb);
  }
}

}  // namespace f46::cuda
