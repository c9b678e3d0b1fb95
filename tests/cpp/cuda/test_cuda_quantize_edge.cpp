// CUDA quantize vs the CPU reference on adversarial values (ties, zeros, E4M3 sub-normal
// scales, huge values, NaN/Inf), a property loop over random shapes/modes/seeds, stochastic
// rounding reproducibility, amax over tensor/rows/groups, and CUDA-graph capture.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "cuda/quad_tile_values.h"

namespace f46::test {
namespace {

QuantizeConfig make_cfg(int mode, bool columnwise, bool tile16) {
  QuantizeConfig c;
  const Rule rules[] = {Rule::kMAE, Rule::kMSE, Rule::kAbsMax, Rule::kAll6, Rule::kAll4};
  c.block = tile16 ? Block::k16x16 : Block::k1x16;
  c.columnwise = columnwise;
  if (mode < 5) {
    c.rule = rules[mode];
    c.scale_bound = mode % 2 ? 448.0f : 256.0f;
  } else {  // gradient, RNE (5) or stochastic (6)
    c.rule = Rule::kAll6;
    c.scale_bound = 448.0f;
    c.gradient = true;
    c.block = Block::k1x16;
    if (mode == 6) {
      c.rounding = Rounding::kStochastic;
      c.seed = 42;
    }
  }
  return c;
}

void check_all_modes(const HostTensor& x, const AmaxSpec& a, const std::string& what) {
  for (int mode = 0; mode < 7; ++mode)
    for (int layout = 0; layout < 4; ++layout) {  // 1x16, row+col, 16x16 row+col, 16x16
      const bool columnwise = layout == 1 || layout == 2, tile16 = layout >= 2;
      if ((columnwise || tile16) && x.size(0) % 16 != 0) continue;
      const QuantizeConfig cfg = make_cfg(mode, columnwise, tile16);
      expect_same_quantized(
          quantize_host(x, a, cfg), quantize_device(x, a, cfg), cfg,
          what + " mode " + std::to_string(mode) + " layout " + std::to_string(layout));
    }
}

// Values that land exactly on E2M1 midpoints under both candidates: with A = 6 * bound
// (S_enc = 1) and a block max of 6, scale6 = 1 and scale4 = 1.5.
TEST(CudaQuantizeEdge, TiesAndZeros) {
  F46_SKIP_WITHOUT_CUDA();
  const std::vector<float> mids = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  std::vector<float> v;
  for (int b = 0; b < 32; ++b) {
    v.push_back(6.0f);
    for (int i = 1; i < 16; ++i) {
      const float m = mids[static_cast<size_t>((i + b) % 7)] * (b % 2 ? 1.5f : 1.0f);
      v.push_back((i + b) % 3 == 0 ? -m : m);
    }
  }
  for (int i = 0; i < 16; ++i) v.push_back(0.0f);   // all-zero block
  for (int i = 0; i < 16; ++i) v.push_back(-0.0f);  // negative zeros: code 0x8
  for (int i = 0; i < 16 * 14; ++i) v.push_back(i % 5 == 0 ? 0.0f : 0.001f * (i % 7));
  const HostTensor x = make_matrix(DType::kFloat32, 48, 16, v);  // 48 x 16 = 768 values
  check_all_modes(x, tensor_amax(6.0f * 256.0f), "ties A=6*256");
  check_all_modes(x, tensor_amax(6.0f * 448.0f), "ties A=6*448");
  check_all_modes(x, tensor_amax(0.0f), "ties A=0");
  // The same values in bf16 (all exact), 32 x 64: the lean rows kernel for the rowwise layout,
  // and column blocks that mix the rows' ties for the columnwise layouts.
  std::vector<float> w;
  while (w.size() < 32 * 64) w.insert(w.end(), v.begin(), v.end());
  w.resize(32 * 64);
  const HostTensor xb = make_matrix(DType::kBFloat16, 32, 64, w);
  check_all_modes(xb, tensor_amax(6.0f * 256.0f), "bf16 ties A=6*256");
  check_all_modes(xb, tensor_amax(6.0f * 448.0f), "bf16 ties A=6*448");
}

// bf16 tensors (the lean rows kernel, src/cuda/quantize/quantize_lean.cuh) where most blocks are
// exact 4/6 ties: values from {0, +-1.5, +-3, +-6} with a block max of 6 under S_enc = 1 are on
// the grid of both candidates (scales 1 and 1.5), so err4 = err6 = 0: the approximate errors
// cannot decide and the exact ones must give 6 (ties go to 6), in ~20 lanes of every warp step.
// Random blocks are mixed in. Odd rows: a partial last step.
TEST(CudaQuantizeEdge, LeanUndecidedBlocks) {
  F46_SKIP_WITHOUT_CUDA();
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{1001, 1072}, {4096, 512}, {3, 16}}) {
    std::vector<float> v =
        random_values(rows * cols, 77 + rows, Dist::kStudentT, 2.0f, DType::kBFloat16);
    std::mt19937 gen(static_cast<uint32_t>(rows));
    const float grid[] = {0.0f, 1.5f, -1.5f, 3.0f, -3.0f, 6.0f, -6.0f};
    for (int64_t blk = 0; blk < rows * cols / 16; ++blk) {
      if (gen() % 10 >= 7) continue;  // 30 % random blocks
      for (int64_t i = 0; i < 16; ++i) v[static_cast<size_t>(16 * blk + i)] = grid[gen() % 7];
      v[static_cast<size_t>(16 * blk + gen() % 16)] = gen() % 2 ? 6.0f : -6.0f;
    }
    const HostTensor x = make_matrix(DType::kBFloat16, rows, cols, v);
    for (int mode = 0; mode < 3; ++mode) {     // mae, mse, abs_max
      for (bool columnwise : {false, true}) {  // lean rows kernel; row+col (rows % 16 == 0)
        if (columnwise && rows % 16 != 0) continue;
        const QuantizeConfig cfg = make_cfg(mode, columnwise, false);
        const AmaxSpec a = tensor_amax(6.0f * cfg.scale_bound);
        expect_same_quantized(quantize_host(x, a, cfg), quantize_device(x, a, cfg), cfg,
                              "lean ties " + std::to_string(rows) + "x" + std::to_string(cols) +
                                  " mode " + std::to_string(mode) + (columnwise ? " row+col" : ""));
      }
    }
  }
}

