// amax_quantize_experts on CUDA (the experts' amaxes and their 16x16 tiles in one pass,
// src/cuda/quantize/quantize_quad_amax.cuh; else amax_row_groups + quantize_experts) equals the
// CPU reference bitwise: the amaxes (a NaN expert's NaN pattern, an Inf, an all-zero expert)
// and every output byte.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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
  bool specials;  // a NaN in expert 2, a -Inf in expert 3 (expert 1 is all zero)
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return "E" + std::to_string(c.e) + "N" + std::to_string(c.n) + "K" + std::to_string(c.k) +
         (c.block == Block::k16x16 ? "_16x16_" : "_1x16_") + rule_name(c.rule) +
         (c.rowwise ? "_row" : "") + (c.columnwise ? "_col" : "") + (c.specials ? "_nan" : "");
}

// The CPU and the CUDA call on the same experts: amaxes and outputs bitwise.
void expect_equal(ExpertsCase& host, ExpertsCase& dev_in, const QuantizeConfig& cfg,
                  const std::string& what) {
  host.amax.fill_bytes(0xAB);
  QuantizedOutputs ho = expert_outputs(host, cfg);
  amax_quantize_experts(host.w.view(), host.amax.view(), cfg, ho);
  dev_in.amax.fill_bytes(0xAB);
  DeviceExperts d(dev_in);
  QuantizedOutputs dout = d.outputs(cfg);
  amax_quantize_experts(d.w.view(), d.amax.view(), cfg, dout);
  d.expect_equal(host, cfg, true, what);
}

class CudaAmaxQuantizeExperts : public testing::TestWithParam<Case> {};

TEST_P(CudaAmaxQuantizeExperts, EqualsCpuBitwise) {
  F46_SKIP_WITHOUT_CUDA();
  const Case& p = GetParam();
  const QuantizeConfig cfg = experts_config(p.block, p.rule, p.rowwise, p.columnwise);
  ExpertsCase host(p.e, p.n, p.k, 33), dev_in(p.e, p.n, p.k, 33);
  if (p.specials) {
    for (ExpertsCase* c : {&host, &dev_in}) {
      c->w.set(2 * p.n * p.k + p.k + 17, std::numeric_limits<float>::quiet_NaN());
      c->w.set(3 * p.n * p.k + 5, -std::numeric_limits<float>::infinity());
    }
  }
  expect_equal(host, dev_in, cfg, case_name({p, 0}));
}

const Case kCases[] = {
    // one chunk per expert (64 KB of x or less), partial strips and runs; both outputs and
    // columnwise only (the columnwise walk), rowwise only
    {5, 48, 160, Block::k16x16, Rule::kMAE, true, true, true},
    {5, 48, 160, Block::k16x16, Rule::kMSE, true, false, true},
    {5, 48, 160, Block::k16x16, Rule::kAbsMax, false, true, true},
    {5, 48, 160, Block::k16x16, Rule::kAll6, true, true, false},
    {5, 48, 160, Block::k16x16, Rule::kAll4, true, false, false},
    // many tiny experts (more tickets than CTAs, the amaxes many experts ahead)
    {300, 16, 32, Block::k16x16, Rule::kMAE, true, true, true},
    {300, 16, 32, Block::k16x16, Rule::kMAE, true, false, false},
    // several amax chunks per expert, and chunks that end inside a row
    {12, 256, 1040, Block::k16x16, Rule::kMAE, true, true, true},
    {12, 256, 1040, Block::k16x16, Rule::kMSE, true, false, true},
    {3, 1040, 528, Block::k16x16, Rule::kMAE, false, true, true},
    // Qwen3-like experts (1.5 MB each), fewer than the resident CTAs' reach
    {6, 512, 1536, Block::k16x16, Rule::kMAE, true, true, false},
    {6, 512, 1536, Block::k16x16, Rule::kMAE, true, false, false},
    // the fallback (not the 16x16 weights kernel): amax_row_groups + quantize_experts
    {4, 32, 96, Block::k1x16, Rule::kMAE, true, true, true},
};
INSTANTIATE_TEST_SUITE_P(Shapes, CudaAmaxQuantizeExperts, testing::ValuesIn(kCases), case_name);

