// Kernel parameters and compile-time configuration of the CUDA quantizer (host + device POD).
#pragma once

#include <cstdint>

namespace f46::cuda {

// The arithmetic of a quantize call (docs/numerics.md N3, N4): one template parameter.
enum class QuantMode : uint8_t { kMAE, kMSE, kAbsMax, kAll6, kAll4, kGradient };

// Scope of the global amax, as f46::AmaxScope (kept separate so kernels do not need the API).
enum class ScopeKind : uint8_t { kTensor, kRow, kGroup };

struct QuantizeParams {
  const void* x = nullptr;  // (rows, cols) bf16/fp16/fp32, row stride x_stride elements
  int64_t x_stride = 0;
  int64_t rows = 0, cols = 0;
  bool vec_load = false;  // x and its row stride allow 16-byte loads

  ScopeKind scope = ScopeKind::kTensor;
  const float* amax = nullptr;       // (1) / (rows) / (num_groups) float32
  const float* amax_t = nullptr;     // for the columnwise output (defaults to amax)
  const int32_t* offsets = nullptr;  // (num_groups) int32 cumulative group ends, kGroup only
  int num_groups = 0;
  // Virtual token-group padding (N12; tile kernel): x holds src_rows rows split by
  // src_offsets; row r of the `rows` quantized is source row r - offsets[g-1] + src_offsets[g-1]
  // of its group g while within the group's size, else zero.
  const int32_t* src_offsets = nullptr;
  int64_t src_rows = 0;

  float bound = 256.0f;     // E4M3 scale bound (N2)
  bool stochastic = false;  // N6
  uint64_t seed = 0, offset = 0;
  bool rht_rowwise = false, rht_columnwise = false;  // N7

  bool rowwise = true, columnwise = false;
  uint8_t* codes = nullptr;  // (rows, cols/2)
  int64_t codes_stride = 0;
  uint8_t* scales = nullptr;  // (rows, cols/16)
  int64_t scales_stride = 0;
  uint8_t* codes_t = nullptr;  // (cols, rows/2)
  int64_t codes_t_stride = 0;
  uint8_t* scales_t = nullptr;  // (cols, rows/16)
  int64_t scales_t_stride = 0;
  // The tile kernel may store 16 code bytes + 4 (rowwise) or 2 (columnwise) scale bytes at once:
  // codes 16-byte aligned with a row stride % 16 == 0, scales aligned for their width;
  // pair_cols: wide_cols and the columnwise scales also for 4 bytes (a band pair's column).
  bool wide_rows = false, wide_cols = false, pair_cols = false;
  // quantize_experts' single launch (the 16x16 weights kernel only): gridDim.y = batch items,
  // item b at these strides (elements of x, bytes of the outputs, floats of amax) from item 0.
  int64_t x_batch = 0, codes_batch = 0, scales_batch = 0, codes_t_batch = 0, scales_t_batch = 0;
  int64_t amax_batch = 0;
  // amax_quantize_experts' one pass (quantize_quad_amax.cuh): amax_out (amax_items) float32
  // patterns, zeroed, receive each item's N9 amax; sched: the ticket counter, then each item's
  // count of finished amax chunks (1 + amax_items, zeroed); per item amax_chunks chunks of x
  // for the amax and quant_chunks of the tile walk, the amaxes amax_ahead items ahead.
  uint32_t* amax_out = nullptr;
  uint32_t* sched = nullptr;
  uint32_t amax_items = 0, amax_chunks = 0, quant_chunks = 0, amax_ahead = 0;
};

// Rowwise-only 1x16 kernel: persistent CTAs of kRowThreads, one 16-element block per thread
// per step, kRowRingBytes of shared memory per thread for the blocks in flight.
inline constexpr int kRowThreads = 256;
inline constexpr int kRowRingBytes = 128;
// Resident CTAs per SM the rows kernel's registers are bounded for (65536 / (256 n) each; 3
// spills and measured slower).
inline constexpr int kRowMinCtas = 2;
// The lean rows kernel (quantize_lean.cuh): kLeanThreads per CTA, registers bounded for
// kLeanMinCtas CTAs per SM (96 registers; 6 CTAs spill, and they and 256 x 2 measured slower;
// docs/design.md, "Rowwise: the lean kernels").
inline constexpr int kLeanThreads = 128;
inline constexpr int kLeanMinCtas = 5;
// Its per-tensor form (quantize_rows_lean_tensor_kernel): no group state (5 CTAs measured 2 %
// faster than 6).
inline constexpr int kLeanTensorMinCtas = 5;
// Group scope takes the lean kernel when the groups average at least this many steps of
// kLeanThreads blocks (512 blocks, as with the former 2 steps of 256).
inline constexpr int kLeanGroupSteps = 4;
// The bf16 16x16 kernel (quantize_quad.cuh): kLeanThreads per CTA, each warp step 16 rows x
// kQuadCols columns (8 tiles, four lanes per tile), registers bounded for kLeanTensorMinCtas.
inline constexpr int kQuadCols = 128;
// ... with the columnwise output (its transpose needs more registers: 5 CTAs spill).
inline constexpr int kQuadColMinCtas = 3;
// ... whose warps take runs of kQuadRun tile rows down one strip (columnwise stores of whole
// 32-byte sectors).
inline constexpr int kQuadRun = 4;
// amax_quantize_experts' one pass: bytes of x per amax chunk (quantize_quad_amax.cuh).
inline constexpr int64_t kAmaxChunkBytes = 64 * 1024;
// The bf16 1x16 rowwise + columnwise kernel (quantize_rowcol.cuh): kLeanThreads per CTA, units
// of 16 rows x 64 columns, each warp taking runs of kRowColRun units down one strip (a column's
// 32-byte code sector per run), registers bounded for kRowColMinCtas CTAs per SM.
inline constexpr int kRowColRun = 4;
inline constexpr int kRowColMinCtas = 4;
// Tile kernel (16x16 blocks and/or the columnwise output): each warp quantizes units of
// kUnitRows x kUnitCols of x on its own, kTileStages units per warp in shared memory (one
// being quantized, one in flight), kTileWarps warps per CTA, registers bounded for
// kTileMinCtas resident CTAs per SM.
inline constexpr int kUnitRows = 32;
inline constexpr int kUnitCols = 64;
inline constexpr int kTileStages = 2;
inline constexpr int kTileWarps = 4;
inline constexpr int kTileThreads = 32 * kTileWarps;
inline constexpr int kTileMinCtas = 4;
// Units per segment of a band a tile-kernel warp takes in a row with a group-scope amax (8: a
// row's scales of a segment fill one 32-byte sector).
inline constexpr int kGroupSegmentUnits = 8;

}  // namespace f46::cuda