// bf16 16x16 per tensor (the four-lanes-per-tile kernel, quantize_quad.cuh): a third of the tiles
// hold only values on both candidates' grids (the tile errors tie exactly: undecided, decided by
// the exact errors, for W and for W^T), one tile a NaN, one an Inf, one zeros, one negative
// zeros, one a huge value (its scales saturate), under the amax 6 * bound (S_enc = 1, so those
// ties are exact) and another; every 16x16 rule. 8192 x 1040: rowwise (contiguous and padded
// rows of x), rowwise + columnwise and columnwise only, every warp taking several steps, each
// tile row ending in a partial strip. 102448 x 144 (6403 tile rows): rowwise + columnwise and
// columnwise only with every warp taking several runs of 4 tile rows, the last run partial.
TEST(CudaQuantizeEdge, Tile16QuadTiles) {
  F46_SKIP_WITHOUT_CUDA();
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{8192, 1040}, {102448, 144}}) {
    const std::vector<float> v = quad_tile_values(rows, cols);
    for (int64_t stride : {cols, cols + 8}) {
      const HostTensor x = make_matrix(DType::kBFloat16, rows, cols, v, stride);
      for (int mode = 0; mode < 5; ++mode) {          // mae, mse, abs_max, all6, all4
        for (int layout = 0; layout < 3; ++layout) {  // rowwise, row + col, columnwise only
          if ((layout > 0 && stride != cols) || (layout == 0 && cols == 144)) continue;
          QuantizeConfig cfg = make_cfg(mode, layout > 0, true);
          cfg.rowwise = layout < 2;
          for (const AmaxSpec& a : {tensor_amax(6.0f * cfg.scale_bound), tensor_amax(1000.0f)}) {
            expect_same_quantized(
                quantize_host(x, a, cfg), quantize_device(x, a, cfg), cfg,
                "quad 16x16 " + std::to_string(rows) + "x" + std::to_string(cols) + " mode " +
                    std::to_string(mode) + " layout " + std::to_string(layout) + " amax " +
                    std::to_string(a.amax[0]) + " stride " + std::to_string(stride));
          }
        }
      }
    }
  }
}

