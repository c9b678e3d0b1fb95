// Tile quantization kernel (docs/numerics.md N2-N7): rowwise and/or columnwise output from one
// read of x, 1x16 or 16x16 blocks. Each warp works alone: no CTA barrier after the start.
//
// Work: x cut into units of kUnitRows x kUnitCols (32 x 64), walked by the warps in interleaved
// segments (UnitWalk); each warp copies its units into its own shared-memory ring through
// cp.async, one unit ahead of the one it quantizes (__syncwarp, no CTA barrier). A unit's rows
// are 16 bytes apart beyond their length, so the row reads (16-byte loads), the column reads (a
// warp reads 32 consecutive elements of one row) and the copies are free of bank conflicts with
// constant offsets (no address arithmetic per element).
//
// Per unit, lane l quantizes:
//   rowwise, 1x16:   row 8s + l/4, block column l%4 (s = 0..3): four lanes write the 32
//                    contiguous code bytes of a row, a warp store eight full sectors;
//   rowwise, 16x16:  row l, block column s: the 16 lanes of a half-warp hold one 16x16 tile;
//   columnwise:      column l + 32j, rows 16rb..+16 (j, rb = 0, 1; a 1x16 block of x^T): the
//                    16 lanes of a half-warp hold 16 consecutive columns (one 16x16 tile of x^T).
// With p.pair_cols (columnwise, the modes without a 4/6 decision, which its stores bound) a warp
// takes the two units of a band pair (rows 64i..64i+63, same columns) one after the other.
// Stores: for 16x16 blocks a lane writes its row's codes 16 bytes at a time and its 4 scales at
// once. The columnwise output of a whole band pair (p.pair_cols) is staged in the
// warp's shared memory and written after its second unit: lanes 2i and 2i+1 write the two
// 16-byte halves of one column's 32-byte sector in the same store (16 whole sectors per warp
// store, not 32 half sectors), and a column's 4 scale bytes at once. Otherwise, for a whole unit
// with p.wide_cols, a column's 16 code bytes and 2 scales at once; block by block otherwise.
// Narrow scattered stores fill the memory pipeline that the shuffles and shared loads also need
// (Nsight Compute; docs/design.md, "Everything else: the tile kernel").
// Needs rows % 16 == 0, and cols % 16 == 0 for the rowwise output and 16x16 tiles, so validity
// is uniform per half-warp where lanes share a block (columnwise 1x16: a lane per column).
#pragma once

#include <cstdint>

#include "common/numerics.h"
#include "cuda/common/group_offsets.cuh"
#include "cuda/common/tensor_io.cuh"
#include "cuda/quantize/block_io.cuh"
#include "cuda/quantize/quantize_block.cuh"
#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

// Shared-memory layout of one CTA: per warp a ring of kTileStages units, two scale tables
// (rowwise, columnwise amax), the global amaxes of the unit's 32 rows (rowwise, columnwise) and
// the staged columnwise output of a band pair (PairStage), then the staged group offsets.
// Per tensor the CTA shares one pair of tables, filled once before the walk; otherwise each
// warp has its own pair, refilled as the amax of its units changes.
// One warp's columnwise output of a band pair: the 16 code bytes of each of the 64 columns for
// the pair's first unit (half 0) and its second (half 1), half 1 placed 64 bytes further so that
// the flush (lane 2i half 0, lane 2i+1 half 1 of one column) reads without bank conflicts; then
// the columns' 4 scale bytes (2 per unit).
struct PairStage {
  static constexpr int kHalf1 = kUnitCols * 16 + 64;
  static constexpr int kScales = kHalf1 + kUnitCols * 16;
  static constexpr int kBytes = kScales + kUnitCols * 4;
};

template <typename S>
struct TileLayout {
  static constexpr int kRowBytes = kUnitCols * static_cast<int>(sizeof(S)) + 16;  // padded
  static constexpr int kUnitBytes = kUnitRows * kRowBytes;
  static constexpr int kRingBytes = kTileWarps * kTileStages * kUnitBytes;
  static constexpr int kPairBytes = 2 * 256 * static_cast<int>(sizeof(float2));
  static constexpr int kAmaxBytes = kTileWarps * 2 * kUnitRows * static_cast<int>(sizeof(float));
  static constexpr int kStageBytes = kTileWarps * PairStage::kBytes;
  static constexpr int tab_bytes(bool per_tensor) {
    return per_tensor ? kPairBytes : kTileWarps * kPairBytes;
  }
  static constexpr int stage_offset(bool per_tensor) {
    return kRingBytes + tab_bytes(per_tensor) + kAmaxBytes;
  }
  static constexpr int bytes(bool per_tensor) {  // + the group offsets
    return stage_offset(per_tensor) + kStageBytes;
  }
};

