// LAB KERNEL, not in the library (dev/): measured on the H200 2026-12-05 (dev/gpu_lean.sh, the
// row+col section of dev/lean_lab.cu, bytewise equal to the tile kernel, and the whole CUDA
// quantize suite passed while it was dispatched) at 0.21 of copy for row+col MAE and 0.22 for
// gradient RNE row+col, against the tile kernel's 0.27-0.29 and 0.45-0.52 in the same run; with
// a group amax 0.13-0.19 against 0.30-0.35. Its columnwise stores (8 code bytes and 1 scale byte
// per column and unit, 64 rows of codes_t per warp store) are the first suspect (not profiled);
// kept here as the starting point of a lean row+col design with staged columnwise stores.
//
// The lean rowwise + columnwise kernel: bf16 input, 1x16 blocks, a per-tensor or per-group global
// amax (the columnwise output may have its own, N1.4), round to nearest, no RHT, cols % 64 == 0,
// rows % 16 == 0: the activations and gradients of training quantized for both GEMM operands
// in one read of x. Same arithmetic and results as the tile kernel (quantize_tile_kernel.cuh):
// every block goes through lean_block (quantize_lean.cuh).
//
// Work: x cut into units of 16 rows x 64 columns (2 KB), stacked by four into super-units
// (64 rows; fewer at the bottom edge) that the warps take round robin (per tensor) or in
// contiguous ranges (per group), a super-unit's units from the top. Each warp has its own pair
// of scale tables (LeanEntry), refilled when the amax of a unit's first row changes. Per unit each
// lane loads four 16-byte chunks straight into registers one unit ahead (a warp load reads four
// whole 128-byte rows), stores them into the warp's shared tile (rows padded to 144 bytes: every
// access below is free of bank conflicts) and reads back:
//   rowwise:    row lane/2, block columns 2 (lane % 2) and 2 (lane % 2) + 1 (two 16-byte
//               reads each): the lane writes 16 contiguous code bytes and 2 scale bytes, a lane
//               pair a row's whole 32-byte sector;
//   columnwise: the 32-bit words of column pair (2 lane, 2 lane + 1) in the 16 rows, split
//               into the two columns' blocks by byte permutes: 8 code bytes and a scale per
//               column. The four units of a super-unit fill a column's 32-byte code sector in
//               turn, so L2 merges the pieces before writing it back.
#pragma once

#include <cstdint>

#include "cuda/common/group_offsets.cuh"
#include "cuda/quantize/quantize_lean.cuh"

