// CUDA quantize/dequantize vs the CPU reference, bitwise: every mode x shapes x input dtypes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/cuda_test_util.h"

namespace f46::test {
namespace {

struct Mode {
  std::string name;
  QuantizeConfig cfg;
  AmaxScope scope = AmaxScope::kTensor;
};

QuantizeConfig base(Rule rule, float bound, Block block = Block::k1x16, bool columnwise = false) {
  QuantizeConfig c;
  c.rule = rule;
  c.scale_bound = bound;
  c.block = block;
  c.columnwise = columnwise;
  return c;
}
QuantizeConfig gradient(bool sr, bool rht_col, bool columnwise = true) {
  QuantizeConfig c = base(Rule::kAll6, 448.0f, Block::k1x16, columnwise);
  c.gradient = true;
  if (sr) {
    c.rounding = Rounding::kStochastic;
    c.seed = 0x1234567890ABCDEFull;
    c.offset = 77;
  }
  c.rht_columnwise = rht_col;
  return c;
}

std::vector<Mode> all_modes() {
  std::vector<Mode> m;
  m.push_back({"mae256", base(Rule::kMAE, 256.0f)});
  m.push_back({"mae448", base(Rule::kMAE, 448.0f)});
  m.push_back({"mse256", base(Rule::kMSE, 256.0f)});
  m.push_back({"absmax256", base(Rule::kAbsMax, 256.0f)});
  m.push_back({"all6_448", base(Rule::kAll6, 448.0f)});
  m.push_back({"all4_256", base(Rule::kAll4, 256.0f)});
  m.push_back({"mae_rowcol", base(Rule::kMAE, 256.0f, Block::k1x16, true)});
  m.push_back({"mse_rowcol", base(Rule::kMSE, 448.0f, Block::k1x16, true)});
  m.push_back({"mae16x16", base(Rule::kMAE, 256.0f, Block::k16x16)});
  m.push_back({"mse16x16_rowcol", base(Rule::kMSE, 256.0f, Block::k16x16, true)});
  m.push_back({"absmax16x16", base(Rule::kAbsMax, 448.0f, Block::k16x16)});
  m.push_back({"all4_16x16_col", base(Rule::kAll4, 256.0f, Block::k16x16, true)});
  m.push_back({"grad_rne", gradient(false, false)});
  m.push_back({"grad_sr", gradient(true, false)});
  m.push_back({"grad_sr_rhtcol", gradient(true, true)});
  m.push_back({"grad_rne_rows", gradient(false, false, false)});
  {
    QuantizeConfig c = base(Rule::kAll4, 256.0f);
    c.rounding = Rounding::kStochastic;
    c.seed = 99;
    c.rht_rowwise = true;
    m.push_back({"all4_sr_rhtrow", c});
  }
  {
    QuantizeConfig c = base(Rule::kMAE, 256.0f, Block::k1x16, true);
    c.rht_rowwise = true;
    c.rht_columnwise = true;
    m.push_back({"mae_rht_both", c});
  }
  {
    QuantizeConfig c = base(Rule::kAll6, 256.0f, Block::k1x16, true);
    c.rowwise = false;
    m.push_back({"all6_colonly", c});
  }
  m.push_back({"mae_rowscope", base(Rule::kMAE, 256.0f), AmaxScope::kRow});
  m.push_back({"mse_rowscope", base(Rule::kMSE, 448.0f), AmaxScope::kRow});
  m.push_back(
      {"mae_group_rowcol", base(Rule::kMAE, 256.0f, Block::k1x16, true), AmaxScope::kGroup});
  m.push_back({"mae_group16x16", base(Rule::kMAE, 256.0f, Block::k16x16), AmaxScope::kGroup});
  m.push_back({"grad_group_sr", gradient(true, true), AmaxScope::kGroup});
  return m;
}

bool needs_rows16(const QuantizeConfig& c) { return c.columnwise || c.block == Block::k16x16; }

// Offsets (multiples of 16) splitting R rows into 3 groups, one empty, the last past R - 16.
std::vector<int32_t> group_offsets(int64_t R) {
  const int32_t a = static_cast<int32_t>((R / 32) * 16);
  return {a, a, static_cast<int32_t>(R >= 32 ? R - 16 : R)};
}

// Global amaxes for x as the GEMM path would compute them (after RHT for RHT outputs).
AmaxSpec amax_for(const HostTensor& x, const Mode& m) {
  AmaxSpec a;
  a.scope = m.scope;
  if (m.scope == AmaxScope::kGroup) a.offsets = group_offsets(x.size(0));
  a.amax = amax_host(x, m.scope, a.offsets);
  if (m.cfg.columnwise && m.cfg.rht_columnwise && x.size(0) % 16 == 0)
    a.amax_columnwise = amax_host(
        x, m.scope == AmaxScope::kGroup ? AmaxScope::kGroup : AmaxScope::kTensor, a.offsets, true);
  return a;
}

using Param = std::tuple<int, std::tuple<int64_t, int64_t>, DType>;

class CudaQuantizeVsCpu : public ::testing::TestWithParam<Param> {};

TEST_P(CudaQuantizeVsCpu, BitwiseEqual) {
  F46_SKIP_WITHOUT_CUDA();
  const Mode mode = all_modes()[static_cast<size_t>(std::get<0>(GetParam()))];
  const auto [R, C] = std::get<1>(GetParam());
  const DType t = std::get<2>(GetParam());
  const HostTensor x = random_matrix(t, R, C, 1000 + R * 7 + C, Dist::kStudentT, 3.0f);
  const AmaxSpec a = amax_for(x, mode);
  if (needs_rows16(mode.cfg) && R % 16 != 0) {  // both backends must reject it
    EXPECT_THROW(quantize_host(x, a, mode.cfg), Error);
    EXPECT_THROW(quantize_device(x, a, mode.cfg), Error);
    return;
  }
  const Quantized cpu = quantize_host(x, a, mode.cfg);
  const Quantized gpu = quantize_device(x, a, mode.cfg);
  const std::string what = mode.name + " " + std::to_string(R) + "x" + std::to_string(C);
  expect_same_quantized(cpu, gpu, mode.cfg, what);
  if (mode.cfg.rowwise) {
    for (DType o : {DType::kBFloat16, DType::kFloat32, DType::kFloat16}) {
      const HostTensor dh = dequantize_host(cpu.codes, cpu.scales, a, mode.cfg.scale_bound, o);
      const HostTensor dd = dequantize_device(cpu.codes, cpu.scales, a, mode.cfg.scale_bound, o);
      EXPECT_EQ(first_byte_diff(dh, dd), -1) << what << ": dequantize to " << dtype_name(o);
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto [R, C] = std::get<1>(info.param);
  return all_modes()[static_cast<size_t>(std::get<0>(info.param))].name + "_" + std::to_string(R) +
         "x" + std::to_string(C) + "_" + dtype_name(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    ModesShapes, CudaQuantizeVsCpu,
    ::testing::Combine(::testing::Range(0, static_cast<int>(all_modes().size())),
                       ::testing::Values(std::tuple<int64_t, int64_t>{1, 16},
                                         std::tuple<int64_t, int64_t>{7, 48},
                                         std::tuple<int64_t, int64_t>{16, 16},
                                         std::tuple<int64_t, int64_t>{48, 80},
                                         std::tuple<int64_t, int64_t>{80, 208},
                                         std::tuple<int64_t, int64_t>{129, 160},
                                         std::tuple<int64_t, int64_t>{256, 1040},
                                         std::tuple<int64_t, int64_t>{64, 64},
                                         std::tuple<int64_t, int64_t>{144, 192}),
                       ::testing::Values(DType::kBFloat16, DType::kFloat16, DType::kFloat32)),
    param_name);

// A columnwise-only call blocks along the rows, so any column count is valid (src/quantize.cpp):
// 16-byte copies where the row is whole chunks (200 bf16/fp32), element loads elsewhere (203, 8
// bf16 = one half chunk); a column tail inside a 64-column unit; per tensor and per group.
TEST(CudaQuantizeColumnwiseOnly, AnyColumnCountEqualsCpu) {
  F46_SKIP_WITHOUT_CUDA();
  QuantizeConfig all6 = base(Rule::kAll6, 256.0f, Block::k1x16, true);
  all6.rowwise = false;
  QuantizeConfig grad = gradient(true, true);
  grad.rowwise = false;
  QuantizeConfig mae = base(Rule::kMAE, 256.0f, Block::k1x16, true);
  mae.rowwise = false;
  const std::vector<Mode> modes = {{"all6_colonly", all6},
                                   {"grad_sr_rht_colonly", grad},
                                   {"mae_colonly_group", mae, AmaxScope::kGroup}};
  for (const Mode& mode : modes)
    for (DType t : {DType::kBFloat16, DType::kFloat32})
      for (const auto& [R, C] :
           std::vector<std::pair<int64_t, int64_t>>{{48, 200}, {64, 203}, {32, 8}}) {
        const HostTensor x = random_matrix(t, R, C, 77 + C, Dist::kStudentT, 3.0f);
        const AmaxSpec a = amax_for(x, mode);
        expect_same_quantized(
            quantize_host(x, a, mode.cfg), quantize_device(x, a, mode.cfg), mode.cfg,
            mode.name + " " + std::to_string(R) + "x" + std::to_string(C) + " " + dtype_name(t));
      }
}

// A large tensor (many CTAs, partial tiles on both dims) in the main modes.
TEST(CudaQuantizeLarge, BitwiseEqual) {
  F46_SKIP_WITHOUT_CUDA();
  const HostTensor x = random_matrix(DType::kBFloat16, 1040, 2128, 5, Dist::kGaussian, 0.5f);
  for (int i : {0, 2, 6, 8, 9, 14, 21}) {
    const Mode mode = all_modes()[static_cast<size_t>(i)];
    const AmaxSpec a = amax_for(x, mode);
    expect_same_quantized(quantize_host(x, a, mode.cfg), quantize_device(x, a, mode.cfg), mode.cfg,
                          "large " + mode.name);
  }
}

// Row + col in bf16 on a wide tensor (columns a multiple of 64, 1040 rows: 16 stacks of 64 rows
// and one band; the shapes of an earlier lean row+col kernel, which passed it on an H200 while
// it was dispatched): contiguous and padded rows of x, the columnwise output with its own amax
// (larger and smaller than the data's), every rounding-to-nearest rule, columnwise only.
TEST(CudaQuantizeLarge, RowColWide) {
  F46_SKIP_WITHOUT_CUDA();
  for (int64_t stride : {2112, 2120}) {
    const HostTensor x =
        random_matrix(DType::kBFloat16, 1040, 2112, 9, Dist::kStudentT, 3.0f, stride);
    std::vector<Mode> modes;
    for (int i : {6, 7, 12, 18}) modes.push_back(all_modes()[static_cast<size_t>(i)]);
    modes.push_back({"absmax_rowcol", base(Rule::kAbsMax, 448.0f, Block::k1x16, true)});
    modes.push_back({"all4_rowcol", base(Rule::kAll4, 256.0f, Block::k1x16, true)});
    modes.push_back({"all6_rowcol", base(Rule::kAll6, 448.0f, Block::k1x16, true)});
    for (const Mode& mode : modes) {
      const std::string what = "rowcol wide " + mode.name + " stride " + std::to_string(stride);
      AmaxSpec a = amax_for(x, mode);
      expect_same_quantized(quantize_host(x, a, mode.cfg), quantize_device(x, a, mode.cfg),
                            mode.cfg, what);
      for (float f : {1.75f, 0.5f}) {
        a.amax_columnwise = {a.amax[0] * f};
        expect_same_quantized(quantize_host(x, a, mode.cfg), quantize_device(x, a, mode.cfg),
                              mode.cfg, what + " amax_t x" + std::to_string(f));
      }
    }
  }
  // Group scope (the wgrad operands of the grouped quantized backward): uneven groups, empty
  // ones, rows past the last offset (amax 0), a group whose amax is NaN, and a columnwise amax
  // of its own per group.
  std::vector<float> v = random_values(1040 * 2112, 21, Dist::kStudentT, 3.0f, DType::kBFloat16);
  v[300 * 2112 + 77] = std::numeric_limits<float>::quiet_NaN();  // group 3: rows 160..495
  const HostTensor x = make_matrix(DType::kBFloat16, 1040, 2112, v);
  AmaxSpec a;
  a.scope = AmaxScope::kGroup;
  a.offsets = {0, 160, 160, 496, 1008};
  a.amax = amax_host(x, AmaxScope::kGroup, a.offsets);
  for (int i : {21, 7, 12}) {
    Mode mode = all_modes()[static_cast<size_t>(i)];
    const std::string what = "rowcol wide group " + mode.name;
    a.amax_columnwise.clear();
    expect_same_quantized(quantize_host(x, a, mode.cfg), quantize_device(x, a, mode.cfg), mode.cfg,
                          what);
    for (float f : a.amax) a.amax_columnwise.push_back(f * 1.5f);
    expect_same_quantized(quantize_host(x, a, mode.cfg), quantize_device(x, a, mode.cfg), mode.cfg,
                          what + " own amax_t");
  }
}

// Columnwise only, group scope, bf16, 64-column units (quantize_cols_group_kernel, the wgrad
// operands): uneven groups (bands of 16 rows that do not align with the 64-row runs), an empty
// group, rows past the last offset (amax 0), a NaN group, a columnwise amax of its own per group,
// contiguous and padded rows of x, the 4/6 rules and the gradient mode rounded to nearest.
TEST(CudaQuantizeLarge, ColumnwiseOnlyGroupWide) {
  F46_SKIP_WITHOUT_CUDA();
  std::vector<Mode> modes;
  for (Rule r : {Rule::kMAE, Rule::kMSE, Rule::kAll6, Rule::kAbsMax}) {
    QuantizeConfig c = base(r, r == Rule::kMSE ? 448.0f : 256.0f, Block::k1x16, true);
    c.rowwise = false;
    modes.push_back({"colonly_group rule " + std::to_string(static_cast<int>(r)), c});
  }
  modes.push_back({"colonly_group grad_rne", gradient(false, false)});
  modes.back().cfg.rowwise = false;
  for (int64_t stride : {1088, 1096}) {
    std::vector<float> v = random_values(1040 * 1088, 23, Dist::kStudentT, 3.0f, DType::kBFloat16);
    v[300 * 1088 + 77] = std::numeric_limits<float>::quiet_NaN();  // group 3: rows 176..495
    const HostTensor x = make_matrix(DType::kBFloat16, 1040, 1088, v, stride);
    AmaxSpec a;
    a.scope = AmaxScope::kGroup;
    a.offsets = {0, 176, 176, 496, 1008};
    a.amax = amax_host(x, AmaxScope::kGroup, a.offsets);
    for (const Mode& mode : modes) {
      const std::string what = mode.name + " stride " + std::to_string(stride);
      a.amax_columnwise.clear();
      expect_same_quantized(quantize_host(x, a, mode.cfg), quantize_device(x, a, mode.cfg),
                            mode.cfg, what);
      for (float f : a.amax) a.amax_columnwise.push_back(f * 1.5f);
      expect_same_quantized(quantize_host(x, a, mode.cfg), quantize_device(x, a, mode.cfg),
                            mode.cfg, what + " own amax_t");
    }
  }
}

// 16x16 rowwise in bf16 on a wide tensor (written for a lean 16x16 lab kernel, docs/design.md):
// contiguous and padded rows of x, every rule, and group scope with uneven and empty groups,
// rows past the last offset and a NaN group.
TEST(CudaQuantizeLarge, Tile16Wide) {
  F46_SKIP_WITHOUT_CUDA();
  std::vector<Mode> modes;
  for (int i : {8, 10}) modes.push_back(all_modes()[static_cast<size_t>(i)]);
  modes.push_back({"mse16x16", base(Rule::kMSE, 256.0f, Block::k16x16)});
  modes.push_back({"all6_16x16", base(Rule::kAll6, 448.0f, Block::k16x16)});
  modes.push_back({"all4_16x16", base(Rule::kAll4, 256.0f, Block::k16x16)});
  for (int64_t stride : {2112, 2120}) {
    std::vector<float> v = random_values(1040 * 2112, 23, Dist::kStudentT, 3.0f, DType::kBFloat16);
    const float finite_amax = host_amax(v);
    v[700 * 2112 + 5] = std::numeric_limits<float>::quiet_NaN();  // group 3: rows 496..1007
    const HostTensor x = make_matrix(DType::kBFloat16, 1040, 2112, v, stride);
    for (const Mode& mode : modes) {
      const std::string what = "16x16 wide " + mode.name + " stride " + std::to_string(stride);
      AmaxSpec a;
      a.amax = {finite_amax};  // the NaN's tile gets NaN codes, the others finite ones
      expect_same_quantized(quantize_host(x, a, mode.cfg), quantize_device(x, a, mode.cfg),
                            mode.cfg, what);
      a.scope = AmaxScope::kGroup;
      a.offsets = {0, 160, 160, 496, 1008};
      a.amax = amax_host(x, AmaxScope::kGroup, a.offsets);
      expect_same_quantized(quantize_host(x, a, mode.cfg), quantize_device(x, a, mode.cfg),
                            mode.cfg, what + " group");
    }
  }
}

// The rowwise kernel over many steps per CTA (ring wrap-around, cursors carried across rows,
// a group amax changing inside a CTA's range): tall tensors, rowwise-only modes, uneven groups
// (some empty, the last ending before the last row), contiguous and strided rows, 2- and 4-byte
// inputs.
std::vector<int32_t> uneven_offsets(int64_t R, int groups) {
  std::vector<int32_t> offs;
  uint32_t h = 12345u;
  int64_t end = 0;
  for (int g = 0; g < groups; ++g) {
    h = h * 1664525u + 1013904223u;
    const int64_t size = (h >> 28) < 3 ? 0 : static_cast<int64_t>((h >> 8) % (2 * R / groups));
    end = std::min<int64_t>(end + size, R - 3);
    offs.push_back(static_cast<int32_t>(end));
  }
  return offs;
}

void expect_rows_kernel_equal(DType t, int64_t rows, int64_t cols, int64_t stride) {
  const HostTensor x = random_matrix(t, rows, cols, 31, Dist::kStudentT, 3.0f, stride);
  for (int i : {0, 2, 15, 16, 19, 20, -1}) {
    const Mode mode = i >= 0 ? all_modes()[static_cast<size_t>(i)]
                             : Mode{"mse_group_rows", base(Rule::kMSE, 448.0f), AmaxScope::kGroup};
    AmaxSpec a;
    a.scope = mode.scope;
    if (a.scope == AmaxScope::kGroup) a.offsets = uneven_offsets(rows, 37);
    a.amax = amax_host(x, a.scope, a.offsets);
    const std::string what = "rows " + mode.name + " " + std::to_string(rows) + "x" +
                             std::to_string(cols) + " stride " + std::to_string(stride) + " " +
                             dtype_name(t);
    expect_same_quantized(quantize_host(x, a, mode.cfg), quantize_device(x, a, mode.cfg), mode.cfg,
                          what);
  }
}

TEST(CudaQuantizeLarge, RowsKernelManySteps) {  // ~8 steps per CTA, ring of 4
  F46_SKIP_WITHOUT_CUDA();
  expect_rows_kernel_equal(DType::kBFloat16, 2051, 4096, 4096);
}
TEST(CudaQuantizeLarge, RowsKernelFloat32) {  // ring of 2
  F46_SKIP_WITHOUT_CUDA();
  expect_rows_kernel_equal(DType::kFloat32, 1029, 2048, 2048);
}
TEST(CudaQuantizeLarge, RowsKernelStrided) {  // not contiguous: one block per lane
  F46_SKIP_WITHOUT_CUDA();
  expect_rows_kernel_equal(DType::kBFloat16, 1031, 2048, 2056);
}

// Rows with padding (row stride > cols) and an odd row stride (no vector loads).
TEST(CudaQuantizeStrided, BitwiseEqual) {
  F46_SKIP_WITHOUT_CUDA();
  for (int64_t stride : {96, 83}) {
    const HostTensor x = random_matrix(DType::kBFloat16, 32, 64, 17, Dist::kGaussian, 1.0f, stride);
    for (int i : {0, 6, 8, 13}) {
      const Mode mode = all_modes()[static_cast<size_t>(i)];
      const AmaxSpec a = amax_for(x, mode);
      expect_same_quantized(quantize_host(x, a, mode.cfg), quantize_device(x, a, mode.cfg),
                            mode.cfg, "strided " + std::to_string(stride) + " " + mode.name);
    }
  }
}

}  // namespace
}  // namespace f46::test
