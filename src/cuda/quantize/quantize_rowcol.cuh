// The lean rowwise + columnwise kernel: bf16 input, 1x16 blocks, a per-tensor or per-group global
// amax (the columnwise output may have its own, N1.4), cols % 64 == 0 (rows % 16 == 0 as for
// every columnwise output): the activations and gradients of training, quantized for both GEMM
// operands in one read of x. Same arithmetic and results as the tile kernel
// (quantize_tile_kernel.cuh): with round to nearest and no RHT every block, row or column, goes
// through lean_block (quantize_lean.cuh), the plain rules and the gradient mode too; with
// stochastic rounding (N6) or the RHT (N7) through rc_general (quantize_block, out of line).
//
// Work: x cut into units of 16 rows x 64 columns (2 KB); a warp takes runs of kRowColRun units
// down one 64-column strip (64 rows), runs round robin over the warps. Per unit each lane loads
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
// The CUDA tests compare it bitwise with the CPU reference (tests/cpp/cuda/test_cuda_quantize*
// .cpp: the bf16 1x16 row+col cases with cols % 64 == 0, per tensor or per group, are dispatched
// here; CudaQuantizeEdge.RowColRuns, RowColGroupScope and RowColStochasticRht are written for it).
#pragma once

#include <cstdint>

#include "cuda/common/group_offsets.cuh"
#include "cuda/quantize/quantize_lean.cuh"

namespace f46::cuda {

inline constexpr int kRcWarps = kLeanThreads / 32;
inline constexpr int kRcUnitCols = 64;                    // a unit: 16 rows x 64 columns
inline constexpr int kRcRowBytes = kRcUnitCols * 2 + 16;  // a unit row in shared memory

// A block with stochastic rounding (N6) and/or the RHT (N7), out of line: quantize_block (the
// general rows path, scale entries computed per block) on the block's 8 raw words, transformed
// first when `rht`; `sr_index` is its first element's index (N6).
template <QuantMode M>
__device__ __noinline__ BlockCodes rc_general(uint4 a, uint4 b, GlobalScale g, ErrorConsts c,
                                              bool rht, bool sr, uint64_t seed, uint64_t offset,
                                              uint64_t sr_index) {
  const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  float x[16];
  unpack_words(w, x);
  if (rht) {
    float y[16];
    num::rht16(x, y);
#pragma unroll
    for (int i = 0; i < 16; ++i) x[i] = y[i];
  }
  return quantize_block<M, false>(x, g, c, sr, seed, offset, sr_index, 0u,
                                  TableRef{nullptr, false});
}

// The scale bytes a block can select under the global amax `a`: the candidates' bases (b / 6) *
// S_enc and b * (S_enc / 6) are +0 or positive for S_enc > 0, or NaN (0x7F), so only bytes below
// 0x80 index the table, unless the amax has its sign bit set (a negative amax, which makes S_enc
// negative; -0 and -Inf give S_enc = 1 but are counted too). A group's refill computes those.
__device__ __forceinline__ int rc_entries(float a) { return num::bits(a) >> 31 ? 256 : 128; }

// Host: bf16 x with 16-byte aligned rows, rows % 16 == 0, cols % 64 == 0, p.columnwise, codes_t
// 8-byte aligned with stride % 8 == 0 (a run's 32 code bytes and 4 scale bytes per column go as
// 16-byte pieces and one word where codes_t and scales_t allow, in 8-byte pieces and bytes
// otherwise); with p.rowwise, p.wide_rows. kMinCtas (the register bound) and kRolled (one
// lean_block in a loop over the lane's four blocks: a quarter of the code) are open for
// dev/lean_lab.cu.
template <QuantMode M, bool kGroup, int kMinCtas = kRowColMinCtas, bool kRolled = false>
__global__ void __launch_bounds__(kLeanThreads, kMinCtas)
    quantize_rowcol_lean_kernel(const QuantizeParams p) {
  static_assert(kLeanThreads % 32 == 0 && kRowColRun == 4,
                "whole warps; a run's 4 units fill a column's 32-byte code sector");
  // Scale tables (rowwise, columnwise for an own amax): per tensor one pair for the CTA; per
  // group a pair per warp, then the clamped group ends, in dynamic shared memory
  // (kRowColGroupShared + 4 * num_groups bytes: static shared memory stops at 48 KB).
  __shared__ LeanEntry s_tab[2][kGroup ? 1 : 256];
  extern __shared__ uint4 s_dyn_rc[];
  __shared__ __align__(16) uint8_t s_unit[kRcWarps][16 * kRcRowBytes];
  // A run's columnwise output: codes of unit k, column c at k * 64 + c; scale at byte k of word c.
  __shared__ __align__(16) uint2 s_codes_t[kRcWarps][kRowColRun * kRcUnitCols];
  __shared__ uint32_t s_scales_t[kRcWarps][kRcUnitCols];

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const ErrorConsts consts = error_consts(p.bound);
  const bool own_t = p.amax_t != nullptr;
  const float* amax_t = own_t ? p.amax_t : p.amax;
  LeanEntry(*tab)[256] = kGroup ? reinterpret_cast<LeanEntry(*)[256]>(s_dyn_rc) + 2 * warp
                                : reinterpret_cast<LeanEntry(*)[256]>(&s_tab[0][0]);
  int32_t* s_offs = reinterpret_cast<int32_t*>(s_dyn_rc + kRcWarps * 2 * 256);
  const LeanEntry* tab_r = tab[0];
  const LeanEntry* tab_c = tab[own_t ? 1 : 0];
  GlobalScale gr{}, gc{};
  if constexpr (kGroup) {
    stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);  // the CTA barrier
  } else {
    gr = global_scale(p.amax[0], p.bound);
    gc = own_t ? global_scale(amax_t[0], p.bound) : gr;
    for (int s = threadIdx.x; s < 256; s += blockDim.x) {
      tab[0][s] = lean_entry<M>(s, gr, consts);
      if (own_t) tab[1][s] = lean_entry<M>(s, gc, consts);
    }
    __syncthreads();  // the only CTA barrier: warps without work may leave below
  }