// Fills the warp's scale table for amax `a` (each lane 8 entries, then __syncwarp).
__device__ __forceinline__ void fill_warp_table(float2* tab, float a, const ErrorConsts& c,
                                                float bound, int lane) {
  const GlobalScale g = global_scale(a, bound);
#pragma unroll
  for (int s = lane; s < 256; s += 32) tab[s] = scale_entry(s, g, c);
  __syncwarp();
}

__device__ __forceinline__ void store16(uint8_t* p, uint64_t lo, uint64_t hi) {  // 16-aligned
  *reinterpret_cast<uint4*>(p) =
      make_uint4(static_cast<uint32_t>(lo), static_cast<uint32_t>(lo >> 32),
                 static_cast<uint32_t>(hi), static_cast<uint32_t>(hi >> 32));
}

// A warp's walk over the units: segments of `width` unit columns along a band (p.pair_cols:
// a band pair; the last segment may be narrower) in band-major order, the warp taking segments
// w, w + W, ...; within a segment column by column, with pairs in each column the pair's two
// units (one, for a last odd band). Units whose outputs share a 32-byte sector (a column's 64
// rows of a pair, its scale bytes over 512 rows, a row's scales over 8 units) are then made by
// one warp or at about the same time by neighbouring warps, so L2 merges the pieces before it
// writes the sector back. Contiguous unit ranges per warp left columnwise sectors half-written
// until evicted, doubling the DRAM traffic of the columnwise output (docs/design.md). Width 1
// per tensor; per group kGroupSegmentUnits (the scale tables follow the group of a unit's first
// row).
struct UnitWalk {
  BlockCursor seg;  // (band or band pair, segment column)
  int32_t u;        // unit within the segment: column u >> sh, band u & sh of the pair
  // sh = 1 with band pairs, 0 without.
  __device__ __forceinline__ int32_t col(int32_t width, int32_t sh) const {
    return seg.col * width + (u >> sh);
  }
  __device__ __forceinline__ int32_t band(int32_t sh) const { return (seg.row << sh) + (u & sh); }
  __device__ __forceinline__ void step(const CursorStep& next, int32_t width, int32_t units_x,
                                       int32_t bands, int32_t sh) {
    ++u;
    if ((u & sh) != 0 && band(sh) >= bands) ++u;  // the last, odd band: no second unit
    if (u == (width << sh) || col(width, sh) == units_x) {
      u = 0;
      advance(seg, next);
    }
  }
};

// Whether the columnwise output of the band pair of the unit at (row0, col0) is staged
// (PairStage): both its units whole and the outputs aligned for it.
__device__ __forceinline__ bool pair_staged(const QuantizeParams& p, int64_t row0, int64_t col0) {
  return p.pair_cols && (row0 | (2 * kUnitRows - 1)) < p.rows && col0 + kUnitCols <= p.cols;
}

// One warp's view of its shared memory and of the staged offsets.
struct TileWarp {
  uint8_t* ring;          // kTileStages units
  float2* tab;            // rowwise scale table (256 entries)
  float2* tab_t;          // columnwise scale table
  float* s_amax;          // the global amaxes of the unit's 32 rows (rowwise)
  float* s_amax_t;        // ... (columnwise)
  uint8_t* stage;         // PairStage
  const int32_t* s_offs;  // staged (clamped) group ends
  const int32_t* s_src;   // virtual padding: the source groups' ends
  int lane;
  unsigned half_mask;  // the lane's 16-lane half of the warp
  bool virtual_pad;
};

// The per-unit state of the tables and global scales the walk carries from unit to unit.
struct TileScales {
  GlobalScale gs{}, gs_t{};
  float tab_amax = 0.0f, tab_amax_t = 0.0f;  // the amaxes the tables were filled for
};

