// quantize_experts on CUDA (the bf16 16x16 weights kernel over all experts in one launch, or one
// quantize per expert) equals the CPU reference bitwise, every output byte written.
#include <gtest/gtest.h>

#include <string>

#include "cuda/cuda_test_util.h"
#include "cuda/quad_tile_values.h"

namespace f46::test {
namespace {

struct Case {
  int64_t e, n, k;
  Block block;
  Rule rule;
  bool rowwise, columnwise;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return "E" + std::to_string(c.e) + "N" + std::to_string(c.n) + "K" + std::to_string(c.k) +
         (c.block == Block::k16x16 ? "_16x16_" : "_1x16_") + rule_name(c.rule) +
         (c.rowwise ? "_row" : "") + (c.columnwise ? "_col" : "");
}

class CudaQuantizeExperts : public testing::TestWithParam<Case> {};

TEST_P(CudaQuantizeExperts, EqualsCpuBitwise) {
  F46_SKIP_WITHOUT_CUDA();
  const Case& p = GetParam();
  const QuantizeConfig cfg = experts_config(p.block, p.rule, p.rowwise, p.columnwise);
  ExpertsCase host(p.e, p.n, p.k, 21), dev_in(p.e, p.n, p.k, 21);
  QuantizedOutputs ho = expert_outputs(host, cfg);
  quantize_experts(host.w.view(), host.amax.view(), cfg, ho);
  DeviceExperts d(dev_in);
  QuantizedOutputs dout = d.outputs(cfg);
  quantize_experts(d.w.view(), d.amax.view(), cfg, dout);
  d.expect_equal(host, cfg, false, case_name({p, 0}));
}

const Case kCases[] = {
    // one launch over the experts: partial column strips (K % 128 != 0), runs of fewer than 4
    // tile rows (N / 16 = 3), an all-zero expert, every 4/6 and plain rule
    {5, 48, 160, Block::k16x16, Rule::kMAE, true, true},
    {5, 48, 160, Block::k16x16, Rule::kMSE, true, true},
    {5, 48, 160, Block::k16x16, Rule::kAbsMax, true, false},
    {5, 48, 160, Block::k16x16, Rule::kAll6, false, true},
    {5, 48, 160, Block::k16x16, Rule::kAll4, true, false},
    // more experts than resident CTAs (one CTA each), and larger experts
    {300, 16, 32, Block::k16x16, Rule::kMAE, true, true},
    {12, 256, 1040, Block::k16x16, Rule::kMAE, true, true},
    // the columnwise walk's blocks of 8 runs x 4 strips: several of each, partial at both edges
    // (65 tile rows = 17 runs, the last of one tile row; 5 strips, the last of 16 columns)
    {3, 1040, 528, Block::k16x16, Rule::kMAE, true, true},
    {3, 1040, 528, Block::k16x16, Rule::kMSE, false, true},
    // one expert, and the per-expert fallback (1x16 blocks)
    {1, 64, 128, Block::k16x16, Rule::kMAE, true, true},
    {4, 32, 96, Block::k1x16, Rule::kMAE, true, true},
};
INSTANTIATE_TEST_SUITE_P(Shapes, CudaQuantizeExperts, testing::ValuesIn(kCases), case_name);

// The batched 16x16 kernel on experts of quad_tile_values (a third of the tiles tie exactly
// between the 4/6 candidates, so their choice is the exact errors' in each order; a NaN, an Inf,
// zero and saturating tiles): both outputs and the columnwise output alone (the kernel's
// columnwise form, whose columnwise choice of a tied tile is its own); every 16x16 rule, under the
// amax 6 * bound (the ties exact) and another. 4 experts of 208 x 1040: runs of 4 tile rows and
// a last of 1, a partial last strip.
TEST(CudaQuantizeExpertsTiles, EqualsCpuBitwise) {
  F46_SKIP_WITHOUT_CUDA();
  const int64_t e = 4, n = 208, k = 1040;
  const std::vector<float> v = quad_tile_values(e * n, k);  // expert g: rows [g n, (g + 1) n)
  const Rule rules[] = {Rule::kMAE, Rule::kMSE, Rule::kAbsMax, Rule::kAll6, Rule::kAll4};
  for (int mode = 0; mode < 5; ++mode) {
    for (bool rowwise : {true, false}) {
      QuantizeConfig cfg = experts_config(Block::k16x16, rules[mode], rowwise, true);
      cfg.scale_bound = mode % 2 ? 448.0f : 256.0f;
      for (float amax : {6.0f * cfg.scale_bound, 1000.0f}) {
        ExpertsCase host(e, n, k, 3), dev_in(e, n, k, 3);
        for (ExpertsCase* c : {&host, &dev_in}) {
          for (int64_t i = 0; i < e * n * k; ++i) c->w.set(i, v[static_cast<size_t>(i)]);
          c->amax = float_tensor(std::vector<float>(static_cast<size_t>(e), amax));
        }
        QuantizedOutputs ho = expert_outputs(host, cfg);
        quantize_experts(host.w.view(), host.amax.view(), cfg, ho);
        DeviceExperts d(dev_in);
        QuantizedOutputs dout = d.outputs(cfg);
        quantize_experts(d.w.view(), d.amax.view(), cfg, dout);
        d.expect_equal(host, cfg, false,
                       "mode " + std::to_string(mode) + " rowwise " + std::to_string(rowwise) +
                           " amax " + std::to_string(amax));
      }
    }
  }
}

}  // namespace
}  // namespace f46::test
