// quantize_experts (include/f46/quantize.h) on the CPU: each expert's outputs are those of
// quantize with its amax as a per-tensor amax, which are those of the group scope over the
// (E*N, K) view (N2); argument errors name the argument.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "test_quantize_util.h"

namespace f46 {
namespace {

using test::ExpertsCase;
using test::HostTensor;

QuantizedOutputs outputs(ExpertsCase& c, const QuantizeConfig& cfg) {
  QuantizedOutputs out;
  if (cfg.rowwise) out.codes = c.codes.view(), out.scales = c.scales.view();
  if (cfg.columnwise) out.codes_t = c.codes_t.view(), out.scales_t = c.scales_t.view();
  return out;
}

struct Param {
  Block block;
  Rule rule;
  bool rowwise, columnwise;
};

class QuantizeExperts : public testing::TestWithParam<Param> {};

TEST_P(QuantizeExperts, EachExpertEqualsItsOwnQuantize) {
  const Param& p = GetParam();
  ExpertsCase c(4, 48, 160, 11);
  QuantizeConfig cfg;
  cfg.block = p.block;
  cfg.rule = p.rule;
  cfg.rowwise = p.rowwise;
  cfg.columnwise = p.columnwise;
  QuantizedOutputs out = outputs(c, cfg);
  quantize_experts(c.w.view(), c.amax.view(), cfg, out);
  for (int64_t g = 0; g < c.e; ++g) {
    const test::Quantized want =
        test::quantize_host(c.expert(g), test::tensor_amax(c.amax.get(g)), cfg);
    if (cfg.rowwise) {
      EXPECT_TRUE(test::expert_bytes_equal(c.codes, g, want.codes)) << "codes, expert " << g;
      EXPECT_TRUE(test::expert_bytes_equal(c.scales, g, want.scales)) << "scales, expert " << g;
    }
    if (cfg.columnwise) {
      EXPECT_TRUE(test::expert_bytes_equal(c.codes_t, g, want.codes_t)) << "codes_t " << g;
      EXPECT_TRUE(test::expert_bytes_equal(c.scales_t, g, want.scales_t)) << "scales_t " << g;
    }
  }
}

TEST(QuantizeExpertsGroupScope, RowwiseEqualsGroupScopeBitwise) {
  for (Block block : {Block::k16x16, Block::k1x16}) {
    for (Rule rule : {Rule::kMAE, Rule::kMSE, Rule::kAll6}) {
      ExpertsCase c(3, 32, 64, 5);
      QuantizeConfig cfg;
      cfg.block = block;
      cfg.rule = rule;
      QuantizedOutputs out = outputs(c, cfg);
      quantize_experts(c.w.view(), c.amax.view(), cfg, out);
      HostTensor w2(DType::kBFloat16, {c.e * c.n, c.k});
      for (int64_t i = 0; i < c.w.numel(); ++i) w2.set(i, c.w.get(i));
      test::AmaxSpec group{AmaxScope::kGroup, c.amax.to_floats(), {32, 64, 96}, {}};
      const test::Quantized want = test::quantize_host(w2, group, cfg);
      EXPECT_EQ(c.codes.bytes(), want.codes.bytes()) << rule_name(rule);
      EXPECT_EQ(c.scales.bytes(), want.scales.bytes()) << rule_name(rule);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, QuantizeExperts,
    testing::Values(Param{Block::k16x16, Rule::kMAE, true, true},
                    Param{Block::k16x16, Rule::kMSE, true, false},
                    Param{Block::k16x16, Rule::kAll6, false, true},
                    Param{Block::k1x16, Rule::kMAE, true, true}));

void expect_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown, expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message '" << e.what() << "' does not mention '" << needle << "'";
  }
}

TEST(QuantizeExpertsValidation, ArgumentsAreNamed) {
  ExpertsCase c(2, 32, 64, 3);
  QuantizeConfig cfg;
  cfg.block = Block::k16x16;
  cfg.columnwise = true;
  QuantizedOutputs out = outputs(c, cfg);
  const TensorView w2 = select0(c.w.view(), 0);
  expect_error([&] { quantize_experts(w2, c.amax.view(), cfg, out); }, "w must be 3-D");
  HostTensor am3 = test::float_tensor({1.0f, 2.0f, 3.0f});
  expect_error([&] { quantize_experts(c.w.view(), am3.view(), cfg, out); }, "amax");
  QuantizedOutputs bad = out;
  HostTensor small(DType::kUInt8, {2, 16, 32});
  bad.codes_t = small.view();
  expect_error([&] { quantize_experts(c.w.view(), c.amax.view(), cfg, bad); }, "out.codes_t");
  ExpertsCase odd(2, 24, 64, 3);  // N = 24: 16x16 tiles need rows % 16 == 0
  QuantizedOutputs odd_out = outputs(odd, cfg);
  expect_error([&] { quantize_experts(odd.w.view(), odd.amax.view(), cfg, odd_out); },
               "rows % 16 == 0");
}

TEST(QuantizeExpertsValidation, NoExpertsIsANoOp) {
  ExpertsCase c(0, 32, 64, 3);
  QuantizeConfig cfg;
  QuantizedOutputs out = outputs(c, cfg);
  EXPECT_NO_THROW(quantize_experts(c.w.view(), c.amax.view(), cfg, out));
}

}  // namespace
}  // namespace f46