// bf16 1x16 rowwise + columnwise per tensor (the lean row+col kernel, quantize_rowcol.cuh), on
// quad_tile_values: a third of the 16x16 tiles hold only values on both candidates' grids, so row
// and column blocks tie exactly (decided by the exact errors), with a NaN, an Inf, zero,
// negative-zero and saturating tiles. `big`: mae, all6 and gradient RNE row+col only.
void check_rowcol_runs(int64_t rows, int64_t cols, bool big) {
  const std::vector<float> v = quad_tile_values(rows, cols);
  for (int64_t stride : {cols, cols + 8}) {
    if (big && stride != cols) continue;
    const HostTensor x = make_matrix(DType::kBFloat16, rows, cols, v, stride);
    for (int mode = 0; mode < 6; ++mode) {  // mae, mse, abs_max, all6, all4, gradient RNE
      if (big && mode != 0 && mode != 3 && mode != 5) continue;
      for (int layout = 1; layout < 3; ++layout) {  // row + col, columnwise only
        if (big && layout == 2) continue;
        QuantizeConfig cfg = make_cfg(mode, true, false);
        cfg.rowwise = layout == 1;
        AmaxSpec own = tensor_amax(6.0f * cfg.scale_bound);
        own.amax_columnwise = {1000.0f};
        for (const AmaxSpec& a : {tensor_amax(6.0f * cfg.scale_bound), own}) {
          if (big && !a.amax_columnwise.empty()) continue;
          expect_same_quantized(
              quantize_host(x, a, cfg), quantize_device(x, a, cfg), cfg,
              "row+col " + std::to_string(rows) + "x" + std::to_string(cols) + " mode " +
                  std::to_string(mode) + " layout " + std::to_string(layout) + " own amax_t " +
                  std::to_string(!a.amax_columnwise.empty()) + " stride " + std::to_string(stride));
        }
      }
    }
  }
}
// 1040 x 1088: runs of 4 units and a last run of one, codes_t and scales_t rows not 16- / 4-byte
// aligned (8-byte pieces and bytes), contiguous and padded rows of x, the tensor amax and an own
// columnwise amax (small enough for compute-sanitizer).
TEST(CudaQuantizeEdge, RowColRuns) {
  F46_SKIP_WITHOUT_CUDA();
  check_rowcol_runs(1040, 1088, false);
}
// 24048 x 512: every warp takes several runs, the last run of each strip holds 3 units.
TEST(CudaQuantizeEdge, RowColRunsLarge) {
  F46_SKIP_WITHOUT_CUDA();
  check_rowcol_runs(24048, 512, true);
}

// bf16 1x16 row+col with a group-scope amax (the tile kernel; written for a group form of the lean
// row+col kernel, which passed it on an H200 on 2026-12-05 and is not dispatched): an empty
// group, a group of zeros (amax 0), a group holding a NaN, two neighbouring groups with equal
// amaxes, amaxes not equal to the data's, an own columnwise amax per group, rows past the last
// offset (amax 0). A wrong group gives other codes or scales. `big`: mae and gradient RNE row+col
// only.
void check_rowcol_groups(int64_t rows, int64_t cols, const std::vector<int32_t>& offs, bool big) {
  std::vector<float> v = random_values(rows * cols, 23, Dist::kStudentT, 3.0f, DType::kBFloat16);
  for (int64_t r = offs[2]; r < offs[3]; ++r)  // group 3: zeros
    for (int64_t c = 0; c < cols; ++c) v[static_cast<size_t>(r * cols + c)] = 0.0f;
  v[static_cast<size_t>((offs[4] + 5) * cols + 77)] = std::numeric_limits<float>::quiet_NaN();
  const HostTensor x = make_matrix(DType::kBFloat16, rows, cols, v);
  AmaxSpec a;
  a.scope = AmaxScope::kGroup;
  a.offsets = offs;
  a.amax = amax_host(x, AmaxScope::kGroup, offs);
  std::vector<AmaxSpec> specs = {a, a};
  for (size_t g = 0; g < offs.size(); g += 2) specs[1].amax[g] *= 1.75f;
  specs[1].amax[3] = specs[1].amax[2];  // equal amaxes across a boundary inside a 64-row stack
  for (float f : a.amax) specs[1].amax_columnwise.push_back(f * 1.5f);
  for (int mode = 0; mode < 6; ++mode) {  // mae, mse, abs_max, all6, all4, gradient RNE
    if (big && mode != 0 && mode != 5) continue;
    for (int layout = 1; layout < 3; ++layout) {  // row + col, columnwise only
      if (big && layout == 2) continue;
      for (size_t i = 0; i < specs.size(); ++i) {
        QuantizeConfig cfg = make_cfg(mode, true, false);
        cfg.rowwise = layout == 1;
        expect_same_quantized(
            quantize_host(x, specs[i], cfg), quantize_device(x, specs[i], cfg), cfg,
            "row+col group " + std::to_string(rows) + " mode " + std::to_string(mode) + " layout " +
                std::to_string(layout) + " spec " + std::to_string(i));
      }
    }
  }
}
// 1216 x 1088: one run or none per warp (small enough for compute-sanitizer).
TEST(CudaQuantizeEdge, RowColGroupScope) {
  F46_SKIP_WITHOUT_CUDA();
  check_rowcol_groups(1216, 1088, {80, 80, 240, 256, 512, 1024, 1120}, false);
}
// 12800 x 1024: every warp takes a range of several runs that crosses groups.
TEST(CudaQuantizeEdge, RowColGroupScopeLarge) {
  F46_SKIP_WITHOUT_CUDA();
  check_rowcol_groups(12800, 1024, {1600, 1600, 3216, 5120, 9984, 12288}, true);
}