  const int64_t bands = p.rows / 16, ucols = p.cols / kRcUnitCols;
  const int64_t stacks = (bands + kRowColRun - 1) / kRowColRun, n_runs = stacks * ucols;
  // Run u: per tensor stack-major (stack u / ucols, strip u % ucols), per group strip-major
  // (strip u / stacks, stack u % stacks), so that a warp's range walks down its strips and meets
  // each group boundary once (stack-major, a range crossing rows of two groups refilled its tables
  // at every run: 0.22-0.23 of copy on an H200 against the tile kernel's 0.33-0.35).
  auto stack_of = [&](int64_t u) { return kGroup ? u % stacks : u / ucols; };
  auto strip_of = [&](int64_t u) { return kGroup ? u / stacks : u % ucols; };
  // Per tensor the warps take the runs round robin; per group each warp a contiguous range, so
  // its tables' group changes rarely.
  const int64_t warps = int64_t{gridDim.x} * kRcWarps;
  const int64_t gw = int64_t{blockIdx.x} * kRcWarps + warp;
  int64_t run = kGroup ? n_runs * gw / warps : gw;
  const int64_t run_end = kGroup ? n_runs * (gw + 1) / warps : n_runs;
  const int64_t run_inc = kGroup ? 1 : warps;
  if (run >= run_end) return;
  // Group scope: the global amax of row r (N2; 0 past the last offset) and the amaxes the
  // tables hold (none yet).
  auto amax_of = [&](const float* a, int64_t r) {
    const int g = group_of_row(s_offs, p.num_groups, r);
    return g < p.num_groups ? a[g] : 0.0f;
  };
  bool tab_r_ok = false, tab_c_ok = false;

