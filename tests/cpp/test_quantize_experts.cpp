// quantize_experts (include/f46/quantize.h) on the CPU: each expert's outputs are those of
// quantize with its amax as a per-tensor amax, which are those of the group scope over the
// (E*N, K) view (N2). Its argument errors: test_quantize_validation.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "test_quantize_util.h"

namespace f46 {
namespace {

using test::ExpertsCase;
using test::HostTensor;

struct Param {
  Block block;
  Rule rule;
  bool rowwise, columnwise;
};

class QuantizeExperts : public testing::TestWithParam<Param> {};

TEST_P(QuantizeExperts, EachExpertEqualsItsOwnQuantize) {
  const Param& p = GetParam();
  ExpertsCase c(4, 48, 160, 11);
  const QuantizeConfig cfg = test::experts_config(p.block, p.rule, p.rowwise, p.columnwise);
  QuantizedOutputs out = test::expert_outputs(c, cfg);
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
      QuantizedOutputs out = test::expert_outputs(c, cfg);
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

// amax_quantize_experts: the amaxes of f46::amax per expert (N9: a NaN expert gives its NaN
// pattern, an all-zero expert 0), and the outputs of quantize_experts with them.
TEST(AmaxQuantizeExperts, EqualsAmaxThenQuantizeExperts) {
  for (bool columnwise : {false, true}) {
    ExpertsCase c(5, 32, 48, 21);
    c.w.set(2 * 32 * 48 + 77, std::numeric_limits<float>::quiet_NaN());
    c.w.set(3 * 32 * 48 + 5, -std::numeric_limits<float>::infinity());
    for (int64_t i = 0; i < 32 * 48; ++i) c.w.set(4 * 32 * 48 + i, 0.0f);
    QuantizeConfig cfg;
    cfg.block = Block::k16x16;
    cfg.columnwise = columnwise;
    HostTensor amax(DType::kFloat32, std::vector<int64_t>{c.e});
    amax.fill_bytes(0xAB);
    QuantizedOutputs out = test::expert_outputs(c, cfg);
    amax_quantize_experts(c.w.view(), amax.view(), cfg, out);
    ExpertsCase want(5, 32, 48, 21);
    want.w = c.w;
    for (int64_t g = 0; g < c.e; ++g) {
      const float a = test::amax_host(c.expert(g), AmaxScope::kTensor)[0];
      EXPECT_EQ(test::float_bits(amax.get(g)), test::float_bits(a)) << "expert " << g;
      want.amax.set(g, a);
    }
    QuantizedOutputs want_out = test::expert_outputs(want, cfg);
    quantize_experts(want.w.view(), want.amax.view(), cfg, want_out);
    EXPECT_TRUE(std::isnan(amax.get(2)) && std::isinf(amax.get(3)) && amax.get(4) == 0.0f);
    EXPECT_EQ(c.codes.bytes(), want.codes.bytes());
    EXPECT_EQ(c.scales.bytes(), want.scales.bytes());
    if (columnwise) {
      EXPECT_EQ(c.codes_t.bytes(), want.codes_t.bytes());
      EXPECT_EQ(c.scales_t.bytes(), want.scales_t.bytes());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, QuantizeExperts,
                         testing::Values(Param{Block::k16x16, Rule::kMAE, true, true},
                                         Param{Block::k16x16, Rule::kMSE, true, false},
                                         Param{Block::k16x16, Rule::kAll6, false, true},
                                         Param{Block::k1x16, Rule::kMAE, true, true}));

}  // namespace
}  // namespace f46