// bf16 1x16 row+col with stochastic rounding and/or the RHT (the tile kernel; written for a
// general block path of the lean row+col kernel, which passed it on an H200 on 2026-12-05 and
// was removed as slower): the Philox element indices of both outputs (N6), the transform of rows
// and of columns (N7), per tensor with an own columnwise amax and per group, on 1040 x 1088. A
// wrong element index or transform changes codes.
TEST(CudaQuantizeEdge, RowColStochasticRht) {
  F46_SKIP_WITHOUT_CUDA();
  const int64_t rows = 1040, cols = 1088;
  const HostTensor x = random_matrix(DType::kBFloat16, rows, cols, 31, Dist::kStudentT, 2.0f);
  const std::vector<float> amax = amax_host(x, AmaxScope::kTensor);
  AmaxSpec own = tensor_amax(amax[0]);
  own.amax_columnwise = {amax[0] * 2.5f};
  AmaxSpec grp;
  grp.scope = AmaxScope::kGroup;
  grp.offsets = {256, 256, 640, 1024};
  grp.amax = amax_host(x, AmaxScope::kGroup, grp.offsets);
  struct Case {
    int mode;  // make_cfg: 0 mae, 3 all6 (+ SR below), 5 gradient RNE, 6 gradient SR
    bool sr, rht_row, rht_col;
  };
  for (const Case& k :
       {Case{6, true, false, true}, Case{6, true, true, true}, Case{6, true, false, false},
        Case{5, false, false, true}, Case{3, true, true, false}, Case{0, false, true, true}}) {
    QuantizeConfig cfg = make_cfg(k.mode, true, false);
    if (k.sr) cfg.rounding = Rounding::kStochastic;
    cfg.seed = 0x1234567890ABull;
    cfg.offset = 77;
    cfg.rht_rowwise = k.rht_row;
    cfg.rht_columnwise = k.rht_col;
    for (const AmaxSpec& a : {own, grp}) {
      expect_same_quantized(quantize_host(x, a, cfg), quantize_device(x, a, cfg), cfg,
                            "row+col SR/RHT mode " + std::to_string(k.mode) + " sr " +
                                std::to_string(k.sr) + " rht " + std::to_string(k.rht_row) +
                                std::to_string(k.rht_col) + " scope " +
                                std::to_string(static_cast<int>(a.scope)));
    }
  }
}

