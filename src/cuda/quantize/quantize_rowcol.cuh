// The lean rowwise + columnwise kernel: bf16 input, 1x16 blocks, a per-tensor global amax (the
// columnwise output may have its own, N1.4), round to nearest, no RHT, cols % 64 == 0 (rows % 16
// == 0 as for every columnwise output): the activations and gradients of training, quantized for
// both GEMM operands in one read of x. Same arithmetic and results as the tile kernel
// (quantize_tile_kernel.cuh): every block, row or column, goes through lean_block
// (quantize_lean.cuh), the plain rules and the gradient mode too.
//
// Work: x cut into units of 16 rows x 64 columns (2 KB); a warp takes runs of kRowColRun units
// down one 64-column strip (a "stack" of 64 rows), the runs ordered stack by stack and taken
// round robin by the warps. Per unit each lane loads four 16-byte chunks straight into registers
// one unit ahead (a warp load reads four whole 128-byte rows), stores them into the warp's shared
// tile (rows padded to 144 bytes: the reads below are free of bank conflicts) and reads back:
//   rowwise:    row lane / 2, blocks 2 (lane % 2) and 2 (lane % 2) + 1 (two 16-byte reads each):
//               a lane pair stores a row's whole 32-byte code sector and its 4 scale bytes;
//   columnwise: the 32-bit words of columns (2 lane, 2 lane + 1) in the 16 rows, split into the
//               two columns' blocks by byte permutes. Their codes and scales are gathered in
//               shared memory over the run and stored once per run: 32 contiguous code bytes
//               and 4 scale bytes per column, two lanes per 32-byte sector (8 code bytes and a
//               scale byte per column and unit touch 32 lines per store instruction and ran
//               below the tile kernel; docs/design.md).
// Group scope, SR and RHT stay on the tile kernel: the group forms of this kernel measured slower
// where the groups do not align with the 64-row stacks (per-warp tables refilled at each group
// change), and SR/RHT blocks out of line slowed the common path (docs/design.md, "Rowwise +
// columnwise").
// The CUDA tests compare it bitwise with the CPU reference (tests/cpp/cuda/test_cuda_quantize*
// .cpp: the bf16 per-tensor 1x16 row+col cases with cols % 64 == 0, round to nearest and no RHT
// are dispatched here; CudaQuantizeEdge.RowColRuns and RowColRunsLarge are written for it).
#pragma once

#include <cstdint>

#include "cuda/common/group_rows.h"
#include "cuda/quantize/quantize_lean.cuh"