// cp.async of one unit (row, col: the lane's first row and column; dst its first shared
// address): a source row or zeros per row with virtual padding, whole units at once, partial
// units row by row.
template <typename S, int kCopies, int kRowsPerCopy, int kRowBytes>
__device__ __forceinline__ void tile_copy_unit(const QuantizeParams& p, const TileWarp& tw,
                                               const S* x_base, uint32_t dst, int64_t row,
                                               int64_t col, int cp_row, int cp_col) {
  const S* src = x_base + row * p.x_stride + col;
  const int64_t step = kRowsPerCopy * p.x_stride;
  if (tw.virtual_pad) {  // row by row: a source row, or zeros for a padding row
#pragma unroll 1
    for (int i = 0; i < kCopies && row + i * kRowsPerCopy < p.rows && col < p.cols; ++i) {
      const uint32_t d = dst + i * kRowsPerCopy * kRowBytes;
      const int64_t sr = source_row(tw.s_offs, tw.s_src, p.num_groups, row + i * kRowsPerCopy);
      if (sr >= 0)
        cp_async16(d, x_base + sr * p.x_stride + col);
      else
        st_shared_zero16(d);
    }
  } else if (row - cp_row + kUnitRows <= p.rows && col - cp_col + kUnitCols <= p.cols) {  // whole
#pragma unroll
    for (int i = 0; i < kCopies; ++i)
      cp_async16(dst + i * kRowsPerCopy * kRowBytes, src + i * step);
  } else if (col < p.cols) {
#pragma unroll 1
    for (int i = 0; i < kCopies && row + i * kRowsPerCopy < p.rows; ++i)
      cp_async16(dst + i * kRowsPerCopy * kRowBytes, src + i * step);
  }
}

// Unaligned x: plain loads of the unit at (row0, col0), element by element.
template <typename S, int kRowBytes>
__device__ __forceinline__ void tile_load_unit(const QuantizeParams& p, const TileWarp& tw,
                                               const S* x_base, uint8_t* unit, int64_t row0,
                                               int64_t col0) {
  constexpr int kES = static_cast<int>(sizeof(S));
  for (int e = tw.lane; e < kUnitRows * kUnitCols; e += 32) {
    const int r = e / kUnitCols, c = e % kUnitCols;
    if (row0 + r < p.rows && col0 + c < p.cols) {
      const int64_t sr =
          tw.virtual_pad ? source_row(tw.s_offs, tw.s_src, p.num_groups, row0 + r) : row0 + r;
      *reinterpret_cast<S*>(unit + r * kRowBytes + c * kES) =
          sr >= 0 ? x_base[sr * p.x_stride + col0 + c] : S{};
    }
  }
}

// Global amaxes (N2) of the unit at row0: lane l finds those of row row0 + l for s_amax[l],
// s_amax_t[l] (per tensor: once, k == 0); the tables follow the unit's first row
// (warp-uniform refill).
__device__ __forceinline__ void tile_unit_amaxes(const QuantizeParams& p, const TileWarp& tw,
                                                 const float* amax_t, const ErrorConsts& consts,
                                                 bool per_tensor, int32_t k, int64_t row0,
                                                 TileScales& ts) {
  float a_row = 0.0f, a_row_t = 0.0f;
  if (p.scope == ScopeKind::kTensor) {
    a_row = p.amax[0];
    a_row_t = amax_t[0];
  } else if (row0 + tw.lane < p.rows) {
    const int g = group_of_row(tw.s_offs, p.num_groups, row0 + tw.lane);
    a_row = g < p.num_groups ? p.amax[g] : 0.0f;
    a_row_t = g < p.num_groups ? amax_t[g] : 0.0f;
  }
  tw.s_amax[tw.lane] = a_row;
  tw.s_amax_t[tw.lane] = a_row_t;
  const float a0 = __shfl_sync(0xFFFFFFFFu, a_row, 0);
  const float a0_t = __shfl_sync(0xFFFFFFFFu, a_row_t, 0);
  if (k == 0) {
    ts.gs = global_scale(a0, p.bound);
    ts.gs_t = global_scale(a0_t, p.bound);
  }
  if (p.rowwise && !per_tensor && (k == 0 || num::bits(a0) != num::bits(ts.tab_amax))) {
    fill_warp_table(tw.tab, a0, consts, p.bound, tw.lane);
    ts.tab_amax = a0;
  }
  if (p.columnwise && !per_tensor && (k == 0 || num::bits(a0_t) != num::bits(ts.tab_amax_t))) {
    fill_warp_table(tw.tab_t, a0_t, consts, p.bound, tw.lane);
    ts.tab_amax_t = a0_t;
  }
}

