// Tile quantization kernel (docs/numerics.md N2-N7): rowwise and/or columnwise output from one
// read of x, 1x16 or 16x16 blocks. Each warp works alone: no CTA barrier after the start.
//
// Work: x cut into units of kUnitRows x kUnitCols (32 x 64), in row-band-major order; warp w of
// W takes the contiguous units [w U / W, (w + 1) U / W) and copies each into its own
// shared-memory ring through cp.async, one unit ahead of the one it quantizes (__syncwarp, no
// CTA barrier). Rows of a unit are stored with their 16-byte chunks permuted (chunk ^ swz(row)),
// so the row reads, the column reads and the copies are all free of bank conflicts.
//
// Per unit, lane l quantizes:
//   rowwise, 1x16:   row 8s + l/4, block column l%4 (s = 0..3): four lanes write the 32
//                    contiguous code bytes of a row, a warp store eight full sectors;
//   rowwise, 16x16:  row l, block column s: the 16 lanes of a half-warp hold one 16x16 tile;
//   columnwise:      column (l%16) + 16s, rows 16(l/16)..+16 (a 1x16 block of x^T): the 16
//                    lanes of a half-warp hold 16 consecutive columns (one 16x16 tile of x^T).
// Needs rows % 16 == 0 and cols % 16 == 0, so validity is uniform per half-warp.
#pragma once

#include <cstdint>

#include "common/numerics.h"
#include "cuda/common/group_offsets.cuh"
#include "cuda/common/tensor_io.cuh"
#include "cuda/quantize/quantize_block.cuh"
#include "cuda/quantize/quantize_kernel_parts.cuh"
#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

// Shared-memory layout of one CTA: per warp a ring of kTileStages units, two scale tables
// (rowwise, columnwise amax) and the global amaxes of the unit's 32 rows (rowwise,
// columnwise), then the staged group offsets.
template <typename S>
struct TileLayout {
  static constexpr int kRowBytes = kUnitCols * static_cast<int>(sizeof(S));  // 128 or 256
  static constexpr int kUnitBytes = kUnitRows * kRowBytes;
  static constexpr int kRingBytes = kTileWarps * kTileStages * kUnitBytes;
  static constexpr int kTabBytes = kTileWarps * 2 * 256 * static_cast<int>(sizeof(float2));
  static constexpr int kAmaxBytes = kTileWarps * 2 * kUnitRows * static_cast<int>(sizeof(float));
  static constexpr int kBytes = kRingBytes + kTabBytes + kAmaxBytes;  // + the group offsets
};

// Byte offset in a unit of byte `b` of row `r`: the chunk b / 16 moves to chunk ^ swz(r).
template <typename S>
__device__ __forceinline__ int unit_offset(int r, int b) {
  const int swz = (r ^ (r >> 3)) & 7;
  return r * TileLayout<S>::kRowBytes + ((((b >> 4) ^ swz) << 4) | (b & 15));
}

// Fills the warp's scale table for amax `a` (each lane 8 entries, then __syncwarp).
__device__ __forceinline__ void fill_warp_table(float2* tab, float a, const ErrorConsts& c,
                                                float bound, int lane) {
  const GlobalScale g = global_scale(a, bound);
#pragma unroll
  for (int s = lane; s < 256; s += 32) tab[s] = scale_entry(s, g, c);
  __syncwarp();
}