namespace f46::cuda {

inline constexpr int kRcWarps = kLeanThreads / 32;
inline constexpr int kRcUnitCols = 64;                    // a unit: 16 rows x 64 columns
inline constexpr int kRcRowBytes = kRcUnitCols * 2 + 16;  // a unit row in shared memory

// Pieces of a unit. The raw words of row lane / 2, blocks 2 (lane % 2) and 2 (lane % 2) + 1,
// from the shared tile:
__device__ __forceinline__ void rc_row_words(const uint8_t* tile, int lane, uint32_t (&w0)[8],
                                             uint32_t (&w1)[8]) {
  const int r = lane / 2, h = lane % 2;
  uint4 c[4];
#pragma unroll
  for (int j = 0; j < 4; ++j)
    c[j] = *reinterpret_cast<const uint4*>(tile + r * kRcRowBytes + (4 * h + j) * 16);
  w0[0] = c[0].x, w0[1] = c[0].y, w0[2] = c[0].z, w0[3] = c[0].w;
  w0[4] = c[1].x, w0[5] = c[1].y, w0[6] = c[1].z, w0[7] = c[1].w;
  w1[0] = c[2].x, w1[1] = c[2].y, w1[2] = c[2].z, w1[3] = c[2].w;
  w1[4] = c[3].x, w1[5] = c[3].y, w1[6] = c[3].z, w1[7] = c[3].w;
}
// ... their codes and scales, stored (a lane pair: the row's 32-byte code sector, 4 scale bytes).
__device__ __forceinline__ void rc_store_rows(const QuantizeParams& p, int64_t row0, int64_t col0,
                                              int lane, const BlockCodes& b0,
                                              const BlockCodes& b1) {
  const int r = lane / 2, h = lane % 2;
  uint8_t* codes = p.codes + (row0 + r) * p.codes_stride + col0 / 2 + 16 * h;
  *reinterpret_cast<uint4*>(codes) =
      make_uint4(static_cast<uint32_t>(b0.codes), static_cast<uint32_t>(b0.codes >> 32),
                 static_cast<uint32_t>(b1.codes), static_cast<uint32_t>(b1.codes >> 32));
  *reinterpret_cast<uint16_t*>(p.scales + (row0 + r) * p.scales_stride + col0 / 16 + 2 * h) =
      static_cast<uint16_t>(b0.scale | (b1.scale << 8));
}
// The raw words of columns 2 lane (we: low halves) and 2 lane + 1 (wo: high halves), from word
// `lane` of each of the 16 rows.
__device__ __forceinline__ void rc_col_words(const uint8_t* tile, int lane, uint32_t (&we)[8],
                                             uint32_t (&wo)[8]) {
  uint32_t col[16];
#pragma unroll
  for (int r = 0; r < 16; ++r)
    col[r] = *reinterpret_cast<const uint32_t*>(tile + r * kRcRowBytes + 4 * lane);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    we[j] = __byte_perm(col[2 * j], col[2 * j + 1], 0x5410);
    wo[j] = __byte_perm(col[2 * j], col[2 * j + 1], 0x7632);
  }
}
// ... their codes and scales, gathered for the run (unit k).
__device__ __forceinline__ void rc_stage_cols(uint2* ct, uint32_t* st, int k, int lane,
                                              const BlockCodes& be, const BlockCodes& bo) {
  *reinterpret_cast<uint4*>(ct + k * kRcUnitCols + 2 * lane) =
      make_uint4(static_cast<uint32_t>(be.codes), static_cast<uint32_t>(be.codes >> 32),
                 static_cast<uint32_t>(bo.codes), static_cast<uint32_t>(bo.codes >> 32));
  reinterpret_cast<uint8_t*>(st + 2 * lane)[k] = be.scale;
  reinterpret_cast<uint8_t*>(st + 2 * lane + 1)[k] = bo.scale;
}
// The run's columnwise output (its nk units from band band0), after its last unit.
__device__ __forceinline__ void rc_flush_run(const QuantizeParams& p, const uint2* ct,
                                             const uint32_t* st, int64_t col0, int64_t band0,
                                             int nk, int lane, bool codes_t_wide,
                                             bool scales_t_word) {
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

// A warp's runs: run, run + run_inc, ... below run_end (run u: stack u / ucols, strip u % ucols).
// Each unit is loaded one ahead into registers (its rows from `band(b)`, a BandRows of
// cuda/common/group_rows.h) and staged in the
// warp's shared `tile`; then `setup(row0, k)` (after the previous unit's reads, before the tile
// is written: it may refill tables) returns the functor `block(w, rowwise)` that quantizes the
// unit's blocks; the rowwise output is stored per unit, the columnwise output gathered in
// (ct, st) and stored per run.
template <typename Band, typename Setup>
__device__ __forceinline__ void rc_walk(const QuantizeParams& p, int64_t run, int64_t run_end,
                                        int64_t run_inc, int lane, uint8_t* tile, uint2* ct,
                                        uint32_t* st, Band band, Setup setup) {
  const int64_t bands = p.rows / 16, ucols = p.cols / kRcUnitCols;
  // Lane's four chunks of a unit: chunk lane + 32 m is row lane / 8 + 4 m, 16-byte column lane % 8.
  const int ld_row = lane / 8, ld_cc = lane % 8;
  const uint16_t* xs = static_cast<const uint16_t*>(p.x);
  auto load_unit = [&](int64_t u, int k, uint4(&v)[4]) {
    const int64_t stack = u / ucols;
    const BandRows b = band(kRowColRun * stack + k);
    const uint16_t* base =
        xs + (b.src + ld_row) * p.x_stride + (u - stack * ucols) * kRcUnitCols + ld_cc * 8;
#pragma unroll
    for (int m = 0; m < 4; ++m)
      v[m] = ld_row + 4 * m < b.real
                 ? load_x16(reinterpret_cast<const uint4*>(base + 4 * m * p.x_stride))
                 : make_uint4(0u, 0u, 0u, 0u);
  };
  const bool codes_t_wide =
      (reinterpret_cast<uintptr_t>(p.codes_t) & 15u) == 0 && p.codes_t_stride % 16 == 0;
  const bool scales_t_word =
      (reinterpret_cast<uintptr_t>(p.scales_t) & 3u) == 0 && p.scales_t_stride % 4 == 0;
  int k = 0;
  uint4 v[4];
  load_unit(run, 0, v);
  for (;;) {
    const int64_t stack = run / ucols, col0 = (run - stack * ucols) * kRcUnitCols;
    const int64_t band0 = kRowColRun * stack, row0 = (band0 + k) * 16;
    const int nk = bands - band0 < kRowColRun ? static_cast<int>(bands - band0) : kRowColRun;
    __syncwarp();  // the previous unit's reads (and the previous run's stores) are done
    auto block = setup(row0, k);
#pragma unroll
    for (int m = 0; m < 4; ++m)
      *reinterpret_cast<uint4*>(tile + (ld_row + 4 * m) * kRcRowBytes + ld_cc * 16) = v[m];
    __syncwarp();
    const int64_t next_run = k + 1 < nk ? run : run + run_inc;
    const int next_k = k + 1 < nk ? k + 1 : 0;
    const bool more = next_run < run_end;
    if (more) load_unit(next_run, next_k, v);

    if (p.rowwise) {  // row lane / 2, blocks 2 h and 2 h + 1 of the unit
      uint32_t w0[8], w1[8];
      rc_row_words(tile, lane, w0, w1);
      const BlockCodes b0 = block(w0, true);
      const BlockCodes b1 = block(w1, true);
      rc_store_rows(p, row0, col0, lane, b0, b1);
    }
    {  // columns 2 lane and 2 lane + 1
      uint32_t we[8], wo[8];
      rc_col_words(tile, lane, we, wo);
      const BlockCodes be = block(we, false);
      const BlockCodes bo = block(wo, false);
      rc_stage_cols(ct, st, k, lane, be, bo);
    }
    if (k == nk - 1)  // the run's last unit (uniform): its columnwise output
      rc_flush_run(p, ct, st, col0, band0, nk, lane, codes_t_wide, scales_t_word);
    if (!more) break;
    run = next_run;
    k = next_k;
  }
}

// Host: bf16 x with 16-byte aligned rows, rows % 16 == 0, cols % 64 == 0, p.columnwise, codes_t
// 8-byte aligned with stride % 8 == 0 (a run's 32 code bytes and 4 scale bytes per column go as
// 16-byte pieces and one word where codes_t and scales_t allow, in 8-byte pieces and bytes
// otherwise); with p.rowwise, p.wide_rows. kMinCtas: the register bound (the library uses the
// default).
template <QuantMode M, int kMinCtas = kRowColMinCtas>
__global__ void __launch_bounds__(kLeanThreads, kMinCtas)
    quantize_rowcol_lean_kernel(const QuantizeParams p) {
  static_assert(kLeanThreads % 32 == 0 && kRowColRun == 4,
                "whole warps; a run's 4 units fill a column's 32-byte code sector");
  __shared__ LeanEntry s_tab[2][256];  // scale tables: rowwise, columnwise for an own amax
  __shared__ __align__(16) uint8_t s_unit[kRcWarps][16 * kRcRowBytes];
  // A run's columnwise output: codes of unit k, column c at k * 64 + c; scale at byte k of word c.
  __shared__ __align__(16) uint2 s_codes_t[kRcWarps][kRowColRun * kRcUnitCols];
  __shared__ uint32_t s_scales_t[kRcWarps][kRcUnitCols];

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const ErrorConsts consts = error_consts(p.bound);
  const bool own_t = p.amax_t != nullptr;
  const float* amax_t = own_t ? p.amax_t : p.amax;
  LeanEntry(*tab)[256] = s_tab;
  const LeanEntry* tab_r = tab[0];
  const LeanEntry* tab_c = tab[own_t ? 1 : 0];
  GlobalScale gr{}, gc{};
  gr = global_scale(p.amax[0], p.bound);
  gc = own_t ? global_scale(amax_t[0], p.bound) : gr;
  for (int s = threadIdx.x; s < 256; s += blockDim.x) {
    tab[0][s] = lean_entry<M>(s, gr, consts);
    if (own_t) tab[1][s] = lean_entry<M>(s, gc, consts);
  }
  __syncthreads();  // the only CTA barrier: warps without work may leave below

  const int64_t bands = p.rows / 16, ucols = p.cols / kRcUnitCols;
  const int64_t n_runs = (bands + kRowColRun - 1) / kRowColRun * ucols;
  const int64_t warps = int64_t{gridDim.x} * kRcWarps;  // the warps take the runs round robin
  const int64_t gw = int64_t{blockIdx.x} * kRcWarps + warp;
  if (gw >= n_runs) return;
  rc_walk(
      p, gw, n_runs, warps, lane, s_unit[warp], s_codes_t[warp], s_scales_t[warp],
      [](int64_t b) {
        return BandRows{16 * b, 16};
      },
      [&](int64_t, int) {
        return [&](const uint32_t(&w)[8], bool rowwise) {
          return lean_block<M>(w, rowwise ? tab_r : tab_c, rowwise ? gr : gc, consts);
        };
      });
}

}  // namespace f46::cuda
