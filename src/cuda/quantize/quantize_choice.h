// Which CUDA quantization kernel runs a call: the one pure host function that chooses (no CUDA
// runtime, no device; tests/cpp/cuda/test_quantize_choice.cpp covers every mode, scope and
// alignment class on the CPU). docs/design.md, "Quantizers", says why each kernel exists. Every
// kernel gives the bits of the CPU reference (N2-N7); the choice is speed only.
#pragma once

#include <cstdint>

#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

enum class QuantizeKernel : uint8_t {
  kRows,            // quantize_rows_kernel: rowwise 1x16, every dtype, mode, scope, RHT and SR
  kRowsLean,        // quantize_rows_lean_kernel: bf16 rowwise 1x16, groups of many blocks
  kRowsLeanTensor,  // quantize_rows_lean_tensor_kernel: bf16 rowwise 1x16 per tensor
  kTile,            // quantize_tile_kernel: columnwise and/or 16x16, every dtype, mode, scope
  kQuad16,          // quantize_tile16_quad_kernel: bf16 16x16 per tensor (weights)
  kRowCol,          // quantize_rowcol_lean_kernel: bf16 1x16 rowwise + columnwise per tensor
  kColsGroup,       // quantize_cols_group_kernel: bf16 1x16 columnwise only, group scope
};

// What the choice depends on, from the validated arguments (src/quantize.cpp checked them).
struct QuantizeCase {
  bool bf16 = false;
  int64_t rows = 0, cols = 0;  // x (rows, cols); with virtual padding rows is the padded count
  ScopeKind scope = ScopeKind::kTensor;
  int num_groups = 1;  // kGroup only
  QuantMode mode = QuantMode::kMAE;
  bool stochastic = false, rht_rowwise = false, rht_columnwise = false;
  bool rowwise = true, columnwise = false, tile16 = false;
  bool amax_columnwise = false;  // a separate amax for the columnwise output is given
  bool vec_load = false;         // x is read in 16-byte copies (aligned rows, whole chunks)
  bool packed_x = false;         // x rows contiguous (row stride == cols, or one row)
  bool packed_rowwise = false;   // codes/scales rows exactly cols/2 and cols/16 bytes
  bool wide_rows = false;        // rowwise stores of 16 code bytes and 4 scales are aligned
  bool wide_cols = false;        // columnwise stores of 16 code bytes and 2 scales are aligned
  bool scale_words_t = false;    // ... and of 4 columnwise scale bytes
};

QuantizeKernel choose_quantize_kernel(const QuantizeCase& c);

// Whether the tile kernel takes band pairs (two 32-row bands a warp, QuantizeParams::pair_cols):
// columnwise output with 4-byte scale stores, and only for the modes without a 4/6 decision,
// which the columnwise stores bound (the error rules are bound by their arithmetic; band pairs
// measured no faster there).
bool tile_pair_cols(const QuantizeCase& c);

// Whether quantize_experts quantizes its E experts in one batched launch of the 16x16 weights
// kernel: that kernel takes expert 0 (then every expert: same shape and strides), the batch
// strides keep each expert's 16-byte alignment (`batch_aligned`), 1 < E <= 65535, and one
// expert's `grid_ctas` would not fill the device (fewer than `sm_count` x kQuadColMinCtas): the
// batched form's extra registers spill a little, which cost large experts ~3 % of the layer
// step (H100).
bool quad16_batched(QuantizeKernel k, int64_t experts, bool batch_aligned, int64_t grid_ctas,
                    int sm_count);

// Items of the grid for kernel k (warps or threads, as the launcher divides them): rowcol runs
// of kRowColRun units, quad steps or runs, tile-kernel units, or one 16-element block per
// thread for the rows kernels.
int64_t quantize_grid_items(QuantizeKernel k, const QuantizeCase& c);
// ... and how many of them one CTA takes (its warps, or its threads for the rows kernels).
int quantize_items_per_cta(QuantizeKernel k);

}  // namespace f46::cuda