// The rowwise output of the unit at (row0, col0) (see the lane mapping above).
template <typename T, QuantMode M, bool kTile16, int kRowBytes>
__device__ __forceinline__ void tile_quantize_rows(const QuantizeParams& p, const TileWarp& tw,
                                                   const uint8_t* unit, const ErrorConsts& consts,
                                                   int64_t row0, int64_t col0, bool whole,
                                                   TileScales& ts) {
  constexpr int kVecs = Raw16<T>::kVecs;  // 16-byte chunks per 1x16 block
  const int lane = tw.lane;
  uint64_t rc_lo = 0;  // 16x16, wide: the lane's row goes out 16 code bytes at a time
  uint32_t row_scales = 0;
  const bool gather = kTile16 && whole && p.wide_rows;
#pragma unroll 1
  for (int s = 0; s < 4; ++s) {
    const int r = kTile16 ? lane : 8 * s + lane / 4, cb = kTile16 ? s : lane % 4;
    const int64_t row = row0 + r, col = col0 + 16 * cb;
    if (row >= p.rows || col >= p.cols) continue;  // uniform per half-warp for 16x16
    Raw16<T> raw;
#pragma unroll
    for (int v = 0; v < kVecs; ++v)
      raw.w[v] = *reinterpret_cast<const uint4*>(unit + r * kRowBytes + (cb * kVecs + v) * 16);
    float x[16];
    unpack16<T>(raw, x);
    if (p.rht_rowwise) {
      float y[16];
      num::rht16(x, y);  // N7
#pragma unroll
      for (int j = 0; j < 16; ++j) x[j] = y[j];
    }
    update_global_scale(ts.gs, tw.s_amax[r], p.bound);
    const TableRef tr{tw.tab, num::bits(ts.gs.amax) == num::bits(ts.tab_amax)};
    const BlockCodes b = quantize_block<M, kTile16>(x, ts.gs, consts, p.stochastic, p.seed,
                                                    p.offset, row * p.cols + col, tw.half_mask, tr);
    if (!gather) {
      store_block(p.codes + row * p.codes_stride + col / 2,
                  p.scales + row * p.scales_stride + col / 16, b);
    } else if ((s & 1) == 0) {  // blocks 2i, 2i+1 of the row: one 16-byte store
      rc_lo = b.codes;
      row_scales |= static_cast<uint32_t>(b.scale) << (8 * s);
    } else {
      store16(p.codes + row * p.codes_stride + (col - 16) / 2, rc_lo, b.codes);
      row_scales |= static_cast<uint32_t>(b.scale) << (8 * s);
      if (s == 3)
        *reinterpret_cast<uint32_t*>(p.scales + row * p.scales_stride + col0 / 16) = row_scales;
    }
  }
}

// The staged columnwise output of a band pair written out after its second unit: lane 2i + hh
// writes half hh of column 16 j + i, then the columns' 4 scale bytes.
__device__ __forceinline__ void tile_flush_pair(const QuantizeParams& p, const TileWarp& tw,
                                                int64_t pair_row0, int64_t col0) {
  __syncwarp();
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int c = 16 * j + tw.lane / 2, hh = tw.lane & 1;
    *reinterpret_cast<uint4*>(p.codes_t + (col0 + c) * p.codes_t_stride + pair_row0 / 2 + 16 * hh) =
        *reinterpret_cast<const uint4*>(tw.stage + (hh != 0 ? PairStage::kHalf1 : 0) + c * 16);
  }
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int c = tw.lane + 32 * j;
    *reinterpret_cast<uint32_t*>(p.scales_t + (col0 + c) * p.scales_t_stride + pair_row0 / 16) =
        *reinterpret_cast<const uint32_t*>(tw.stage + PairStage::kScales + c * 4);
  }
}

