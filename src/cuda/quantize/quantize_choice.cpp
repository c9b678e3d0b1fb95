// choose_quantize_kernel: the quantization kernel for a call (quantize_choice.h).
#include "cuda/quantize/quantize_choice.h"

namespace f46::cuda {

namespace {

int64_t ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The lean rows kernels: per tensor, or per group when the groups average at least
// kLeanGroupSteps steps of blocks (a block of a step that straddles a group boundary computes
// its own scale entries there; with tiny groups the rows kernel is faster).
bool lean_rows(const QuantizeCase& c) {
  const bool scope =
      c.scope == ScopeKind::kTensor ||
      (c.scope == ScopeKind::kGroup &&
       c.rows * (c.cols / 16) >= int64_t{kLeanGroupSteps} * kLeanThreads * c.num_groups);
  return c.bf16 && scope && c.vec_load && c.packed_x && c.packed_rowwise && !c.rht_rowwise &&
         !c.stochastic;
}

// 16x16 per tensor (dense weights): four lanes per tile, warp steps of 16 rows x kQuadCols
// columns, fewer than 2^31 of them; the columnwise output with the rowwise amax and no RHT.
bool quad16(const QuantizeCase& c) {
  const int64_t steps = c.rows / 16 * ceil_div64(c.cols, kQuadCols);
  return c.bf16 && c.tile16 && c.mode != QuantMode::kGradient && c.scope == ScopeKind::kTensor &&
         c.vec_load && !c.rht_rowwise && !c.stochastic && steps < (int64_t{1} << 31) &&
         (!c.columnwise || (!c.amax_columnwise && !c.rht_columnwise));
}

// 1x16 row+col per tensor (activations, gradients): runs of kRowColRun units of 16 x 64.
bool rowcol(const QuantizeCase& c) {
  return c.bf16 && !c.tile16 && c.columnwise && c.scope == ScopeKind::kTensor && c.vec_load &&
         c.cols % 64 == 0 && !c.stochastic && !c.rht_rowwise && !c.rht_columnwise &&
         (!c.rowwise || c.wide_rows);
}

// 1x16 columnwise only per group (the wgrad operands, virtual padding included): runs of
// kRowColRun units of 16 x 64, a band's group amax per band.
bool cols_group(const QuantizeCase& c) {
  return c.bf16 && !c.tile16 && c.columnwise && !c.rowwise && c.scope == ScopeKind::kGroup &&
         c.vec_load && c.cols % 64 == 0 && !c.stochastic && !c.rht_rowwise && !c.rht_columnwise;
}

}  // namespace

QuantizeKernel choose_quantize_kernel(const QuantizeCase& c) {
  if (c.tile16 || c.columnwise) {  // blocks along the rows: the tile kernel's family
    if (quad16(c)) return QuantizeKernel::kQuad16;
    if (rowcol(c)) return QuantizeKernel::kRowCol;
    if (cols_group(c)) return QuantizeKernel::kColsGroup;
    return QuantizeKernel::kTile;
  }
  if (!lean_rows(c)) return QuantizeKernel::kRows;
  // The per-tensor form indexes blocks in 32 bits.
  const bool tensor = c.scope == ScopeKind::kTensor && c.rows * (c.cols / 16) < (int64_t{1} << 31);
  return tensor ? QuantizeKernel::kRowsLeanTensor : QuantizeKernel::kRowsLean;
}

bool tile_pair_cols(const QuantizeCase& c) {
  return c.columnwise && c.wide_cols && c.scale_words_t && c.mode != QuantMode::kMAE &&
         c.mode != QuantMode::kMSE && c.mode != QuantMode::kAbsMax;
}

bool quad16_batched(QuantizeKernel k, int64_t experts, bool batch_aligned, int64_t grid_ctas,
                    int sm_count) {
  return k == QuantizeKernel::kQuad16 && experts > 1 && experts <= 65535 && batch_aligned &&
         grid_ctas < int64_t{sm_count} * kQuadColMinCtas;
}

int64_t quantize_grid_items(QuantizeKernel k, const QuantizeCase& c) {
  switch (k) {
    case QuantizeKernel::kRowCol:  // a warp per run
    case QuantizeKernel::kColsGroup:
      return ceil_div64(c.rows / 16, kRowColRun) * (c.cols / 64);
    case QuantizeKernel::kQuad16:  // a warp per step (columnwise: per run of kQuadRun steps)
      return c.columnwise ? ceil_div64(c.rows / 16, kQuadRun) * ceil_div64(c.cols, kQuadCols)
                          : c.rows / 16 * ceil_div64(c.cols, kQuadCols);
    case QuantizeKernel::kTile: {  // a warp per unit at most (band pairs or bands)
      const int64_t seg_rows = (tile_pair_cols(c) ? 2 : 1) * kUnitRows;
      return ceil_div64(c.rows, seg_rows) * ceil_div64(c.cols, kUnitCols);
    }
    default:  // a thread per 16-element block per step
      return c.rows * (c.cols / 16);
  }
}

int quantize_items_per_cta(QuantizeKernel k) {
  switch (k) {
    case QuantizeKernel::kRowCol:
    case QuantizeKernel::kColsGroup:
    case QuantizeKernel::kQuad16:
      return kLeanThreads / 32;
    case QuantizeKernel::kTile:
      return kTileWarps;
    case QuantizeKernel::kRowsLean:
    case QuantizeKernel::kRowsLeanTensor:
      return kLeanThreads;
    case QuantizeKernel::kRows:
      return kRowThreads;
  }
  return kRowThreads;
}

}  // namespace f46::cuda
