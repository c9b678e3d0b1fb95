// Every argument check of quantize / dequantize / amax throws f46::Error naming the argument.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "test_quantize_util.h"

namespace f46 {
namespace {

using test::HostTensor;

// Runs fn, expects an f46::Error whose message contains `needle`.
void expect_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown, expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message '" << e.what() << "' does not mention '" << needle << "'";
  }
}

// A valid quantize call on (32, 64) bf16 that each test breaks in one place.
struct QuantizeCase {
  HostTensor x = test::random_matrix(DType::kBFloat16, 32, 64, 1);
  HostTensor amax = test::float_tensor({4.0f});
  HostTensor offs = test::int_tensor({16, 32});
  HostTensor gamax = test::float_tensor({4.0f, 4.0f});
  HostTensor codes{DType::kUInt8, {32, 32}}, scales{DType::kUInt8, {32, 4}};
  HostTensor codes_t{DType::kUInt8, {64, 16}}, scales_t{DType::kUInt8, {64, 2}};
  GlobalAmax g;
  QuantizeConfig cfg;
  QuantizedOutputs out;
  QuantizeCase() {
    g.amax = amax.view();
    out.codes = codes.view();
    out.scales = scales.view();
    out.codes_t = codes_t.view();
    out.scales_t = scales_t.view();
  }
  void run() { quantize(x.view(), g, cfg, out); }
};

TEST(Validation, ValidCallsPass) {
  QuantizeCase c;
  EXPECT_NO_THROW(c.run());
  c.cfg.columnwise = true;
  c.cfg.block = Block::k16x16;
  EXPECT_NO_THROW(c.run());
  c.g.scope = AmaxScope::kGroup;
  c.g.amax = c.gamax.view();
  c.g.offsets = c.offs.view();
  EXPECT_NO_THROW(c.run());
}

TEST(Validation, QuantizeInput) {
  {
    QuantizeCase c;
    HostTensor bad(DType::kInt32, {32, 64});
    c.x = bad;
    expect_error([&] { c.run(); }, "x must be");
  }
  {
    QuantizeCase c;
    c.x = test::random_matrix(DType::kFloat32, 32, 40, 2);
    expect_error([&] { c.run(); }, "x columns must be a multiple of 16");
    // A columnwise-only output blocks along the rows: any column count is fine.
    HostTensor ct(DType::kUInt8, {40, 16}), st(DType::kUInt8, {40, 2});
    c.out.codes_t = ct.view();
    c.out.scales_t = st.view();
    c.cfg.rowwise = false;
    c.cfg.columnwise = true;
    EXPECT_NO_THROW(c.run());
    c.cfg.block = Block::k16x16;
    expect_error([&] { c.run(); }, "x columns must be a multiple of 16");
  }
  {
    QuantizeCase c;
    HostTensor x3(DType::kFloat32, {2, 16, 64});
    c.x = x3;
    expect_error([&] { c.run(); }, "x must be 2-D");
  }
  {
    QuantizeCase c;
    c.x.view().strides[1] = 2;
    c.x.view().shape[1] = 16;
    expect_error([&] { c.run(); }, "x must have a contiguous last dim");
  }
  {
    QuantizeCase c;
    c.x = test::random_matrix(DType::kFloat32, 24, 64, 2);
    c.cfg.columnwise = true;
    expect_error([&] { c.run(); }, "cfg.columnwise needs x rows % 16 == 0");
    c.cfg.columnwise = false;
    c.cfg.block = Block::k16x16;
    expect_error([&] { c.run(); }, "cfg.block 16x16 needs x rows % 16 == 0");
  }
}

TEST(Validation, QuantizeConfig) {
  QuantizeCase c;
  c.cfg.scale_bound = 300.0f;
  expect_error([&] { c.run(); }, "cfg.scale_bound must be 256 or 448, got 300");
  c.cfg = QuantizeConfig{};
  c.cfg.gradient = true;
  c.cfg.rule = Rule::kAll6;
  expect_error([&] { c.run(); }, "cfg.gradient needs cfg.scale_bound 448");
  c.cfg.scale_bound = 448.0f;
  c.cfg.rule = Rule::kMSE;
  expect_error([&] { c.run(); }, "cfg.gradient needs cfg.rule all6, got mse");
  c.cfg = QuantizeConfig{};
  c.cfg.rounding = Rounding::kStochastic;
  expect_error([&] { c.run(); }, "cfg.rounding stochastic needs cfg.rule all6 or all4");
  c.cfg.rule = Rule::kAbsMax;
  expect_error([&] { c.run(); }, "got rule abs_max");
  c.cfg.rule = Rule::kAll4;
  EXPECT_NO_THROW(c.run());
  c.cfg = QuantizeConfig{};
  c.cfg.rowwise = false;
  expect_error([&] { c.run(); }, "cfg.rowwise and cfg.columnwise are both false");
}

