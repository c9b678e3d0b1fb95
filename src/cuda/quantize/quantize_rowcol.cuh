// The lean rowwise + columnwise kernel: bf16 input, 1x16 blocks, a per-tensor or per-group global
// amax (the columnwise output may have its own, N1.4), round to nearest, no RHT, cols % 64 == 0
// (rows % 16 == 0 as for every columnwise output): the activations and gradients of training,
// quantized for both GEMM operands in one read of x. Same arithmetic and results as the tile
// kernel (quantize_tile_kernel.cuh): every block, row or column, goes through lean_block
// (quantize_lean.cuh), the plain rules and the gradient mode too.
//
// Work: x cut into units of 16 rows x 64 columns (2 KB); a warp takes runs of kRowColRun units
// down one 64-column strip (a "stack" of 64 rows), the runs ordered stack by stack: per tensor
// round robin over the warps, per group a contiguous range per warp. Per unit each lane loads
// four 16-byte chunks straight into registers one unit ahead (a warp load reads four whole
// 128-byte rows), stores them into the warp's shared tile (rows padded to 144 bytes: the reads
// below are free of bank conflicts) and reads back:
//   rowwise:    row lane / 2, blocks 2 (lane % 2) and 2 (lane % 2) + 1 (two 16-byte reads each):
//               a lane pair stores a row's whole 32-byte code sector and its 4 scale bytes;
//   columnwise: the 32-bit words of columns (2 lane, 2 lane + 1) in the 16 rows, split into the
//               two columns' blocks by byte permutes. Their codes and scales are gathered in
//               shared memory over the run and stored once per run: 32 contiguous code bytes
//               and 4 scale bytes per column, two lanes per 32-byte sector. Storing 8 code bytes
//               and a scale byte per column and unit instead (dev/lean_rowcol.cuh until
//               2026-12-05) touched 32 lines per store instruction and ran at 0.21 of copy on an
//               H200, below the tile kernel (bench/RESULTS.md), as the first columnwise form of
//               the 16x16 kernel did (quantize_quad.cuh).
// Group scope: each warp keeps one slot of scale tables per unit position k of a run (band k of
// the stack), refilled only when the group amax of that band changes, so a warp moving along a
// stack refills nothing and a stack may hold up to four groups. A single pair of tables
// refilled whenever the amax changed measured 0.22-0.24 of copy on an H200 where the groups do
// not align with the stacks (2026-12-05, bench/RESULTS.md), below the tile kernel.
// The CUDA tests compare it bitwise with the CPU reference (tests/cpp/cuda/test_cuda_quantize*
// .cpp: the bf16 1x16 row+col cases with cols % 64 == 0 and round to nearest without RHT, per
// tensor or per group, are dispatched here; CudaQuantizeEdge.RowColRuns and RowColGroupScope are
// written for it).
#pragma once

#include <cstdint>

#include "cuda/common/group_offsets.cuh"
#include "cuda/quantize/quantize_lean.cuh"