// bf16 rowwise with a group-scope amax whose groups average >= kLeanGroupSteps steps (the lean
// kernel, src/cuda/quantize/quantize_lean.cuh): boundaries inside steps and inside rows' block
// runs, an empty group, one-row groups (smaller than a step), a group of zeros (amax 0), a group
// holding a NaN (amax NaN), two groups with equal amaxes (the table kept), amaxes not equal to
// the data's, and rows past the last offset (amax 0). A wrong table group, a missed refill or a
// wrong block-to-group mapping at a straddling step changes codes or scales.
TEST(CudaQuantizeEdge, LeanGroupScope) {
  F46_SKIP_WITHOUT_CUDA();
  const int64_t rows = 1000, cols = 1072;  // 67 blocks per row: steps of 256 blocks straddle rows
  std::vector<float> v = random_values(rows * cols, 91, Dist::kStudentT, 3.0f, DType::kBFloat16);
  const std::vector<int32_t> offs = {131, 131, 132, 133, 400, 401, 650, 651, 900, 997};
  for (int64_t r = 401; r < 650; ++r)  // group 5: zeros
    for (int64_t c = 0; c < cols; ++c) v[static_cast<size_t>(r * cols + c)] = 0.0f;
  v[static_cast<size_t>(700 * cols + 333)] = std::numeric_limits<float>::quiet_NaN();  // group 7
  const HostTensor x = make_matrix(DType::kBFloat16, rows, cols, v);
  AmaxSpec a;
  a.scope = AmaxScope::kGroup;
  a.offsets = offs;
  a.amax = amax_host(x, AmaxScope::kGroup, offs);
  std::vector<AmaxSpec> specs = {a, a, a};
  for (size_t g = 0; g < offs.size(); g += 2) specs[1].amax[g] *= 1.75f;
  specs[2].amax[3] = specs[2].amax[2];  // equal amaxes across a boundary inside a step
  specs[2].amax[6] = std::numeric_limits<float>::infinity();
  for (int mode = 0; mode < 6; ++mode)  // mae, mse, abs_max, all6, all4, gradient RNE
    for (size_t i = 0; i < specs.size(); ++i) {
      const QuantizeConfig cfg = make_cfg(mode, false, false);
      expect_same_quantized(
          quantize_host(x, specs[i], cfg), quantize_device(x, specs[i], cfg), cfg,
          "lean group mode " + std::to_string(mode) + " spec " + std::to_string(i));
    }
}

// Tiny blocks under a large global amax: block scales in the E4M3 sub-normal range and zero;
// huge and tiny tensors (the fast error path's range guard); fp32 sub-normal inputs.
TEST(CudaQuantizeEdge, ExtremeMagnitudes) {
  F46_SKIP_WITHOUT_CUDA();
  std::vector<float> v = random_values(64 * 64, 3, Dist::kGaussian, 1.0f);
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t block = static_cast<int64_t>(i / 16);
    v[i] *= std::ldexp(1.0f, static_cast<int>(block % 24) - 20);  // 2^-20 .. 2^3 per block
  }
  v[0] = 1000.0f;
  for (DType t : {DType::kFloat32, DType::kBFloat16}) {  // bf16: the lean kernels
    const HostTensor x = make_matrix(t, 64, 64, v);
    check_all_modes(x, tensor_amax(host_amax(v)), std::string("subnormal scales ") + dtype_name(t));
  }
  for (float s : {1e-30f, 1e-38f, 1e30f, 3e38f}) {
    std::vector<float> w = random_values(32 * 32, 4, Dist::kStudentT, s);
    w[5] = 1e-44f;  // fp32 sub-normal
    const HostTensor y = make_matrix(DType::kFloat32, 32, 32, w);
    check_all_modes(y, tensor_amax(host_amax(w)), "scale " + std::to_string(s));
  }
}

// The edges of the fast path's conditions (src/cuda/quantize/quantize_block.cuh): RN(sf * A)
// ~ block amax * bound straddling 2^-100 and 2^118 (C2), and E4M3 sub-normal scales swept so
// that RN(b * inv) crosses 7 (C1), with both candidates' scales on either side. A wrong fast path
// or a wrong boundary gives codes or scales different from the reference.
TEST(CudaQuantizeEdge, FastPathBoundaries) {
  F46_SKIP_WITHOUT_CUDA();
  for (int e : {-110, -109, -108, -107, -106, 108, 109, 110, 111}) {
    std::vector<float> v = random_values(32 * 64, 40 + e, Dist::kGaussian, 1.0f);
    for (size_t i = 0; i < v.size(); ++i)  // block amaxes 2^(e-3) .. 2^(e+1)
      v[i] = std::ldexp(v[i] * 0.25f, e - static_cast<int>((i / 16) % 4));
    for (DType t : {DType::kFloat32, DType::kBFloat16}) {  // bf16: the lean kernels
      const HostTensor x = make_matrix(t, 32, 64, v);
      check_all_modes(x, tensor_amax(host_amax(v)),
                      "C2 edge 2^" + std::to_string(e) + " " + dtype_name(t));
    }
  }
  std::vector<float> v = random_values(16 * 64, 41, Dist::kStudentT, 1.0f);
  const HostTensor x = make_matrix(DType::kFloat32, 16, 64, v);
  const float b = host_amax(v);
  for (int k = 0; k <= 48; ++k) {  // base = b * bound / A from 2^-11 to 2^-5: sub-normal scales
    const float base = std::ldexp(1.0f + (k % 8) / 8.0f, -11 + k / 8);
    check_all_modes(x, tensor_amax(b * 256.0f / base), "C1 sweep " + std::to_string(k));
  }
}