TEST(Validation, QuantizeAmax) {
  {
    QuantizeCase c;
    HostTensor two = test::float_tensor({1.0f, 2.0f});
    c.g.amax = two.view();
    expect_error([&] { c.run(); }, "amax.amax must have shape [1]");
    c.g.scope = AmaxScope::kRow;
    expect_error([&] { c.run(); }, "amax.amax must have shape [32]");
  }
  {
    QuantizeCase c;
    HostTensor wrong(DType::kBFloat16, {1});
    c.g.amax = wrong.view();
    expect_error([&] { c.run(); }, "amax.amax must be float32");
  }
  {
    QuantizeCase c;
    c.g.amax = TensorView{};
    expect_error([&] { c.run(); }, "amax.amax is required");
  }
  {
    QuantizeCase c;
    c.g.scope = AmaxScope::kGroup;
    c.g.amax = c.gamax.view();
    expect_error([&] { c.run(); }, "amax.offsets is required");
    HostTensor dec = test::int_tensor({20, 10});
    c.g.offsets = dec.view();
    expect_error([&] { c.run(); }, "amax.offsets must be non-decreasing");
    HostTensor over = test::int_tensor({16, 40});
    c.g.offsets = over.view();
    expect_error([&] { c.run(); }, "amax.offsets[-1] = 40 exceeds the row count 32");
    HostTensor odd = test::int_tensor({10, 32});
    c.g.offsets = odd.view();
    EXPECT_NO_THROW(c.run());  // 1x16 rowwise: any offsets
    c.cfg.columnwise = true;
    expect_error([&] { c.run(); }, "amax.offsets[0] = 10 must be a multiple of 16");
    c.cfg.columnwise = false;
    c.cfg.block = Block::k16x16;
    expect_error([&] { c.run(); }, "(cfg.block 16x16)");
    HostTensor three = test::int_tensor({8, 16, 32});
    c.cfg.block = Block::k1x16;
    c.g.offsets = three.view();
    expect_error([&] { c.run(); }, "amax.amax must have shape [3]");
    HostTensor f(DType::kFloat32, {2});
    c.g.offsets = f.view();
    expect_error([&] { c.run(); }, "amax.offsets must be int32");
  }
  {
    QuantizeCase c;
    HostTensor rows = test::float_tensor(std::vector<float>(32, 1.0f));
    c.g.scope = AmaxScope::kRow;
    c.g.amax = rows.view();
    EXPECT_NO_THROW(c.run());
    c.cfg.columnwise = true;
    expect_error([&] { c.run(); }, "amax.scope row cannot be combined with cfg.columnwise");
    c.cfg.columnwise = false;
    c.cfg.block = Block::k16x16;
    expect_error([&] { c.run(); }, "amax.scope row needs cfg.block 1x16");
  }
  {
    QuantizeCase c;
    HostTensor two = test::float_tensor({1.0f, 2.0f});
    c.g.amax_columnwise = two.view();
    expect_error([&] { c.run(); }, "amax.amax_columnwise must have shape [1]");
  }
}