namespace f46::cuda {

inline constexpr int kRcWarps = kLeanThreads / 32;
inline constexpr int kRcUnitCols = 64;                    // a unit: 16 rows x 64 columns
inline constexpr int kRcRowBytes = kRcUnitCols * 2 + 16;  // a unit row in shared memory

// Group scope: the scale bytes a block can select under a sign-clear global amax. The bases
// (b / 6) * S_enc and b * (S_enc / 6) are +0 or positive for S_enc > 0, or NaN (0x7F), so only
// bytes below 0x80 index a table; a unit whose amax has its sign bit set (a negative amax, which
// makes S_enc negative) takes lean_block_own instead.
inline constexpr int kRcSlotEntries = 128;

// A group-scope slot: the global scales its tables hold (valid: filled at least once).
struct RcSlot {
  GlobalScale row, col;
  bool valid;
};

// Host: bf16 x with 16-byte aligned rows, rows % 16 == 0, cols % 64 == 0, p.columnwise, codes_t
// 8-byte aligned with stride % 8 == 0 (a run's 32 code bytes and 4 scale bytes per column go as
// 16-byte pieces and one word where codes_t and scales_t allow, in 8-byte pieces and bytes
// otherwise); with p.rowwise, p.wide_rows. kGroup: dynamic shared memory of (own columnwise amax ?
// 2 : 1) * kRowColGroupShared + 4 * num_groups bytes. kMinCtas, the register bound, is open for
// dev/lean_lab.cu.
template <QuantMode M, bool kGroup, int kMinCtas = kRowColMinCtas>
__global__ void __launch_bounds__(kLeanThreads, kMinCtas)
    quantize_rowcol_lean_kernel(const QuantizeParams p) {
  static_assert(kLeanThreads % 32 == 0 && kRowColRun == 4,
                "whole warps; a run's 4 units fill a column's 32-byte code sector");
  // Per tensor: one pair of scale tables (rowwise, columnwise for an own amax) for the CTA. Per
  // group: per warp kRowColRun slots of kRcSlotEntries-entry tables (rowwise, then columnwise
  // for an own amax), then the clamped group ends, in dynamic shared memory.
  __shared__ LeanEntry s_tab[2][kGroup ? 1 : 256];
  __shared__ RcSlot s_slot[kGroup ? kRcWarps : 1][kRowColRun];
  extern __shared__ uint4 s_dyn_rc[];
  __shared__ __align__(16) uint8_t s_unit[kRcWarps][16 * kRcRowBytes];
  // A run's columnwise output: codes of unit k, column c at k * 64 + c; scale at byte k of word c.
  __shared__ __align__(16) uint2 s_codes_t[kRcWarps][kRowColRun * kRcUnitCols];
  __shared__ uint32_t s_scales_t[kRcWarps][kRcUnitCols];

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const ErrorConsts consts = error_consts(p.bound);
  const bool own_t = p.amax_t != nullptr;
  const float* amax_t = own_t ? p.amax_t : p.amax;
  const int n_tabs = own_t ? 2 : 1;  // group scope: tables per slot
  LeanEntry* slots = reinterpret_cast<LeanEntry*>(s_dyn_rc) +
                     warp * kRowColRun * n_tabs * kRcSlotEntries;  // this warp's
  int32_t* s_offs =
      reinterpret_cast<int32_t*>(s_dyn_rc + kRcWarps * kRowColRun * n_tabs * kRcSlotEntries);
  const LeanEntry* tab_r = &s_tab[0][0];
  const LeanEntry* tab_c = own_t ? &s_tab[1][0] : tab_r;
  GlobalScale gr{}, gc{};
  if constexpr (kGroup) {
    if (lane < kRowColRun) s_slot[warp][lane].valid = false;
    stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);  // the CTA barrier
  } else {
    gr = global_scale(p.amax[0], p.bound);
    gc = own_t ? global_scale(amax_t[0], p.bound) : gr;
    for (int s = threadIdx.x; s < 256; s += blockDim.x) {
      s_tab[0][s] = lean_entry<M>(s, gr, consts);
      if (own_t) s_tab[1][s] = lean_entry<M>(s, gc, consts);
    }
    __syncthreads();  // the only CTA barrier: warps without work may leave below
  }

  const int64_t bands = p.rows / 16, ucols = p.cols / kRcUnitCols;
  const int64_t n_runs = (bands + kRowColRun - 1) / kRowColRun * ucols;  // run u: stack u / ucols
  const int64_t warps = int64_t{gridDim.x} * kRcWarps;
  const int64_t gw = int64_t{blockIdx.x} * kRcWarps + warp;
  int64_t run = kGroup ? n_runs * gw / warps : gw;
  const int64_t run_end = kGroup ? n_runs * (gw + 1) / warps : n_runs;
  const int64_t run_inc = kGroup ? 1 : warps;
  if (run >= run_end) return;
  // Group scope: the global amax of row r (N2; 0 past the last offset).
  auto amax_of = [&](const float* a, int64_t r) {
    const int g = group_of_row(s_offs, p.num_groups, r);
    return g < p.num_groups ? a[g] : 0.0f;
  };