// NaN and Inf inside blocks, in the global amax, and an amax of 0 with non-zero data.
TEST(CudaQuantizeEdge, NonFinite) {
  F46_SKIP_WITHOUT_CUDA();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = random_values(32 * 64, 5, Dist::kGaussian, 1.0f);
  v[3] = nan;
  v[40] = -nan;
  v[100] = inf;
  v[200] = -inf;
  v[300] = inf;
  v[301] = nan;
  for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    const HostTensor x = make_matrix(t, 32, 64, v);
    check_all_modes(x, tensor_amax(4.0f), std::string("non-finite blocks ") + dtype_name(t));
    check_all_modes(x, tensor_amax(nan), "amax NaN");
    check_all_modes(x, tensor_amax(inf), "amax Inf");
    check_all_modes(x, tensor_amax(0.0f), "amax 0");
  }
}

// ~2000 random cases: shape, dtype, mode, layout, scope, distribution and magnitude.
TEST(CudaQuantizeEdge, PropertyLoop) {
  F46_SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(20261202);
  int cases = 0;
  for (int it = 0; it < 2000; ++it) {
    const int mode = static_cast<int>(gen() % 7);
    const int layout = static_cast<int>(gen() % 3);
    const bool columnwise = layout >= 1, tile16 = layout == 2 && mode < 5;
    const bool rows16 = columnwise || tile16 || gen() % 2;
    const int64_t R = rows16 ? 16 * static_cast<int64_t>(1 + gen() % 6) : 1 + gen() % 70;
    const int64_t C = 16 * static_cast<int64_t>(1 + gen() % 12);
    const DType t =
        gen() % 3 == 0 ? DType::kFloat32 : (gen() % 2 ? DType::kBFloat16 : DType::kFloat16);
    const Dist d = static_cast<Dist>(gen() % 3);
    const float scale = std::ldexp(1.0f, static_cast<int>(gen() % 40) - 20);
    std::vector<float> v = random_values(R * C, gen(), d, t == DType::kFloat16 ? 1.0f : scale, t);
    if (gen() % 4 == 0)  // a zero block
      for (int i = 0; i < 16; ++i) v[static_cast<size_t>(i)] = 0.0f;
    const HostTensor x = make_matrix(t, R, C, v);
    QuantizeConfig cfg = make_cfg(mode, columnwise, tile16);
    cfg.seed = gen();
    cfg.offset = gen() % 1000;
    if (mode >= 5 && gen() % 2) cfg.rht_columnwise = columnwise;
    AmaxSpec a;
    const int scope = static_cast<int>(gen() % 3);
    if (scope == 1 && !columnwise && !tile16) {
      a.scope = AmaxScope::kRow;
    } else if (scope == 2 && R % 16 == 0) {
      a.scope = AmaxScope::kGroup;
      const int e = 1 + static_cast<int>(gen() % 5);
      int32_t o = 0;
      for (int g = 0; g < e; ++g) {
        o += 16 * static_cast<int32_t>(gen() % (R / 16 + 1));
        a.offsets.push_back(o > R ? static_cast<int32_t>(R) : o);
        o = a.offsets.back();
      }
    }
    a.amax = amax_host(x, a.scope, a.offsets);
    if (gen() % 3 == 0)
      for (float& m : a.amax) m = m * 1.75f;  // amax not equal to the data's
    expect_same_quantized(quantize_host(x, a, cfg), quantize_device(x, a, cfg), cfg,
                          "case " + std::to_string(it) + " mode " + std::to_string(mode) +
                              " layout " + std::to_string(layout) + " " + std::to_string(R) + "x" +
                              std::to_string(C) + " " + dtype_name(t));
    ++cases;
    if (::testing::Test::HasFailure()) break;  // one report is enough
  }
  EXPECT_EQ(cases, 2000);
}

