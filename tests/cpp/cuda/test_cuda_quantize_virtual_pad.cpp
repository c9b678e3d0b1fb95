// Virtual token-group padding on the device (GlobalAmax::source_offsets, docs/numerics.md N12):
// the tile kernel reads the unpadded rows itself (a source row or zeros per padded row); its
// codes and scales are bitwise those of the padded copy quantized on the CPU, for 4/6 MAE
// activations and N4 gradients with SR, 16-byte and element loads, empty groups, rows past
// the last group, column counts that are no multiple of 16 (a columnwise-only call blocks along
// the rows); offsets the CPU would reject are clamped (compute-sanitizer runs this).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "virtual_pad_util.h"

namespace f46::test {
namespace {

struct DeviceVirtualPad {
  HostTensor codes_t, scales_t;
  DeviceVirtualPad(const HostTensor& x, const std::vector<float>& amax,
                   const std::vector<int32_t>& poffs, const std::vector<int32_t>& offs, int64_t p,
                   const QuantizeConfig& cfg) {
    const int64_t c = x.size(1);
    codes_t = HostTensor(DType::kUInt8, {c, p / 2});
    scales_t = HostTensor(DType::kUInt8, {c, p / 16});
    codes_t.fill_bytes(0xAB);
    scales_t.fill_bytes(0xAB);
    DeviceTensor dx(x), da(float_tensor(amax)), dpo(int_tensor(poffs)), dof(int_tensor(offs)),
        dct(codes_t), dst(scales_t);
    GlobalAmax g;
    g.scope = AmaxScope::kGroup;
    g.amax = da.view();
    g.offsets = dpo.view();
    g.source_offsets = dof.view();
    QuantizedOutputs out;
    out.codes_t = dct.view();
    out.scales_t = dst.view();
    quantize(dx.view(), g, cfg, out);
    codes_t = dct.to_host(codes_t);
    scales_t = dst.to_host(scales_t);
  }
};

TEST(CudaQuantizeVirtualPad, EqualsThePaddedCopyOnTheCpu) {
  F46_SKIP_WITHOUT_CUDA();
  struct Case {
    int64_t c;
    std::vector<int32_t> sizes;
    int64_t past;
  };
  const std::vector<Case> cases = {
      {64, {16, 16}, 0},                 // no padding needed
      {48, {13, 0, 30, 9}, 5},           // empty group, rows past the end
      {200, {1, 77, 0, 0, 150, 3}, 17},  // units straddling groups and padding
      {2048, {300, 1000, 724}, 0},       // many units per band
      {203, {40, 9, 0, 31}, 3},          // columns in no 16-byte chunk: element loads only
  };
  for (DType t : {DType::kBFloat16, DType::kFloat32})
    for (bool gradient : {false, true})
      for (const Case& k : cases) {
        const VirtualPadCase v = virtual_pad_case(t, k.c, k.sizes, k.past, 31 + k.c);
        const QuantizeConfig cfg = virtual_pad_config(gradient);
        const Quantized want =
            quantize_host(v.padded, AmaxSpec{AmaxScope::kGroup, v.amax, v.poffs, {}}, cfg);
        const std::string what = std::string(dtype_name(t)) + (gradient ? " gradient " : " mae ") +
                                 std::to_string(v.x.size(0)) + "x" + std::to_string(k.c);
        const DeviceVirtualPad got(v.x, v.amax, v.poffs, v.offs, v.padded.size(0), cfg);
        EXPECT_EQ(first_byte_diff(got.codes_t, want.codes_t), -1) << "codes_t " << what;
        EXPECT_EQ(first_byte_diff(got.scales_t, want.scales_t), -1) << "scales_t " << what;
        // Element loads: x at an odd row stride (rows no longer 16-byte aligned).
        HostTensor strided(t, std::vector<int64_t>{v.x.size(0), k.c}, k.c + 1);
        for (int64_t r = 0; r < v.x.size(0); ++r)
          for (int64_t c = 0; c < k.c; ++c) strided.set_at(r, c, v.x.at(r, c));
        const DeviceVirtualPad got2(strided, v.amax, v.poffs, v.offs, v.padded.size(0), cfg);
        EXPECT_EQ(first_byte_diff(got2.codes_t, want.codes_t), -1) << "strided codes_t " << what;
        EXPECT_EQ(first_byte_diff(got2.scales_t, want.scales_t), -1) << "strided scales_t " << what;
      }
}

// The bf16 64-column cases go to quantize_cols_group_kernel (round to nearest): its band
// mapping (one group search per 16 padded rows: source rows, then the group's zero rows) against
// the padded copy on the CPU, for 4/6 MAE and the gradient mode rounded to nearest, with groups
// of every size class, empty groups and rows past the last group.
TEST(CudaQuantizeVirtualPad, ColumnwiseGroupKernelEqualsThePaddedCopy) {
  F46_SKIP_WITHOUT_CUDA();
  QuantizeConfig rne = virtual_pad_config(true);
  rne.rounding = Rounding::kNearestEven;
  const std::vector<std::pair<std::string, QuantizeConfig>> cfgs = {
      {"mae", virtual_pad_config(false)}, {"gradient rne", rne}};
  const std::vector<std::pair<int64_t, std::vector<int32_t>>> cases = {
      {64, {16, 16}},
      {128, {13, 0, 30, 9}},
      {192, {1, 77, 0, 0, 150, 3}},
      {1024, {300, 1000, 724}},
      {64, {40, 9, 0, 31, 65, 2, 17}}};
  for (const auto& [name, cfg] : cfgs)
    for (const auto& [c, sizes] : cases) {
      const VirtualPadCase v = virtual_pad_case(DType::kBFloat16, c, sizes, 7, 5 + c);
      const Quantized want =
          quantize_host(v.padded, AmaxSpec{AmaxScope::kGroup, v.amax, v.poffs, {}}, cfg);
      const DeviceVirtualPad got(v.x, v.amax, v.poffs, v.offs, v.padded.size(0), cfg);
      const std::string what = name + " " + std::to_string(v.x.size(0)) + "x" + std::to_string(c);
      EXPECT_EQ(first_byte_diff(got.codes_t, want.codes_t), -1) << "codes_t " << what;
      EXPECT_EQ(first_byte_diff(got.scales_t, want.scales_t), -1) << "scales_t " << what;
    }
}

TEST(CudaQuantizeVirtualPad, InvalidOffsetsStayInBounds) {
  F46_SKIP_WITHOUT_CUDA();
  const HostTensor x = random_matrix(DType::kBFloat16, 40, 64, 3);
  const int64_t p = padded_rows(40, 2, 16);  // 80
  const std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> bad = {
      {{30, 10}, {32, 48}},
      {{5, 1 << 30}, {16, 1 << 30}},
      {{-7, 40}, {-16, 48}},
      {{40, 40}, {80, 16}}};
  for (const auto& [offs, poffs] : bad) {
    const DeviceVirtualPad got(x, {1.0f, 2.0f}, poffs, offs, p, virtual_pad_config(false));
    EXPECT_EQ(got.codes_t.size(1), p / 2);  // ran to completion; memcheck checks the accesses
  }
}

}  // namespace
}  // namespace f46::test