// The columnwise output (rowwise quantization of x^T (cols, rows)) of the unit at (row0, col0).
template <typename T, QuantMode M, bool kTile16, int kRowBytes>
__device__ __forceinline__ void tile_quantize_cols(const QuantizeParams& p, const TileWarp& tw,
                                                   const uint8_t* unit, const ErrorConsts& consts,
                                                   int64_t row0, int64_t col0, bool whole,
                                                   TileScales& ts) {
  using S = typename T::Storage;
  constexpr int kES = static_cast<int>(sizeof(S));
  constexpr bool kPairs = !is_error_rule<M>();
  const bool gather = whole && p.wide_cols;
  uint64_t cc0 = 0;  // the column's first block, stored with the second if wide
  uint32_t col_scales = 0;
#pragma unroll 1
  for (int jr = 0; jr < 4; ++jr) {
    const int rb = jr & 1, c = tw.lane + 32 * (jr >> 1);
    const int64_t ccol = col0 + c, row = row0 + 16 * rb;
    if (ccol >= p.cols || row >= p.rows) continue;  // uniform per half-warp
    float x[16];
#pragma unroll
    for (int i = 0; i < 16; ++i)
      x[i] = to_float(T{}, *reinterpret_cast<const S*>(unit + (16 * rb + i) * kRowBytes + c * kES));
    if (p.rht_columnwise) {
      float y[16];
      num::rht16(x, y);
#pragma unroll
      for (int i = 0; i < 16; ++i) x[i] = y[i];
    }
    // The block's 16 rows lie in one group (offsets % 16 == 0); its first row decides.
    update_global_scale(ts.gs_t, tw.s_amax_t[16 * rb], p.bound);
    const TableRef tr{tw.tab_t, num::bits(ts.gs_t.amax) == num::bits(ts.tab_amax_t)};
    const BlockCodes b =
        quantize_block<M, kTile16>(x, ts.gs_t, consts, p.stochastic, p.seed, p.offset,
                                   p.rows * p.cols + ccol * p.rows + row, tw.half_mask, tr);
    if (!gather) {
      store_block(p.codes_t + ccol * p.codes_t_stride + row / 2,
                  p.scales_t + ccol * p.scales_t_stride + row / 16, b);
    } else if (rb == 0) {
      cc0 = b.codes;
      col_scales = b.scale;
    } else if (kPairs && pair_staged(p, row0, col0)) {
      const int h = static_cast<int>(row0 / kUnitRows) & 1;
      col_scales |= static_cast<uint32_t>(b.scale) << 8;
      store16(tw.stage + (h != 0 ? PairStage::kHalf1 : 0) + c * 16, cc0, b.codes);
      *reinterpret_cast<uint16_t*>(tw.stage + PairStage::kScales + c * 4 + 2 * h) =
          static_cast<uint16_t>(col_scales);
    } else {
      col_scales |= static_cast<uint32_t>(b.scale) << 8;
      store16(p.codes_t + ccol * p.codes_t_stride + row0 / 2, cc0, b.codes);
      *reinterpret_cast<uint16_t*>(p.scales_t + ccol * p.scales_t_stride + row0 / 16) =
          static_cast<uint16_t>(col_scales);
    }
  }
  if (kPairs && (row0 / kUnitRows) % 2 == 1 && pair_staged(p, row0, col0))  // the 2nd unit
    tile_flush_pair(p, tw, row0 - kUnitRows, col0);
}