TEST(Validation, QuantizeOutputs) {
  {
    QuantizeCase c;
    HostTensor small(DType::kUInt8, {32, 16});
    c.out.codes = small.view();
    expect_error([&] { c.run(); }, "out.codes must have shape [32, 32]");
  }
  {
    QuantizeCase c;
    c.out.scales = TensorView{};
    expect_error([&] { c.run(); }, "out.scales is required");
  }
  {
    QuantizeCase c;
    HostTensor f(DType::kFloat32, {32, 4});
    c.out.scales = f.view();
    expect_error([&] { c.run(); }, "out.scales must be uint8");
  }
  {
    QuantizeCase c;
    c.cfg.columnwise = true;
    HostTensor small(DType::kUInt8, {64, 4});
    c.out.scales_t = small.view();
    expect_error([&] { c.run(); }, "out.scales_t must have shape [64, 2]");
  }
  {
    QuantizeCase c;
    c.out.scales = c.codes.view();  // (32, 32) != (32, 4) -> shape error first; alias instead:
    c.out.scales.shape[1] = 4;
    c.out.scales.strides[0] = 4;
    expect_error([&] { c.run(); }, "out.codes and out.scales must not overlap");
  }
  {
    QuantizeCase c;
    TensorView alias = c.x.view();  // output placed over the input
    alias.dtype = DType::kUInt8;
    alias.shape[1] = 32;
    alias.strides[0] = 32;
    c.out.codes = alias;
    expect_error([&] { c.run(); }, "out.codes and x must not overlap");
  }
  {
    QuantizeCase c;
    c.out.codes.device = Device::kCUDA;
    expect_error([&] { c.run(); }, "out.codes must be on the device of x");
  }
  {
    QuantizeCase c;
    c.g.amax.device = Device::kCUDA;
    expect_error([&] { c.run(); }, "amax.amax must be on the device of x");
  }
}

TEST(Validation, Dequantize) {
  HostTensor codes(DType::kUInt8, {8, 16}), scales(DType::kUInt8, {8, 2});
  HostTensor out(DType::kBFloat16, {8, 32});
  HostTensor a = test::float_tensor({1.0f});
  GlobalAmax g;
  g.amax = a.view();
  auto run = [&](const TensorView& cv, const TensorView& sv, float bound, TensorView ov) {
    dequantize(cv, sv, g, bound, ov);
  };
  EXPECT_NO_THROW(run(codes, scales, 256.0f, out.view()));
  expect_error([&] { run(codes, scales, 100.0f, out.view()); }, "scale_bound must be 256 or 448");
  HostTensor c2(DType::kUInt8, {8, 8});
  expect_error([&] { run(c2, scales, 256.0f, out.view()); }, "codes must have shape [8, 16]");
  HostTensor s2(DType::kUInt8, {8, 3});
  expect_error([&] { run(codes, s2, 256.0f, out.view()); }, "scales must have shape [8, 2]");
  HostTensor o2(DType::kInt32, {8, 32});
  expect_error([&] { run(codes, scales, 256.0f, o2.view()); }, "out must be");
  HostTensor o3(DType::kFloat32, {8, 24});
  HostTensor c3(DType::kUInt8, {8, 12});
  expect_error([&] { run(c3, scales, 256.0f, o3.view()); }, "out columns must be a multiple of 16");
  HostTensor cf(DType::kFloat32, {8, 16});
  expect_error([&] { run(cf, scales, 256.0f, out.view()); }, "codes must be uint8");
  g.scope = AmaxScope::kRow;
  expect_error([&] { run(codes, scales, 256.0f, out.view()); }, "amax.amax must have shape [8]");
  g.scope = AmaxScope::kGroup;
  expect_error([&] { run(codes, scales, 256.0f, out.view()); }, "amax.offsets is required");
  HostTensor offs = test::int_tensor({9});
  g.offsets = offs.view();
  expect_error([&] { run(codes, scales, 256.0f, out.view()); }, "exceeds the row count 8");
  g.scope = AmaxScope::kTensor;
  HostTensor c1(DType::kUInt8, {1, 16}), s1(DType::kUInt8, {1, 2});
  TensorView over1 = c1.view();  // a float32 (1, 32) out placed over the codes
  over1.dtype = DType::kFloat32;
  over1.shape[1] = 32;
  over1.strides[0] = 32;
  expect_error([&] { run(c1, s1, 256.0f, over1); }, "out and codes must not overlap");
}