// Same seed: identical codes on CPU and GPU and across GPU reruns; another seed: different.
TEST(CudaQuantizeEdge, StochasticRoundingReproducible) {
  F46_SKIP_WITHOUT_CUDA();
  const HostTensor x = random_matrix(DType::kBFloat16, 64, 128, 8, Dist::kGaussian, 1.0f);
  const AmaxSpec a = tensor_amax(amax_host(x, AmaxScope::kTensor)[0]);
  QuantizeConfig cfg = make_cfg(6, true, false);
  cfg.seed = 1234;
  const Quantized g1 = quantize_device(x, a, cfg), g2 = quantize_device(x, a, cfg);
  expect_same_quantized(quantize_host(x, a, cfg), g1, cfg, "SR cpu vs gpu");
  expect_same_quantized(g1, g2, cfg, "SR rerun");
  cfg.seed = 1235;
  const Quantized g3 = quantize_device(x, a, cfg);
  EXPECT_NE(first_byte_diff(g1.codes, g3.codes), -1) << "another seed must change some codes";
  EXPECT_NE(first_byte_diff(g1.codes_t, g3.codes_t), -1);
}

TEST(CudaQuantizeEdge, RejectsStochasticWithErrorRule) {
  F46_SKIP_WITHOUT_CUDA();
  const HostTensor x = random_matrix(DType::kBFloat16, 16, 32, 9);
  QuantizeConfig cfg;
  cfg.rounding = Rounding::kStochastic;
  EXPECT_THROW(quantize_device(x, tensor_amax(1.0f), cfg), Error);
}

