// Virtual token-group padding on the CPU (GlobalAmax::source_offsets, docs/numerics.md N12):
// bitwise the quantization of the padded copy, and the restrictions as errors naming the
// argument. The device form, which reads the unpadded rows itself: test_cuda_quantize_virtual_pad.
#include <gtest/gtest.h>

#include "gemm_test_util.h"
#include "virtual_pad_util.h"

namespace f46::test {
namespace {

// Outputs (C, P/2), (C, P/16) of a columnwise call over P padded rows, 0xAB-filled.
struct ColOut {
  HostTensor codes_t, scales_t;
  QuantizedOutputs out;
  ColOut(int64_t c, int64_t p) : codes_t(DType::kUInt8, {c, p / 2}), scales_t(DType::kUInt8, {c, p / 16}) {
    codes_t.fill_bytes(0xAB);
    scales_t.fill_bytes(0xAB);
    out.codes_t = codes_t.view();
    out.scales_t = scales_t.view();
  }
};

// The GlobalAmax of a virtually padded call: group amaxes, padded ends, source ends.
class VirtualAmax {
 public:
  explicit VirtualAmax(const VirtualPadCase& v)
      : amax_(float_tensor(v.amax)), poffs_(int_tensor(v.poffs)), offs_(int_tensor(v.offs)) {
    g_.scope = AmaxScope::kGroup;
    g_.amax = amax_.view();
    g_.offsets = poffs_.view();
    g_.source_offsets = offs_.view();
  }
  const GlobalAmax& get() const { return g_; }

 private:
  HostTensor amax_, poffs_, offs_;
  GlobalAmax g_;
};

TEST(QuantizeVirtualPad, EqualsThePaddedCopyBitwise) {
  for (DType t : {DType::kBFloat16, DType::kFloat32})
    for (bool gradient : {false, true}) {
      const VirtualPadCase v = virtual_pad_case(t, 48, {13, 0, 30, 9}, 5, 21);
      const QuantizeConfig cfg = virtual_pad_config(gradient);
      const Quantized want =
          quantize_host(v.padded, AmaxSpec{AmaxScope::kGroup, v.amax, v.poffs, {}}, cfg);
      ColOut got(48, v.padded.size(0));
      const VirtualAmax g(v);
      quantize(v.x, g.get(), cfg, got.out);
      EXPECT_EQ(got.codes_t.bytes(), want.codes_t.bytes()) << dtype_name(t) << " " << gradient;
      EXPECT_EQ(got.scales_t.bytes(), want.scales_t.bytes()) << dtype_name(t) << " " << gradient;
    }
}

TEST(QuantizeVirtualPad, RestrictionsNameTheArgument) {
  const VirtualPadCase v = virtual_pad_case(DType::kBFloat16, 32, {7, 20}, 0, 5);  // P = 64
  const VirtualAmax va(v);
  const GlobalAmax& g = va.get();
  QuantizeConfig cfg = virtual_pad_config(false);
  ColOut ok(32, 64), short_out(32, 48);
  expect_error([&] { quantize(v.x, g, cfg, short_out.out); }, {"out.codes_t", "shape"});
  QuantizeConfig both = cfg;
  both.rowwise = true;
  expect_error([&] { quantize(v.x, g, both, ok.out); }, {"amax.source_offsets", "cfg.rowwise"});
  QuantizeConfig tiles = cfg;
  tiles.block = Block::k16x16;
  expect_error([&] { quantize(v.x, g, tiles, ok.out); }, {"amax.source_offsets", "1x16"});
  QuantizeConfig rht = cfg;
  rht.rht_columnwise = true;
  expect_error([&] { quantize(v.x, g, rht, ok.out); }, {"amax.source_offsets", "RHT"});
  HostTensor same = int_tensor({16, 48});  // sizes 7, 20 padded to 16, 32
  HostTensor bad = int_tensor({32, 48});
  GlobalAmax gb = g;
  gb.offsets = bad.view();
  expect_error([&] { quantize(v.x, gb, cfg, ok.out); }, {"amax.offsets[0] = 32", "padded end 16"});
  GlobalAmax gs = g;
  gs.offsets = same.view();
  quantize(v.x, gs, cfg, ok.out);  // the padded ends, from another tensor: accepted
  HostTensor three = int_tensor({7, 20, 27});
  GlobalAmax g3 = g;
  g3.source_offsets = three.view();
  expect_error([&] { quantize(v.x, g3, cfg, ok.out); }, {"amax.source_offsets", "[2]"});
  GlobalAmax gt = g;
  gt.scope = AmaxScope::kTensor;
  expect_error([&] { quantize(v.x, gt, cfg, ok.out); }, {"amax.source_offsets", "scope group"});
}

}  // namespace
}  // namespace f46::test