template <typename T, QuantMode M, bool kTile16>
__global__ void __launch_bounds__(kTileThreads, kTileMinCtas)
    quantize_tile_kernel(const QuantizeParams p) {
  static_assert(kUnitRows == 32 && kUnitCols == 64 && kTileThreads == 32 * kTileWarps,
                "lane mappings assume 32 x 64 units and whole warps");
  using S = typename T::Storage;
  using L = TileLayout<S>;
  constexpr int kES = static_cast<int>(sizeof(S));
  constexpr int kCpr = kUnitCols * kES / 16;         // chunks per row: 8 or 16
  constexpr int kRowsPerCopy = 32 / kCpr;            // rows a warp's cp.async covers: 4 or 2
  constexpr int kCopies = kUnitRows / kRowsPerCopy;  // cp.async per lane per unit
  extern __shared__ uint4 smem[];
  uint8_t* const base = reinterpret_cast<uint8_t*>(smem);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const bool per_tensor = p.scope == ScopeKind::kTensor;
  TileWarp tw;
  tw.ring = base + warp * kTileStages * L::kUnitBytes;
  tw.tab = reinterpret_cast<float2*>(base + L::kRingBytes) + (per_tensor ? 0 : warp * 512);
  tw.tab_t = tw.tab + 256;
  tw.s_amax = reinterpret_cast<float*>(base + L::kRingBytes + L::tab_bytes(per_tensor)) + warp * 64;
  tw.s_amax_t = tw.s_amax + 32;
  tw.stage = base + L::stage_offset(per_tensor) + warp * PairStage::kBytes;
  int32_t* const s_offs = reinterpret_cast<int32_t*>(base + L::bytes(per_tensor));
  if (p.scope == ScopeKind::kGroup) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);
  // Virtual padding: the source groups' ends after the padded ones (their own clamp, to x).
  int32_t* const s_src = s_offs + p.num_groups;
  tw.virtual_pad = p.src_offsets != nullptr;
  if (tw.virtual_pad) stage_clamped_offsets(p.src_offsets, p.num_groups, p.src_rows, s_src);
  tw.s_offs = s_offs;
  tw.s_src = s_src;
  tw.lane = lane;
  tw.half_mask = 0xFFFFu << (lane & 16);

  const int32_t units_x = static_cast<int32_t>((p.cols + kUnitCols - 1) / kUnitCols);
  const int32_t bands = static_cast<int32_t>((p.rows + kUnitRows - 1) / kUnitRows);
  const int32_t width = p.scope == ScopeKind::kTensor ? 1 : kGroupSegmentUnits;
  // Band pairs (2 units per column of a segment) for the modes without a 4/6 decision only:
  // the error rules' kernels keep the code (and the registers) of single bands.
  constexpr bool kPairs = !is_error_rule<M>();
  const int32_t sh = kPairs && p.pair_cols ? 1 : 0;
  const int32_t segs_x = (units_x + width - 1) / width;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kTileWarps;
  const int64_t w = static_cast<int64_t>(blockIdx.x) * kTileWarps + warp;
  const S* x_base = static_cast<const S*>(p.x);
  const float* amax_t = p.amax_t != nullptr ? p.amax_t : p.amax;
  // Lane's copies: chunk lane % kCpr of rows lane / kCpr + kRowsPerCopy i.
  const int cp_row = lane / kCpr, cp_col = (lane % kCpr) * (16 / kES);
  const uint32_t cp_dst0 = static_cast<uint32_t>(__cvta_generic_to_shared(tw.ring)) +
                           cp_row * L::kRowBytes + (lane % kCpr) * 16;

  // Copies of the warp's unit k go to stage k % kTileStages.
  const UnitWalk first{{static_cast<int32_t>(w / segs_x), static_cast<int32_t>(w % segs_x)}, 0};
  UnitWalk pre = first;
  int32_t q_band = 0, q_col = 0;  // the unit issued last (the next one to quantize)
  const CursorStep next{static_cast<int32_t>(warps / segs_x), static_cast<int32_t>(warps % segs_x),
                        segs_x};
  int32_t pre_k = 0;
  auto issue = [&]() {  // one commit group per unit, empty past the warp's range
    q_band = pre.band(sh);
    q_col = pre.col(width, sh);
    if (p.vec_load && q_band < bands)
      tile_copy_unit<S, kCopies, kRowsPerCopy, L::kRowBytes>(
          p, tw, x_base, cp_dst0 + (pre_k % kTileStages) * L::kUnitBytes,
          static_cast<int64_t>(q_band) * kUnitRows + cp_row,
          static_cast<int64_t>(q_col) * kUnitCols + cp_col, cp_row, cp_col);
    cp_async_commit();
    ++pre_k;
    pre.step(next, width, units_x, bands, sh);
  };
  issue();

  const ErrorConsts consts = error_consts(p.bound);
  TileScales ts;
  if (per_tensor) {  // the CTA's shared tables, filled once
    if (p.rowwise) ts.tab_amax = fill_scale_table(tw.tab, p.amax[0], consts, p.bound).amax;
    if (p.columnwise) ts.tab_amax_t = fill_scale_table(tw.tab_t, amax_t[0], consts, p.bound).amax;
  }
  for (int32_t k = 0;; ++k) {
    const int64_t row0 = static_cast<int64_t>(q_band) * kUnitRows;  // unit k, issued last
    const int64_t col0 = static_cast<int64_t>(q_col) * kUnitCols;
    if (q_band >= bands) break;  // uniform over the warp
    issue();                     // unit k + 1
    uint8_t* const unit = tw.ring + (k % kTileStages) * L::kUnitBytes;
    if (p.vec_load)
      cp_async_wait<1>();  // this unit's group has landed (this lane's copies)
    else
      tile_load_unit<S, L::kRowBytes>(p, tw, x_base, unit, row0, col0);
    if (p.scope != ScopeKind::kTensor || k == 0)
      tile_unit_amaxes(p, tw, amax_t, consts, per_tensor, k, row0, ts);
    __syncwarp();  // the unit's copies and s_amax are visible to the whole warp

    const bool whole = row0 + kUnitRows <= p.rows && col0 + kUnitCols <= p.cols;
    if (p.rowwise)
      tile_quantize_rows<T, M, kTile16, L::kRowBytes>(p, tw, unit, consts, row0, col0, whole, ts);
    if (p.columnwise)
      tile_quantize_cols<T, M, kTile16, L::kRowBytes>(p, tw, unit, consts, row0, col0, whole, ts);
    __syncwarp();  // the warp is done with this stage before it is refilled
  }
  cp_async_wait<0>();
}

}  // namespace f46::cuda