  // Lane's four chunks of a unit: chunk lane + 32 m is row lane / 8 + 4 m, 16-byte column lane % 8.
  const int ld_row = lane / 8, ld_cc = lane % 8;
  const uint16_t* xs = static_cast<const uint16_t*>(p.x);
  auto load_unit = [&](int64_t u, int k, uint4(&v)[4]) {
    const int64_t row0 = (kRowColRun * stack_of(u) + k) * 16;
    const uint16_t* base =
        xs + (row0 + ld_row) * p.x_stride + strip_of(u) * kRcUnitCols + ld_cc * 8;
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
  // Stochastic rounding or the RHT (uniform): every block through rc_general.
  const bool general = p.stochastic || p.rht_rowwise || p.rht_columnwise;
  // Block `w` of the rowwise output (row `row`, first column `c0`) or of the columnwise output
  // (column `c0`, first row `row`).
  auto block = [&](const uint32_t(&w)[8], bool rowwise, int64_t row, int64_t c0) {
    if (general) {
      const uint4 a = make_uint4(w[0], w[1], w[2], w[3]), b = make_uint4(w[4], w[5], w[6], w[7]);
      return rowwise ? rc_general<M>(a, b, gr, consts, p.rht_rowwise, p.stochastic, p.seed,
                                     p.offset, row * p.cols + c0)
                     : rc_general<M>(a, b, gc, consts, p.rht_columnwise, p.stochastic, p.seed,
                                     p.offset, p.rows * p.cols + c0 * p.rows + row);
    }
    return lean_block<M>(w, rowwise ? tab_r : tab_c, rowwise ? gr : gc, consts);
  };
  int k = 0;
  uint4 v[4];
  load_unit(run, 0, v);
  for (;;) {
    const int64_t col0 = strip_of(run) * kRcUnitCols;
    const int64_t band0 = kRowColRun * stack_of(run), row0 = (band0 + k) * 16;
    const int nk = bands - band0 < kRowColRun ? static_cast<int>(bands - band0) : kRowColRun;
    __syncwarp();            // the previous unit's reads (and the previous run's stores) are done
    if constexpr (kGroup) {  // the unit's amaxes: those of its first row's group (offsets % 16
                             // == 0, N1.4), uniform over the warp; refill a table that changed
      const float ar = amax_of(p.amax, row0), ac = own_t ? amax_of(amax_t, row0) : ar;
      if (!tab_r_ok || num::bits(ar) != num::bits(gr.amax)) {
        gr = global_scale(ar, p.bound);
        for (int s = lane; s < rc_entries(ar); s += 32) tab[0][s] = lean_entry<M>(s, gr, consts);
        tab_r_ok = true;
      }
      if (!own_t) {
        gc = gr;
      } else if (!tab_c_ok || num::bits(ac) != num::bits(gc.amax)) {
        gc = global_scale(ac, p.bound);
        for (int s = lane; s < rc_entries(ac); s += 32) tab[1][s] = lean_entry<M>(s, gc, consts);
        tab_c_ok = true;
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

    if constexpr (kRolled) {
      // One lean_block in a loop over the lane's four blocks (j = 0, 1: row lane / 2, blocks
      // 2 h + j; j = 2, 3: columns 2 lane + j - 2), words from the shared tile.
      const int r = lane / 2, h = lane % 2;
      uint64_t rc0 = 0, rc1 = 0;
      uint32_t rs = 0;
#pragma unroll 1
      for (int j = p.rowwise ? 0 : 2; j < 4; ++j) {
        uint32_t w[8];
        if (j < 2) {
          const uint4* q =
              reinterpret_cast<const uint4*>(tile + r * kRcRowBytes + (4 * h + 2 * j) * 16);
          const uint4 a = q[0], b = q[1];
          w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = b.x, w[5] = b.y, w[6] = b.z,
          w[7] = b.w;
        } else {
          const uint32_t sel = j == 2 ? 0x5410u : 0x7632u;
#pragma unroll
          for (int i = 0; i < 8; ++i)
            w[i] = __byte_perm(
                *reinterpret_cast<const uint32_t*>(tile + 2 * i * kRcRowBytes + 4 * lane),
                *reinterpret_cast<const uint32_t*>(tile + (2 * i + 1) * kRcRowBytes + 4 * lane),
                sel);
        }
        const BlockCodes bc = j < 2 ? block(w, true, row0 + r, col0 + 32 * h + 16 * j)
                                    : block(w, false, row0, col0 + 2 * lane + j - 2);
        if (j == 0) {
          rc0 = bc.codes, rs = bc.scale;
        } else if (j == 1) {
          rc1 = bc.codes, rs |= uint32_t{bc.scale} << 8;
        } else {
          ct[k * kRcUnitCols + 2 * lane + j - 2] =
              make_uint2(static_cast<uint32_t>(bc.codes), static_cast<uint32_t>(bc.codes >> 32));
          reinterpret_cast<uint8_t*>(st + 2 * lane + j - 2)[k] = bc.scale;
        }
      }
      if (p.rowwise) {
        uint8_t* codes = p.codes + (row0 + r) * p.codes_stride + col0 / 2 + 16 * h;
        *reinterpret_cast<uint4*>(codes) =
            make_uint4(static_cast<uint32_t>(rc0), static_cast<uint32_t>(rc0 >> 32),
                       static_cast<uint32_t>(rc1), static_cast<uint32_t>(rc1 >> 32));
        *reinterpret_cast<uint16_t*>(p.scales + (row0 + r) * p.scales_stride + col0 / 16 + 2 * h) =
            static_cast<uint16_t>(rs);
      }
    } else {
      if (p.rowwise) {  // row lane / 2, blocks 2 h and 2 h + 1 of the unit
        const int r = lane / 2, h = lane % 2;
        uint4 c[4];
#pragma unroll
        for (int j = 0; j < 4; ++j)
          c[j] = *reinterpret_cast<const uint4*>(tile + r * kRcRowBytes + (4 * h + j) * 16);
        const uint32_t w0[8] = {c[0].x, c[0].y, c[0].z, c[0].w, c[1].x, c[1].y, c[1].z, c[1].w};
        const uint32_t w1[8] = {c[2].x, c[2].y, c[2].z, c[2].w, c[3].x, c[3].y, c[3].z, c[3].w};
        const BlockCodes b0 = block(w0, true, row0 + r, col0 + 32 * h);
        const BlockCodes b1 = block(w1, true, row0 + r, col0 + 32 * h + 16);
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
        const BlockCodes be = block(we, false, row0, col0 + 2 * lane);
        const BlockCodes bo = block(wo, false, row0, col0 + 2 * lane + 1);
        *reinterpret_cast<uint4*>(ct + k * kRcUnitCols + 2 * lane) =
            make_uint4(static_cast<uint32_t>(be.codes), static_cast<uint32_t>(be.codes >> 32),
                       static_cast<uint32_t>(bo.codes), static_cast<uint32_t>(bo.codes >> 32));
        reinterpret_cast<uint8_t*>(st + 2 * lane)[k] = be.scale;
        reinterpret_cast<uint8_t*>(st + 2 * lane + 1)[k] = bo.scale;
      }
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