  // Lane's four chunks of a unit: chunk lane + 32 m is row lane / 8 + 4 m, 16-byte column lane % 8.
  const int ld_row = lane / 8, ld_cc = lane % 8;
  const uint16_t* xs = static_cast<const uint16_t*>(p.x);
  auto load_unit = [&](int64_t u, int k, uint4(&v)[4]) {
    const int64_t stack = u / ucols, row0 = (kRowColRun * stack + k) * 16;
    const uint16_t* base =
        xs + (row0 + ld_row) * p.x_stride + (u - stack * ucols) * kRcUnitCols + ld_cc * 8;
#pragma unroll
    for (int m = 0; m < 4; ++m)
      v[m] = load_x16(reinterpret_cast<const uint4*>(base + 4 * m * p.x_stride));
  };
  const bool codes_t_wide =
      (reinterpret_cast<uintptr_t>(p.codes_t) & 15u) == 0 && p.codes_t_stride % 16 == 0;
  const bool scales_t_word =
      (reinterpret_cast<uintptr_t>(p.scales_t) & 3u) == 0 && p.scales_t_stride % 4 == 0;
  uint8_t* tile = s_unit[warp];
  uint2* ct = s_codes_t[warp];
  uint32_t* st = s_scales_t[warp];
  int k = 0;
  uint4 v[4];
  load_unit(run, 0, v);
  for (;;) {
    const int64_t stack = run / ucols, col0 = (run - stack * ucols) * kRcUnitCols;
    const int64_t band0 = kRowColRun * stack, row0 = (band0 + k) * 16;
    const int nk = bands - band0 < kRowColRun ? static_cast<int>(bands - band0) : kRowColRun;
    bool own = false;        // group scope: a sign-set amax, every block by lean_block_own
    __syncwarp();            // the previous unit's reads (and the previous run's stores) are done
    if constexpr (kGroup) {  // the unit's amaxes: those of its first row's group (offsets % 16
                             // == 0, N1.4), uniform over the warp; slot k refilled if they changed
      const float ar = amax_of(p.amax, row0), ac = own_t ? amax_of(amax_t, row0) : ar;
      RcSlot& sl = s_slot[warp][k];
      LeanEntry* tk = slots + k * n_tabs * kRcSlotEntries;
      tab_r = tk;
      tab_c = own_t ? tk + kRcSlotEntries : tk;
      own = ((num::bits(ar) | num::bits(ac)) >> 31) != 0;
      const bool new_r = !sl.valid || num::bits(ar) != num::bits(sl.row.amax);
      const bool new_c = own_t && (!sl.valid || num::bits(ac) != num::bits(sl.col.amax));
      gr = new_r ? global_scale(ar, p.bound) : sl.row;
      gc = !own_t ? gr : (new_c ? global_scale(ac, p.bound) : sl.col);
      if (!own && (new_r || new_c)) {
        __syncwarp();  // every lane has read the slot
        if (new_r)
          for (int s = lane; s < kRcSlotEntries; s += 32) tk[s] = lean_entry<M>(s, gr, consts);
        if (new_c)
          for (int s = lane; s < kRcSlotEntries; s += 32)
            tk[kRcSlotEntries + s] = lean_entry<M>(s, gc, consts);
        if (lane == 0) sl = RcSlot{gr, gc, true};
      }
    }
#pragma unroll
    for (int m = 0; m < 4; ++m)
      *reinterpret_cast<uint4*>(tile + (ld_row + 4 * m) * kRcRowBytes + ld_cc * 16) = v[m];
    __syncwarp();
    const int64_t next_run = k + 1 < nk ? run : run + run_inc;
    const int next_k = k + 1 < nk ? k + 1 : 0;
    const bool more = next_run < run_end;
    if (more) load_unit(next_run, next_k, v);
    // Block `w` of the rowwise (`rowwise`) or columnwise output.
    auto block = [&](const uint32_t(&w)[8], bool rowwise) {
      if (kGroup && own)
        return lean_block_own<M>(make_uint4(w[0], w[1], w[2], w[3]),
                                 make_uint4(w[4], w[5], w[6], w[7]), rowwise ? gr.amax : gc.amax,
                                 p.bound);
      return lean_block<M>(w, rowwise ? tab_r : tab_c, rowwise ? gr : gc, consts);
    };

    if (p.rowwise) {  // row lane / 2, blocks 2 h and 2 h + 1 of the unit
      const int r = lane / 2, h = lane % 2;
      uint4 c[4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        c[j] = *reinterpret_cast<const uint4*>(tile + r * kRcRowBytes + (4 * h + j) * 16);
      const uint32_t w0[8] = {c[0].x, c[0].y, c[0].z, c[0].w, c[1].x, c[1].y, c[1].z, c[1].w};
      const uint32_t w1[8] = {c[2].x, c[2].y, c[2].z, c[2].w, c[3].x, c[3].y, c[3].z, c[3].w};
      const BlockCodes b0 = block(w0, true), b1 = block(w1, true);
      uint8_t* codes = p.codes + (row0 + r) * p.codes_stride + col0 / 2 + 16 * h;
      *reinterpret_cast<uint4*>(codes) =
          make_uint4(static_cast<uint32_t>(b0.codes), static_cast<uint32_t>(b0.codes >> 32),
                     static_cast<uint32_t>(b1.codes), static_cast<uint32_t>(b1.codes >> 32));
      *reinterpret_cast<uint16_t*>(p.scales + (row0 + r) * p.scales_stride + col0 / 16 + 2 * h) =
          static_cast<uint16_t>(b0.scale | (b1.scale << 8));
    }
    {  // columns 2 lane and 2 lane + 1: word `lane` of each of the 16 rows
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
      const BlockCodes be = block(we, false), bo = block(wo, false);
      *reinterpret_cast<uint4*>(ct + k * kRcUnitCols + 2 * lane) =
          make_uint4(static_cast<uint32_t>(be.codes), static_cast<uint32_t>(be.codes >> 32),
                     static_cast<uint32_t>(bo.codes), static_cast<uint32_t>(bo.codes >> 32));
      reinterpret_cast<uint8_t*>(st + 2 * lane)[k] = be.scale;
      reinterpret_cast<uint8_t*>(st + 2 * lane + 1)[k] = bo.scale;
    }
    if (k == nk - 1) {  // the run's last unit (uniform): its columnwise output
      __syncwarp();
      const int h = lane % 2;
#pragma unroll
      for (int i = 0; i < 4; ++i) {  // column 16 i + lane / 2, units 2 h and 2 h + 1
        const int c = 16 * i + lane / 2;
        uint8_t* dst = p.codes_t + (col0 + c) * p.codes_t_stride + band0 * 8 + 16 * h;
        const uint2 lo = ct[2 * h * kRcUnitCols + c], hi = ct[(2 * h + 1) * kRcUnitCols + c];
        if (nk == kRowColRun && codes_t_wide) {
          *reinterpret_cast<uint4*>(dst) = make_uint4(lo.x, lo.y, hi.x, hi.y);
        } else {
          if (2 * h < nk) *reinterpret_cast<uint2*>(dst) = lo;
          if (2 * h + 1 < nk) *reinterpret_cast<uint2*>(dst + 8) = hi;
        }
      }
#pragma unroll
      for (int i = 0; i < 2; ++i) {  // column 32 i + lane: 4 scale bytes
        const int c = 32 * i + lane;
        uint8_t* dst = p.scales_t + (col0 + c) * p.scales_t_stride + band0;
        const uint32_t s = st[c];
        if (nk == kRowColRun && scales_t_word) {
          *reinterpret_cast<uint32_t*>(dst) = s;
        } else {
          for (int j = 0; j < nk; ++j) dst[j] = static_cast<uint8_t>(s >> (8 * j));
        }
      }
    }
    if (!more) break;
    run = next_run;
    k = next_k;
  }
}

}  // namespace f46::cuda