namespace f46::cuda {

// Configuration (was in quantize_params.h while this kernel was dispatched).
inline constexpr int kLeanRowColMinCtas = 4;  // registers bounded for 4 CTAs per SM
inline constexpr int kRcUnitRows = 16;
inline constexpr int kRcUnitCols = 64;
inline constexpr int kRcStack = 4;                        // units per super-unit
inline constexpr int kRcRowBytes = kRcUnitCols * 2 + 16;  // a unit row in shared memory
inline constexpr int kRcWarps = kLeanThreads / 32;

// The unit a warp works on: band (16-row block row) and unit column, and its super-unit cursor.
struct RcCursor {
  int64_t su;  // super-unit, row-major over (stack, unit column)
  int32_t k;   // unit within the super-unit
};

// The warp's scale tables (rowwise, columnwise) for the global amaxes (ar, ac), refilled only
// when an amax changes (group scope: the group of a unit's first row).
struct RcTables {
  GlobalScale row, col;
  bool valid;
};
template <QuantMode M>
__device__ __forceinline__ void rc_refill(RcTables& t, LeanEntry (*tab)[256], float ar, float ac,
                                          const ErrorConsts& c, float bound, int lane) {
  const bool new_r = !t.valid || num::bits(ar) != num::bits(t.row.amax);
  const bool new_c = !t.valid || num::bits(ac) != num::bits(t.col.amax);
  if (!new_r && !new_c) return;  // uniform over the warp
  __syncwarp();                  // every lane is done with the old tables
  if (new_r) {
    t.row = global_scale(ar, bound);
    for (int s = lane; s < 256; s += 32) tab[0][s] = lean_entry<M>(s, t.row, c);
  }
  if (new_c) {
    t.col = global_scale(ac, bound);
    for (int s = lane; s < 256; s += 32) tab[1][s] = lean_entry<M>(s, t.col, c);
  }
  t.valid = true;
  __syncwarp();
}

template <QuantMode M>
__global__ void __launch_bounds__(kLeanThreads, kLeanRowColMinCtas)
    quantize_rowcol_lean_kernel(const QuantizeParams p) {
  static_assert(kRcUnitRows == 16 && kRcUnitCols == 64 && kLeanThreads % 32 == 0,
                "a unit is 16 rows x 64 bf16 columns: four 16-byte chunks per lane");
  __shared__ LeanEntry s_tab[kRcWarps][2][256];  // per warp: [rowwise, columnwise]
  __shared__ __align__(16) uint8_t s_unit[kRcWarps][kRcUnitRows * kRcRowBytes];
  extern __shared__ int32_t s_offs[];  // group scope: the clamped group ends
  const bool grouped = p.scope == ScopeKind::kGroup;
  if (grouped) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t bands = p.rows / kRcUnitRows, ucols = p.cols / kRcUnitCols;
  const int64_t n_su = (bands + kRcStack - 1) / kRcStack * ucols;
  // Per tensor the warps take the super-units round robin; per group each warp a contiguous
  // range (a stack's units left to right), so its tables' group changes rarely.
  const int64_t warps = int64_t{gridDim.x} * kRcWarps;
  const int64_t gw = int64_t{blockIdx.x} * kRcWarps + warp;
  const int64_t su_begin = grouped ? n_su * gw / warps : gw;
  const int64_t su_end = grouped ? n_su * (gw + 1) / warps : n_su;
  const int64_t su_inc = grouped ? 1 : warps;
  if (su_begin >= su_end) return;  // no CTA barrier below: a warp without work may leave

  auto band_of = [&](const RcCursor& c) { return (c.su / ucols) * kRcStack + c.k; };
  auto next_of = [&](RcCursor c) {
    if (c.k + 1 < kRcStack && band_of(RcCursor{c.su, c.k + 1}) < bands)
      return RcCursor{c.su, c.k + 1};
    return RcCursor{c.su + su_inc, 0};
  };
  // Lane's four chunks of a unit: chunk i = lane + 32 m is row i / 8, 16-byte column i % 8.
  const int ld_row = lane / 8, ld_cc = lane % 8;
  auto load_unit = [&](const RcCursor& c, uint4(&v)[4]) {
    const int64_t row0 = band_of(c) * kRcUnitRows, col0 = (c.su % ucols) * kRcUnitCols;
    const auto* base =
        static_cast<const uint16_t*>(p.x) + (row0 + ld_row) * p.x_stride + col0 + ld_cc * 8;
#pragma unroll
    for (int m = 0; m < 4; ++m)
      v[m] = load_x16(reinterpret_cast<const uint4*>(base + 4 * m * p.x_stride));
  };
  // Global amaxes of row r (N2): the tensor's, or its group's (0 past the last offset).
  auto amax_of = [&](const float* a, int64_t r) {
    if (!grouped) return a[0];
    const int g = group_of_row(s_offs, p.num_groups, r);
    return g < p.num_groups ? a[g] : 0.0f;
  };
  const float* amax_t = p.amax_t != nullptr ? p.amax_t : p.amax;

  const ErrorConsts consts = error_consts(p.bound);
  RcTables tabs{{}, {}, false};
  uint8_t* tile = s_unit[warp];
  RcCursor cur{su_begin, 0};
  uint4 v[4];
  load_unit(cur, v);
  for (;;) {
    const int64_t band = band_of(cur), col0 = (cur.su % ucols) * kRcUnitCols;
    const int64_t row0 = band * kRcUnitRows;
    // The unit's tables: the amaxes of its first row (uniform). A band whose rows lie in two
    // groups (offsets not multiples of 16, which the CPU rejects) takes per-row amaxes below.
    rc_refill<M>(tabs, s_tab[warp], amax_of(p.amax, row0), amax_of(amax_t, row0), consts, p.bound,
                 lane);
    const bool straddles = grouped && group_of_row(s_offs, p.num_groups, row0) !=
                                          group_of_row(s_offs, p.num_groups, row0 + 15);
    __syncwarp();  // the previous unit's reads are done
#pragma unroll
    for (int m = 0; m < 4; ++m)
      *reinterpret_cast<uint4*>(tile + (ld_row + 4 * m) * kRcRowBytes + ld_cc * 16) = v[m];
    __syncwarp();
    const RcCursor nxt = next_of(cur);
    const bool more = nxt.su < su_end;
    if (more) load_unit(nxt, v);

    if (p.rowwise) {  // row lane / 2, block columns 2 h and 2 h + 1
      const int r = lane / 2, h = lane % 2;
      uint4 c[4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        c[j] = *reinterpret_cast<const uint4*>(tile + r * kRcRowBytes + (4 * h + j) * 16);
      BlockCodes b0, b1;
      const float own = straddles ? amax_of(p.amax, row0 + r) : 0.0f;
      if (straddles && num::bits(own) != num::bits(tabs.row.amax)) {
        b0 = lean_block_own<M>(c[0], c[1], own, p.bound);
        b1 = lean_block_own<M>(c[2], c[3], own, p.bound);
      } else {
        const uint32_t w0[8] = {c[0].x, c[0].y, c[0].z, c[0].w, c[1].x, c[1].y, c[1].z, c[1].w};
        const uint32_t w1[8] = {c[2].x, c[2].y, c[2].z, c[2].w, c[3].x, c[3].y, c[3].z, c[3].w};
        b0 = lean_block<M>(w0, s_tab[warp][0], tabs.row, consts);
        b1 = lean_block<M>(w1, s_tab[warp][0], tabs.row, consts);
      }
      uint8_t* codes = p.codes + (row0 + r) * p.codes_stride + col0 / 2 + 16 * h;
      *reinterpret_cast<uint4*>(codes) =
          make_uint4(static_cast<uint32_t>(b0.codes), static_cast<uint32_t>(b0.codes >> 32),
                     static_cast<uint32_t>(b1.codes), static_cast<uint32_t>(b1.codes >> 32));
      *reinterpret_cast<uint16_t*>(p.scales + (row0 + r) * p.scales_stride + col0 / 16 + 2 * h) =
          static_cast<uint16_t>(b0.scale | (b1.scale << 8));
    }
    {  // columns 2 lane and 2 lane + 1: word lane of each of the 16 rows (token block `band`,
       // the group of its first row, N1.4)
      uint32_t col[16];
#pragma unroll
      for (int r = 0; r < 16; ++r)
        col[r] = *reinterpret_cast<const uint32_t*>(tile + r * kRcRowBytes + 4 * lane);
      uint32_t we[8], wo[8];  // column 2 lane (low halves), 2 lane + 1 (high halves)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        we[j] = __byte_perm(col[2 * j], col[2 * j + 1], 0x5410);
        wo[j] = __byte_perm(col[2 * j], col[2 * j + 1], 0x7632);
      }
      const BlockCodes be = lean_block<M>(we, s_tab[warp][1], tabs.col, consts);
      const BlockCodes bo = lean_block<M>(wo, s_tab[warp][1], tabs.col, consts);
      const int64_t c0 = col0 + 2 * lane;
      *reinterpret_cast<uint64_t*>(p.codes_t + c0 * p.codes_t_stride + band * 8) = be.codes;
      *reinterpret_cast<uint64_t*>(p.codes_t + (c0 + 1) * p.codes_t_stride + band * 8) = bo.codes;
      p.scales_t[c0 * p.scales_t_stride + band] = be.scale;
      p.scales_t[(c0 + 1) * p.scales_t_stride + band] = bo.scale;
    }
    if (!more) break;
    cur = nxt;
  }
}

}  // namespace f46::cuda