TEST(Validation, Amax) {
  HostTensor x = test::random_matrix(DType::kFloat16, 24, 32, 3);
  HostTensor one(DType::kFloat32, {1});
  AmaxConfig cfg;
  EXPECT_NO_THROW(amax(x.view(), cfg, one.view()));
  HostTensor two(DType::kFloat32, {2});
  expect_error([&] { amax(x.view(), cfg, two.view()); }, "out must have shape [1]");
  HostTensor bf(DType::kBFloat16, {1});
  expect_error([&] { amax(x.view(), cfg, bf.view()); }, "out must be float32");
  cfg.rht_columns = true;
  expect_error([&] { amax(x.view(), cfg, one.view()); }, "cfg.rht_columns needs x rows % 16");
  cfg.scope = AmaxScope::kRow;
  expect_error([&] { amax(x.view(), cfg, one.view()); },
               "cfg.rht_columns cannot be combined with cfg.scope row");
  cfg.rht_columns = false;
  expect_error([&] { amax(x.view(), cfg, one.view()); }, "out must have shape [24]");
  cfg.scope = AmaxScope::kGroup;
  expect_error([&] { amax(x.view(), cfg, two.view()); }, "cfg.offsets is required");
  HostTensor offs = test::int_tensor({10, 30});
  cfg.offsets = offs.view();
  expect_error([&] { amax(x.view(), cfg, two.view()); }, "cfg.offsets[-1] = 30 exceeds");
  HostTensor offs2 = test::int_tensor({10, 24});
  cfg.offsets = offs2.view();
  EXPECT_NO_THROW(amax(x.view(), cfg, two.view()));
  HostTensor x16 = test::random_matrix(DType::kFloat16, 32, 32, 3);
  cfg.rht_columns = true;
  expect_error([&] { amax(x16.view(), cfg, two.view()); },
               "cfg.offsets[0] = 10 must be a multiple of 16");
  HostTensor xi(DType::kInt32, {4, 16});
  cfg = AmaxConfig{};
  expect_error([&] { amax(xi.view(), cfg, one.view()); }, "x must be");
  TensorView alias = x.view();
  alias.dtype = DType::kFloat32;
  alias.ndim = 1;
  alias.shape[0] = 1;
  alias.strides[0] = 1;
  expect_error([&] { amax(x.view(), cfg, alias); }, "out and x must not overlap");
}

TEST(QuantizeExpertsValidation, ArgumentsAreNamed) {
  test::ExpertsCase c(2, 32, 64, 3);
  QuantizeConfig cfg;
  cfg.block = Block::k16x16;
  cfg.columnwise = true;
  QuantizedOutputs out = test::expert_outputs(c, cfg);
  const TensorView w2 = select0(c.w.view(), 0);
  expect_error([&] { quantize_experts(w2, c.amax.view(), cfg, out); }, "w must be 3-D");
  HostTensor am3 = test::float_tensor({1.0f, 2.0f, 3.0f});
  expect_error([&] { quantize_experts(c.w.view(), am3.view(), cfg, out); }, "amax");
  QuantizedOutputs bad = out;
  HostTensor small(DType::kUInt8, {2, 16, 32});
  bad.codes_t = small.view();
  expect_error([&] { quantize_experts(c.w.view(), c.amax.view(), cfg, bad); }, "out.codes_t");
  test::ExpertsCase odd(2, 24, 64, 3);  // N = 24: 16x16 tiles need rows % 16 == 0
  QuantizedOutputs odd_out = test::expert_outputs(odd, cfg);
  expect_error([&] { quantize_experts(odd.w.view(), odd.amax.view(), cfg, odd_out); },
               "rows % 16 == 0");
}

// amax_quantize_experts checks as quantize_experts does, and its amax output must be contiguous
// (it is written whole).
TEST(QuantizeExpertsValidation, AmaxQuantizeExpertsArgumentsAreNamed) {
  test::ExpertsCase c(2, 32, 64, 3);
  QuantizeConfig cfg;
  cfg.block = Block::k16x16;
  QuantizedOutputs out = test::expert_outputs(c, cfg);
  TensorView am = c.amax.view();
  expect_error([&] { amax_quantize_experts(select0(c.w.view(), 0), am, cfg, out); },
               "w must be 3-D");
  HostTensor am4 = test::float_tensor({0.0f, 0.0f, 0.0f, 0.0f});
  TensorView strided = am4.view();
  strided.shape[0] = 2;
  strided.strides[0] = 2;
  expect_error([&] { amax_quantize_experts(c.w.view(), strided, cfg, out); }, "amax");
  HostTensor am3 = test::float_tensor({1.0f, 2.0f, 3.0f});
  TensorView wrong = am3.view();
  expect_error([&] { amax_quantize_experts(c.w.view(), wrong, cfg, out); }, "amax");
}

TEST(QuantizeExpertsValidation, NoExpertsIsANoOp) {
  test::ExpertsCase c(0, 32, 64, 3);
  QuantizeConfig cfg;
  QuantizedOutputs out = test::expert_outputs(c, cfg);
  EXPECT_NO_THROW(quantize_experts(c.w.view(), c.amax.view(), cfg, out));
}

}  // namespace
}  // namespace f46
