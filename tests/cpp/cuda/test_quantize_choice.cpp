// choose_quantize_kernel (src/cuda/quantize/quantize_choice.h), a pure host function: runs on
// the CPU, no device needed. Named cases for each kernel and each reason to leave it, then every
// mode x scope x output x block x dtype x alignment class against the kernels' requirements.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "cuda/quantize/quantize_choice.h"

namespace f46::cuda {
namespace {

using K = QuantizeKernel;

// bf16 (4096, 1024), per tensor, 4/6 MAE, rowwise 1x16, every alignment in place.
QuantizeCase lean_case() {
  QuantizeCase c;
  c.bf16 = true;
  c.rows = 4096;
  c.cols = 1024;
  c.vec_load = c.packed_x = c.packed_rowwise = c.wide_rows = true;
  return c;
}

TEST(QuantizeChoice, RowwiseOneBySixteen) {
  QuantizeCase c = lean_case();
  EXPECT_EQ(choose_quantize_kernel(c), K::kRowsLeanTensor);
  c.rows = int64_t{1} << 28;  // 2^34 blocks: the 64-bit form
  EXPECT_EQ(choose_quantize_kernel(c), K::kRowsLean);
  c = lean_case();
  c.scope = ScopeKind::kGroup;
  c.num_groups = 8;  // 8192 blocks per group on average >= 4 x 128
  EXPECT_EQ(choose_quantize_kernel(c), K::kRowsLean);
  c.num_groups = 1024;  // 256 blocks per group < 4 x 128: the rows kernel
  EXPECT_EQ(choose_quantize_kernel(c), K::kRows);
  c = lean_case();
  c.scope = ScopeKind::kRow;
  EXPECT_EQ(choose_quantize_kernel(c), K::kRows);
  for (int reason = 0; reason < 6; ++reason) {  // each requirement of the lean kernels
    c = lean_case();
    const char* what[] = {"fp32", "stochastic", "rht", "unaligned", "strided x", "strided out"};
    if (reason == 0) c.bf16 = false;
    if (reason == 1) c.stochastic = true;
    if (reason == 2) c.rht_rowwise = true;
    if (reason == 3) c.vec_load = false;
    if (reason == 4) c.packed_x = false;
    if (reason == 5) c.packed_rowwise = false;
    EXPECT_EQ(choose_quantize_kernel(c), K::kRows) << what[reason];
  }
}

TEST(QuantizeChoice, SixteenBySixteenWeights) {
  QuantizeCase c = lean_case();
  c.tile16 = true;
  EXPECT_EQ(choose_quantize_kernel(c), K::kQuad16);
  c.columnwise = true;  // the transposed form for the dgrad, with the rowwise amax
  EXPECT_EQ(choose_quantize_kernel(c), K::kQuad16);
  c.amax_columnwise = true;
  EXPECT_EQ(choose_quantize_kernel(c), K::kTile);
  c = lean_case();
  c.tile16 = true;
  c.scope = ScopeKind::kGroup;
  EXPECT_EQ(choose_quantize_kernel(c), K::kTile);
  c = lean_case();
  c.tile16 = true;
  c.bf16 = false;
  EXPECT_EQ(choose_quantize_kernel(c), K::kTile);
  c = lean_case();
  c.tile16 = true;
  c.vec_load = false;
  EXPECT_EQ(choose_quantize_kernel(c), K::kTile);
}

TEST(QuantizeChoice, ColumnwiseOneBySixteen) {
  QuantizeCase c = lean_case();
  c.mode = QuantMode::kGradient;
  c.columnwise = true;
  EXPECT_EQ(choose_quantize_kernel(c), K::kRowCol);
  c.rowwise = false;
  EXPECT_EQ(choose_quantize_kernel(c), K::kRowCol);
  c.rowwise = true;
  c.wide_rows = false;
  EXPECT_EQ(choose_quantize_kernel(c), K::kTile);
  c = lean_case();
  c.columnwise = true;
  c.cols = 1040;  // not whole 64-column units
  EXPECT_EQ(choose_quantize_kernel(c), K::kTile);
  c = lean_case();
  c.columnwise = true;
  c.stochastic = true;
  EXPECT_EQ(choose_quantize_kernel(c), K::kTile);
  c = lean_case();
  c.columnwise = true;
  c.rht_columnwise = true;
  EXPECT_EQ(choose_quantize_kernel(c), K::kTile);
  c = lean_case();
  c.columnwise = true;
  c.rowwise = false;
  c.scope = ScopeKind::kGroup;  // the (virtually padded) wgrad operands
  c.num_groups = 128;
  EXPECT_EQ(choose_quantize_kernel(c), K::kColsGroup);
  c.mode = QuantMode::kGradient;
  EXPECT_EQ(choose_quantize_kernel(c), K::kColsGroup);
  for (int reason = 0; reason < 7; ++reason) {  // each requirement of the group kernel
    QuantizeCase d = c;
    const char* what[] = {"fp32",      "stochastic",  "rht",  "unaligned",
                          "cols % 64", "rowwise too", "16x16"};
    if (reason == 0) d.bf16 = false;
    if (reason == 1) d.stochastic = true;
    if (reason == 2) d.rht_columnwise = true;
    if (reason == 3) d.vec_load = false;
    if (reason == 4) d.cols = 1040;
    if (reason == 5) d.rowwise = true;
    if (reason == 6) d.tile16 = true;
    EXPECT_EQ(choose_quantize_kernel(d), K::kTile) << what[reason];
  }
}

// Every combination of the classes: the chosen kernel is one whose requirements hold, and
// every kernel is reached.
TEST(QuantizeChoice, EveryCaseMeetsItsKernelsRequirements) {
  std::set<K> reached;
  const QuantMode modes[] = {QuantMode::kMAE,  QuantMode::kMSE,  QuantMode::kAbsMax,
                             QuantMode::kAll6, QuantMode::kAll4, QuantMode::kGradient};
  const ScopeKind scopes[] = {ScopeKind::kTensor, ScopeKind::kRow, ScopeKind::kGroup};
  for (QuantMode mode : modes)
    for (ScopeKind scope : scopes)
      for (int out = 1; out < 4; ++out)  // rowwise, columnwise, both
        for (int bits = 0; bits < 1 << 9; ++bits) {
          QuantizeCase c;
          c.mode = mode;
          c.scope = scope;
          c.num_groups = scope == ScopeKind::kGroup ? 4 : 1;
          c.rowwise = out & 1;
          c.columnwise = out & 2;
          c.tile16 = bits & 1;
          c.bf16 = bits & 2;
          c.stochastic = bits & 4;
          c.rht_rowwise = bits & 8;
          c.rht_columnwise = bits & 16;
          c.vec_load = bits & 32;
          c.packed_x = c.packed_rowwise = bits & 64;
          c.wide_rows = bits & 128;
          c.amax_columnwise = bits & 256;
          c.rows = 2048;
          c.cols = (bits & 64) ? 1024 : 1040;
          const K k = choose_quantize_kernel(c);
          reached.insert(k);
          const std::string what = "kernel " + std::to_string(static_cast<int>(k)) + " bits " +
                                   std::to_string(bits) + " out " + std::to_string(out);
          const bool along_rows = c.columnwise || c.tile16;
          EXPECT_EQ(along_rows,
                    k == K::kTile || k == K::kQuad16 || k == K::kRowCol || k == K::kColsGroup)
              << what;
          if (k != K::kRows && k != K::kTile) {  // the bf16 kernels, per tensor or large groups
            EXPECT_TRUE(c.bf16 && c.vec_load && !c.stochastic && !c.rht_rowwise) << what;
            EXPECT_NE(scope, ScopeKind::kRow) << what;
          }
          if (k == K::kQuad16)
            EXPECT_TRUE(c.tile16 && scope == ScopeKind::kTensor && mode != QuantMode::kGradient &&
                        !(c.columnwise && (c.amax_columnwise || c.rht_columnwise)))
                << what;
          if (k == K::kRowCol)
            EXPECT_TRUE(!c.tile16 && scope == ScopeKind::kTensor && c.cols % 64 == 0 &&
                        !c.rht_columnwise && (!c.rowwise || c.wide_rows))
                << what;
          if (k == K::kColsGroup)
            EXPECT_TRUE(!c.tile16 && !c.rowwise && scope == ScopeKind::kGroup && c.cols % 64 == 0 &&
                        !c.rht_columnwise)
                << what;
          if (k == K::kRowsLeanTensor || k == K::kRowsLean)
            EXPECT_TRUE(c.packed_x && c.packed_rowwise) << what;
          if (k == K::kRowsLeanTensor) EXPECT_EQ(scope, ScopeKind::kTensor) << what;
        }
  EXPECT_EQ(reached.size(), 7u);
}

TEST(QuantizeChoice, TileBandPairsOnlyWithoutA46DecisionAndWithWordStores) {
  QuantizeCase c = lean_case();
  c.columnwise = true;
  c.wide_cols = c.scale_words_t = true;
  for (QuantMode m : {QuantMode::kAll6, QuantMode::kAll4, QuantMode::kGradient}) {
    c.mode = m;
    EXPECT_TRUE(tile_pair_cols(c)) << static_cast<int>(m);
  }
  for (QuantMode m : {QuantMode::kMAE, QuantMode::kMSE, QuantMode::kAbsMax}) {
    c.mode = m;
    EXPECT_FALSE(tile_pair_cols(c)) << static_cast<int>(m);
  }
  c.mode = QuantMode::kGradient;
  c.scale_words_t = false;
  EXPECT_FALSE(tile_pair_cols(c));
  c.scale_words_t = true;
  c.wide_cols = false;
  EXPECT_FALSE(tile_pair_cols(c));
  c.wide_cols = true;
  c.columnwise = false;
  EXPECT_FALSE(tile_pair_cols(c));
}

TEST(QuantizeChoice, ExpertsBatchedOnlyForSmallAlignedQuad16) {
  const int sms = 132;
  const int64_t full = int64_t{sms} * kQuadColMinCtas;
  EXPECT_TRUE(quad16_batched(K::kQuad16, 128, true, full - 1, sms));  // Qwen3-like experts
  EXPECT_FALSE(quad16_batched(K::kQuad16, 8, true, full, sms));       // one expert fills it
  EXPECT_FALSE(quad16_batched(K::kQuad16, 128, false, 16, sms));      // strides unaligned
  EXPECT_FALSE(quad16_batched(K::kQuad16, 1, true, 16, sms));         // nothing to batch
  EXPECT_TRUE(quad16_batched(K::kQuad16, 65535, true, 16, sms));
  EXPECT_FALSE(quad16_batched(K::kQuad16, 65536, true, 16, sms));  // the grid's y limit
  for (K k : {K::kRows, K::kRowsLean, K::kRowsLeanTensor, K::kTile, K::kRowCol})
    EXPECT_FALSE(quad16_batched(k, 128, true, 16, sms)) << static_cast<int>(k);
}

TEST(QuantizeChoice, GridItems) {
  QuantizeCase c = lean_case();  // (4096, 1024)
  EXPECT_EQ(quantize_grid_items(K::kRows, c), 4096 * 64);
  EXPECT_EQ(quantize_grid_items(K::kRowsLeanTensor, c), 4096 * 64);
  c.columnwise = true;
  EXPECT_EQ(quantize_grid_items(K::kRowCol, c), 256 / kRowColRun * (1024 / 64));
  EXPECT_EQ(quantize_grid_items(K::kTile, c), 4096 / 32 * (1024 / 64));
  c.mode = QuantMode::kGradient;  // band pairs: half the tile-kernel items
  c.wide_cols = c.scale_words_t = true;
  EXPECT_EQ(quantize_grid_items(K::kTile, c), 4096 / 64 * (1024 / 64));
  c.mode = QuantMode::kMAE;
  c.tile16 = true;
  EXPECT_EQ(quantize_grid_items(K::kQuad16, c), 256 / kQuadRun * (1024 / kQuadCols));
  c.columnwise = false;
  EXPECT_EQ(quantize_grid_items(K::kQuad16, c), 256 * (1024 / kQuadCols));
}

}  // namespace
}  // namespace f46::cuda