// Offsets that the CPU would reject (decreasing, negative, past R) must not crash the GPU: the
// kernels clamp them (no host read). Outputs are unspecified, so only errors are checked.
TEST(CudaQuantizeEdge, InvalidOffsetsAreClamped) {
  F46_SKIP_WITHOUT_CUDA();
  const HostTensor x = random_matrix(DType::kBFloat16, 64, 64, 10);
  AmaxSpec a;
  a.scope = AmaxScope::kGroup;
  a.offsets = {48, 16, -5, 100000};
  a.amax = {1.0f, 2.0f, 3.0f, 4.0f};
  QuantizeConfig cfg = make_cfg(0, true, false);
  quantize_device(x, a, cfg);
  a.offsets = {40, 100000, 7, 9};  // 16-row blocks straddling two groups
  quantize_device(x, a, cfg);
  const HostTensor y = random_matrix(DType::kBFloat16, 512, 512, 11);  // the lean kernel
  quantize_device(y, a, make_cfg(0, false, false));
  (void)amax_device(x, AmaxScope::kGroup, a.offsets);
  (void)amax_device(x, AmaxScope::kGroup, a.offsets, true);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(CudaAmax, TensorRowsGroupsVsCpu) {
  F46_SKIP_WITHOUT_CUDA();
  for (DType t : {DType::kBFloat16, DType::kFloat16, DType::kFloat32}) {
    for (auto [R, C] : {std::pair<int64_t, int64_t>{1, 5}, {37, 100}, {128, 2064}, {4096, 48}}) {
      HostTensor x = random_matrix(t, R, C, 11 + R + C, Dist::kStudentT, 2.0f);
      const std::string what =
          std::string(dtype_name(t)) + " " + std::to_string(R) + "x" + std::to_string(C);
      EXPECT_EQ(
          first_float_diff(amax_host(x, AmaxScope::kTensor), amax_device(x, AmaxScope::kTensor)),
          -1)
          << what;
      EXPECT_EQ(first_float_diff(amax_host(x, AmaxScope::kRow), amax_device(x, AmaxScope::kRow)),
                -1)
          << what;
      const int32_t r = static_cast<int32_t>(R);
      const std::vector<int32_t> offs = {0, r / 3, r / 3, r / 2, r - r / 5};
      EXPECT_EQ(first_float_diff(amax_host(x, AmaxScope::kGroup, offs),
                                 amax_device(x, AmaxScope::kGroup, offs)),
                -1)
          << what;
      if (R % 16 == 0) {
        const int32_t r16 = (r / 32) * 16;
        const std::vector<int32_t> o16 = {r16, r16, r};
        EXPECT_EQ(first_float_diff(amax_host(x, AmaxScope::kTensor, {}, true),
                                   amax_device(x, AmaxScope::kTensor, {}, true)),
                  -1)
            << what;
        EXPECT_EQ(first_float_diff(amax_host(x, AmaxScope::kGroup, o16, true),
                                   amax_device(x, AmaxScope::kGroup, o16, true)),
                  -1)
            << what;
      }
    }
  }
}

TEST(CudaAmax, NaNPropagates) {
  F46_SKIP_WITHOUT_CUDA();
  std::vector<float> v = random_values(64 * 32, 12);
  v[100] = std::numeric_limits<float>::quiet_NaN();         // row 3, group 0
  v[40 * 32 + 1] = std::numeric_limits<float>::infinity();  // row 40, group 1
  const HostTensor x = make_matrix(DType::kFloat32, 64, 32, v);
  const std::vector<float> t = amax_device(x, AmaxScope::kTensor);
  EXPECT_TRUE(std::isnan(t[0]));
  const std::vector<float> rows = amax_device(x, AmaxScope::kRow);
  EXPECT_TRUE(std::isnan(rows[3]));
  EXPECT_TRUE(std::isinf(rows[40]));
  EXPECT_TRUE(std::isfinite(rows[4]));
  const std::vector<float> g = amax_device(x, AmaxScope::kGroup, {32, 64});
  EXPECT_TRUE(std::isnan(g[0]));
  EXPECT_TRUE(std::isinf(g[1]));
  EXPECT_EQ(first_float_diff(g, amax_host(x, AmaxScope::kGroup, {32, 64})), -1);
}

// quantize (group scope) captured in a CUDA graph and replayed gives the eager bytes: no host
// synchronisation or allocation happens inside.
TEST(CudaQuantizeEdge, GraphCapturable) {
  F46_SKIP_WITHOUT_CUDA();
  const HostTensor x = random_matrix(DType::kBFloat16, 128, 256, 13);
  AmaxSpec a;
  a.scope = AmaxScope::kGroup;
  a.offsets = {32, 32, 112};
  a.amax = amax_host(x, AmaxScope::kGroup, a.offsets);
  const QuantizeConfig cfg = make_cfg(0, true, false);
  const Quantized want = quantize_host(x, a, cfg);

  HostTensor codes(DType::kUInt8, {128, 128}), scales(DType::kUInt8, {128, 16});
  HostTensor codes_t(DType::kUInt8, {256, 64}), scales_t(DType::kUInt8, {256, 8});
  HostTensor amax_out(DType::kFloat32, {3});
  DeviceTensor dx(x), dc(codes), ds(scales), dct(codes_t), dst(scales_t), dam(amax_out);
  DeviceGlobalAmax g(a);
  GlobalAmax ga = g.get();
  ga.amax = dam.view();  // amax computed inside the graph
  QuantizedOutputs out;
  out.codes = dc.view();
  out.scales = ds.view();
  out.codes_t = dct.view();
  out.scales_t = dst.view();
  cudaStream_t stream;
  F46_ASSERT_CUDA(cudaStreamCreate(&stream));
  Context ctx;
  ctx.cuda_stream = stream;
  AmaxConfig acfg;
  acfg.scope = AmaxScope::kGroup;
  acfg.offsets = ga.offsets;
  cudaGraph_t graph;
  F46_ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  amax(dx.view(), acfg, dam.view(), ctx);
  quantize(dx.view(), ga, cfg, out, ctx);
  F46_ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  F46_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  F46_ASSERT_CUDA(cudaGraphLaunch(exec, stream));
  F46_ASSERT_CUDA(cudaStreamSynchronize(stream));
  Quantized got;
  got.codes = dc.to_host(codes);
  got.scales = ds.to_host(scales);
  got.codes_t = dct.to_host(codes_t);
  got.scales_t = dst.to_host(scales_t);
  expect_same_quantized(want, got, cfg, "graph replay");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace f46::test