// quad_tile_values' experts (tiles tied between the 4/6 candidates, NaN, Inf, zero and
// saturating tiles) under their own amaxes, every 16x16 rule, both outputs and each alone.
TEST(CudaAmaxQuantizeExpertsTiles, EqualsCpuBitwise) {
  F46_SKIP_WITHOUT_CUDA();
  const int64_t e = 4, n = 208, k = 1040;
  const std::vector<float> v = quad_tile_values(e * n, k);
  const Rule rules[] = {Rule::kMAE, Rule::kMSE, Rule::kAbsMax, Rule::kAll6, Rule::kAll4};
  for (int mode = 0; mode < 5; ++mode) {
    for (int outs = 1; outs <= 3; ++outs) {
      QuantizeConfig cfg;
      cfg.block = Block::k16x16;
      cfg.rule = rules[mode];
      cfg.scale_bound = mode % 2 ? 448.0f : 256.0f;
      cfg.rowwise = outs & 1;
      cfg.columnwise = outs & 2;
      ExpertsCase host(e, n, k, 3), dev_in(e, n, k, 3);
      for (ExpertsCase* c : {&host, &dev_in})
        for (int64_t i = 0; i < e * n * k; ++i) c->w.set(i, v[static_cast<size_t>(i)]);
      expect_equal(host, dev_in, cfg,
                   "mode " + std::to_string(mode) + " outputs " + std::to_string(outs));
    }
  }
}

// A strided weight (experts not packed: one launch per expert's amax) and a non-bf16 weight
// take the fallback; same bits.
TEST(CudaAmaxQuantizeExpertsFallback, StridedExpertsEqualCpu) {
  F46_SKIP_WITHOUT_CUDA();
  ExpertsCase host(3, 32, 64, 9), dev_in(3, 32, 64, 9);
  QuantizeConfig cfg;
  cfg.block = Block::k16x16;
  cfg.columnwise = true;
  // experts 0 and 2 of the three (stride 2 N K): a view that skips expert 1
  for (ExpertsCase* c : {&host, &dev_in}) c->w.set(2 * 32 * 64 + 3, 1e30f);
  HostTensor amax_h(DType::kFloat32, std::vector<int64_t>{2});
  TensorView wv = host.w.view();
  wv.shape[0] = 2;
  wv.strides[0] *= 2;
  HostTensor c2(DType::kUInt8, {2, 32, 32}), s2(DType::kUInt8, {2, 32, 4}),
      ct2(DType::kUInt8, {2, 64, 16}), st2(DType::kUInt8, {2, 64, 2});
  QuantizedOutputs ho = outputs_of(cfg, c2.view(), s2.view(), ct2.view(), st2.view());
  amax_quantize_experts(wv, amax_h.view(), cfg, ho);
  DeviceTensor dw(dev_in.w), da(amax_h), dc(c2), ds(s2), dct(ct2), dst(st2);
  TensorView dwv = dw.view();
  dwv.shape[0] = 2;
  dwv.strides[0] *= 2;
  QuantizedOutputs dout = outputs_of(cfg, dc.view(), ds.view(), dct.view(), dst.view());
  amax_quantize_experts(dwv, da.view(), cfg, dout);
  EXPECT_EQ(da.to_host(amax_h).bytes(), amax_h.bytes());
  EXPECT_GT(amax_h.get(1), 1e29f);  // expert 2 of w, its 1e30 (rounded to bf16)
  EXPECT_EQ(dc.to_host(c2).bytes(), c2.bytes());
  EXPECT_EQ(ds.to_host(s2).bytes(), s2.bytes());
  EXPECT_EQ(dct.to_host(ct2).bytes(), ct2.bytes());
  EXPECT_EQ(dst.to_host(st2).bytes(), st2.bytes());
}

}  // namespace
}  // namespace f46::test