template <typename T, QuantMode M, bool kTile16>
__global__ void __launch_bounds__(kTileThreads, kTileMinCtas)
    quantize_tile_kernel(const QuantizeParams p) {
  static_assert(kUnitRows == 32 && kUnitCols == 64 && kTileThreads == 32 * kTileWarps,
                "lane mappings assume 32 x 64 units and whole warps");
  using S = typename T::Storage;
  using L = TileLayout<S>;
  constexpr int kVecs = Raw16<T>::kVecs;                     // 16-byte chunks per 1x16 block
  constexpr int kChunksPerLane = L::kUnitBytes / (16 * 32);  // cp.async per lane per unit
  extern __shared__ uint4 smem[];
  uint8_t* const base = reinterpret_cast<uint8_t*>(smem);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  uint8_t* const ring = base + warp * kTileStages * L::kUnitBytes;
  float2* const tab = reinterpret_cast<float2*>(base + L::kRingBytes) + warp * 512;
  float2* const tab_t = tab + 256;
  float* const s_amax = reinterpret_cast<float*>(base + L::kRingBytes + L::kTabBytes) + warp * 64;
  float* const s_amax_t = s_amax + 32;
  int32_t* const s_offs = reinterpret_cast<int32_t*>(base + L::kBytes);
  if (p.scope == ScopeKind::kGroup) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);

  const unsigned half_mask = 0xFFFFu << (lane & 16);
  const int32_t units_x = static_cast<int32_t>((p.cols + kUnitCols - 1) / kUnitCols);
  const int64_t units = units_x * ((p.rows + kUnitRows - 1) / kUnitRows);
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kTileWarps;
  const int64_t w = static_cast<int64_t>(blockIdx.x) * kTileWarps + warp;
  const int64_t u_begin = units * w / warps, u_end = units * (w + 1) / warps;
  const int32_t n_units = static_cast<int32_t>(u_end - u_begin);
  const S* x_base = static_cast<const S*>(p.x);
  const float* amax_t = p.amax_t != nullptr ? p.amax_t : p.amax;
  const uint32_t ring_s = static_cast<uint32_t>(__cvta_generic_to_shared(ring));

  // Copies of unit k go to stage k % kTileStages; (band, unit column) cursors, no division.
  BlockCursor pre{static_cast<int32_t>(u_begin / units_x), static_cast<int32_t>(u_begin % units_x)};
  BlockCursor cur = pre;
  const CursorStep one{0, 1, units_x};
  int32_t pre_k = 0;
  auto issue = [&]() {  // one commit group per unit, empty past the warp's range
    if (p.vec_load && pre_k < n_units) {
      const uint32_t dst = ring_s + (pre_k % kTileStages) * L::kUnitBytes;
      const int64_t row0 = static_cast<int64_t>(pre.row) * kUnitRows;
      const int64_t col0 = static_cast<int64_t>(pre.col) * kUnitCols;
#pragma unroll 1
      for (int i = 0; i < kChunksPerLane; ++i) {  // not unrolled: no hoisted addresses
        const int q = lane + 32 * i;  // chunk q of the unit: row q / chunks-per-row
        const int r = q / (L::kRowBytes / 16), b = (q % (L::kRowBytes / 16)) * 16;
        const int64_t col = col0 + b / static_cast<int>(sizeof(S));
        if (row0 + r < p.rows && col < p.cols)
          cp_async16(dst + unit_offset<S>(r, b), x_base + (row0 + r) * p.x_stride + col);
      }
    }
    cp_async_commit();
    ++pre_k;
    advance(pre, one);
  };
  issue();

  const ErrorConsts consts = error_consts(p.bound);
  float tab_amax = 0.0f, tab_amax_t = 0.0f;  // the tables' amaxes, set at the first unit
  GlobalScale gs{}, gs_t{};
  for (int32_t k = 0; k < n_units; ++k) {
    issue();
    const int64_t row0 = static_cast<int64_t>(cur.row) * kUnitRows;
    const int64_t col0 = static_cast<int64_t>(cur.col) * kUnitCols;
    advance(cur, one);
    const uint8_t* const unit = ring + (k % kTileStages) * L::kUnitBytes;
    if (p.vec_load) {
      cp_async_wait<1>();  // this unit's group has landed (this lane's copies)
    } else {               // unaligned x: plain loads of the unit, element by element
      uint8_t* const dst = ring + (k % kTileStages) * L::kUnitBytes;
      for (int e = lane; e < kUnitRows * kUnitCols; e += 32) {
        const int r = e / kUnitCols, c = e % kUnitCols;
        if (row0 + r < p.rows && col0 + c < p.cols)
          *reinterpret_cast<S*>(dst + unit_offset<S>(r, c * static_cast<int>(sizeof(S)))) =
              x_base[(row0 + r) * p.x_stride + col0 + c];
      }
    }
    __syncwarp();  // ... and the other lanes' copies

    // Global amaxes (N2): lane l finds those of row row0 + l for s_amax[l], s_amax_t[l]; the
    // tables follow the unit's first row (warp-uniform refill).
    float a_row = 0.0f, a_row_t = 0.0f;
    if (p.scope == ScopeKind::kTensor) {
      a_row = p.amax[0];
      a_row_t = amax_t[0];
    } else if (row0 + lane < p.rows) {
      const int g = group_of_row(s_offs, p.num_groups, row0 + lane);
      a_row = g < p.num_groups ? p.amax[g] : 0.0f;
      a_row_t = g < p.num_groups ? amax_t[g] : 0.0f;
    }
    s_amax[lane] = a_row;
    s_amax_t[lane] = a_row_t;
    const float a0 = __shfl_sync(0xFFFFFFFFu, a_row, 0);
    const float a0_t = __shfl_sync(0xFFFFFFFFu, a_row_t, 0);
    __syncwarp();
    if (k == 0) {
      gs = global_scale(a0, p.bound);
      gs_t = global_scale(a0_t, p.bound);
    }
    if (p.rowwise && (k == 0 || num::bits(a0) != num::bits(tab_amax))) {
      fill_warp_table(tab, a0, consts, p.bound, lane);
      tab_amax = a0;
    }
    if (p.columnwise && (k == 0 || num::bits(a0_t) != num::bits(tab_amax_t))) {
      fill_warp_table(tab_t, a0_t, consts, p.bound, lane);
      tab_amax_t = a0_t;
    }

    if (p.rowwise) {
#pragma unroll 1
      for (int s = 0; s < 4; ++s) {
        const int r = kTile16 ? lane : 8 * s + lane / 4, cb = kTile16 ? s : lane % 4;
        const int64_t row = row0 + r, col = col0 + 16 * cb;
        if (row >= p.rows || col >= p.cols) continue;  // uniform per half-warp for 16x16
        const float a = s_amax[r];
        Raw16<T> raw;
#pragma unroll
        for (int v = 0; v < kVecs; ++v)
          raw.w[v] = *reinterpret_cast<const uint4*>(unit + unit_offset<S>(r, (cb * kVecs + v) * 16));
        float x[16];
        unpack16<T>(raw, x);
        if (p.rht_rowwise) {
          float y[16];
          num::rht16(x, y);  // N7
#pragma unroll
          for (int j = 0; j < 16; ++j) x[j] = y[j];
        }
        update_global_scale(gs, a, p.bound);
        const TableRef tr{tab, num::bits(gs.amax) == num::bits(tab_amax)};
        const BlockCodes b = quantize_block<M, kTile16>(x, gs, consts, p.stochastic, p.seed,
                                                        p.offset, row * p.cols + col, half_mask, tr);
        store_block(p.codes + row * p.codes_stride + col / 2,
                    p.scales + row * p.scales_stride + col / 16, b);
      }
    }
    if (p.columnwise) {  // rowwise quantization of x^T (cols, rows)
      const int rb = lane / 16;
      // The block's 16 rows lie in one group (offsets % 16 == 0); its first row decides.
      const float a = s_amax_t[16 * rb];
#pragma unroll 1
      for (int s = 0; s < 4; ++s) {
        const int c = lane % 16 + 16 * s;
        const int64_t ccol = col0 + c, row = row0 + 16 * rb;
        if (ccol >= p.cols || row >= p.rows) continue;  // uniform per half-warp
        float x[16];
#pragma unroll
        for (int j = 0; j < 16; ++j)
          x[j] = to_float(T{}, *reinterpret_cast<const S*>(
                                   unit + unit_offset<S>(16 * rb + j, c * static_cast<int>(sizeof(S)))));
        if (p.rht_columnwise) {
          float y[16];
          num::rht16(x, y);
#pragma unroll
          for (int j = 0; j < 16; ++j) x[j] = y[j];
        }
        update_global_scale(gs_t, a, p.bound);
        const TableRef tr{tab_t, num::bits(gs_t.amax) == num::bits(tab_amax_t)};
        const BlockCodes b =
            quantize_block<M, kTile16>(x, gs_t, consts, p.stochastic, p.seed, p.offset,
                                       p.rows * p.cols + ccol * p.rows + row, half_mask, tr);
        store_block(p.codes_t + ccol * p.codes_t_stride + row / 2,
                    p.scales_t + ccol * p.scales_t_stride + row / 16, b);
      }
    }
    __syncwarp();  // the warp is done with this stage before it is refilled
  }
  cp_async_wait<0>();
}

}  // namespace f46::cuda
