// CUDA pad_token_groups / unpad_token_groups vs the CPU reference (N12), bitwise, for several
// alignments, group counts (empty groups included), row dtypes and widths.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"

namespace f46::test {
namespace {

struct PadCase {
  int64_t m, cols, alignment;
  int e;
  DType dtype;
};

std::vector<int32_t> random_offsets(int64_t m, int e, std::mt19937_64& gen, bool allow_short) {
  std::vector<int32_t> cuts;
  for (int g = 0; g < e; ++g) cuts.push_back(static_cast<int32_t>(gen() % (m + 1)));
  std::sort(cuts.begin(), cuts.end());
  if (!allow_short && e > 0) cuts.back() = static_cast<int32_t>(m);
  return cuts;
}

TEST(CudaPad, PadUnpadVsCpu) {
  F46_SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(7);
  const std::vector<PadCase> cases = {
      {1, 16, 128, 1, DType::kBFloat16},      {100, 64, 128, 4, DType::kBFloat16},
      {257, 48, 16, 9, DType::kFloat32},      {64, 7, 7, 3, DType::kBFloat16},
      {33, 5, 1, 2, DType::kUInt8},           {500, 40, 32, 128, DType::kUInt8},
      {1000, 2048, 128, 8, DType::kBFloat16}, {0, 16, 128, 3, DType::kFloat32},
      {90, 33, 3, 40, DType::kFloat16},
  };
  for (const PadCase& pc : cases)
    for (int rep = 0; rep < 3; ++rep) {
      const std::string what = std::to_string(pc.m) + "x" + std::to_string(pc.cols) +
                               " a=" + std::to_string(pc.alignment) + " E=" + std::to_string(pc.e) +
                               " rep " + std::to_string(rep);
      HostTensor x(pc.dtype, std::vector<int64_t>{pc.m, pc.cols});
      for (size_t i = 0; i < x.bytes().size(); ++i)
        static_cast<uint8_t*>(x.data())[i] = static_cast<uint8_t>(gen());
      const std::vector<int32_t> offs = random_offsets(pc.m, pc.e, gen, rep == 1);
      const int64_t p = padded_rows(pc.m, pc.e, pc.alignment);
      HostTensor offs_t = int_tensor(offs);
      HostTensor out(pc.dtype, std::vector<int64_t>{p, pc.cols});
      out.fill_bytes(0xAB);
      HostTensor poffs(DType::kInt32, std::vector<int64_t>{pc.e});
      HostTensor out_cpu = out, poffs_cpu = poffs;
      pad_token_groups(x.view(), offs_t.view(), pc.alignment, out_cpu.view(), poffs_cpu.view());

      DeviceTensor dx(x), doffs(offs_t), dout(out), dpoffs(poffs);
      pad_token_groups(dx.view(), doffs.view(), pc.alignment, dout.view(), dpoffs.view());
      EXPECT_EQ(first_byte_diff(out_cpu, dout.to_host(out)), -1) << "pad " << what;
      EXPECT_EQ(first_byte_diff(poffs_cpu, dpoffs.to_host(poffs)), -1) << "padded_offs " << what;

      // Unpad the CPU's padded buffer back: equals x on the grouped rows, zeros past them.
      HostTensor back(pc.dtype, std::vector<int64_t>{pc.m, pc.cols});
      back.fill_bytes(0xCD);
      HostTensor back_cpu = back;
      unpad_token_groups(out_cpu.view(), offs_t.view(), poffs_cpu.view(), back_cpu.view());
      DeviceTensor dy(out_cpu), dpo(poffs_cpu), dback(back);
      unpad_token_groups(dy.view(), doffs.view(), dpo.view(), dback.view());
      EXPECT_EQ(first_byte_diff(back_cpu, dback.to_host(back)), -1) << "unpad " << what;
      if (rep != 1 && pc.m > 0) {  // offsets cover every row: the round trip is exact
        EXPECT_EQ(first_byte_diff(back_cpu, x), -1) << "round trip " << what;
      }
    }
}

// zero_rows_past_groups on the device: bitwise the CPU's for valid offsets (every word width:
// row sizes of 1 to 32 bytes, contiguous and padded rows), and for offsets the CPU would reject
// the end is the last clamped offset min(max(0, offs[0..E-1]), M): nothing out of bounds.
TEST(CudaPad, ZeroRowsPastGroupsVsCpuAndClampedOffsets) {
  F46_SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(5);
  for (DType t : {DType::kUInt8, DType::kBFloat16, DType::kFloat32})
    for (int64_t cols : {1, 3, 8})
      for (int64_t row_stride : {int64_t{0}, cols + 8})
        for (int64_t m : {1, 37, 3000}) {
          HostTensor x(t, std::vector<int64_t>{m, cols}, row_stride);
          for (size_t i = 0; i < x.bytes().size(); ++i)
            static_cast<uint8_t*>(x.data())[i] = static_cast<uint8_t>(gen() | 1);
          const std::vector<int32_t> o = random_offsets(m, 3, gen, true);
          HostTensor offs = int_tensor(o), cpu = x;
          zero_rows_past_groups(cpu, offs);
          DeviceTensor dx(x), doffs(offs);
          zero_rows_past_groups(dx.view(), doffs.view());
          EXPECT_EQ(first_byte_diff(cpu, dx.to_host(x)), -1)
              << dtype_name(t) << " " << m << "x" << cols << " stride " << row_stride;
        }
  // Invalid offsets (the device never reads them on the host): decreasing, past M, negative.
  const std::vector<std::pair<std::vector<int32_t>, int64_t>> bad = {
      {{50, 20}, 50}, {{5, 1 << 30}, 64}, {{-7, -1}, 0}, {{-7, 12, 3}, 12}};
  for (const auto& [o, end] : bad) {
    HostTensor x(DType::kBFloat16, {64, 24});
    x.fill_bytes(0x5A);
    DeviceTensor dx(x), doffs(int_tensor(o));
    zero_rows_past_groups(dx.view(), doffs.view());
    const HostTensor got = dx.to_host(x);  // (64, 24) bf16
    const auto* g = got.bytes().data();
    for (int64_t i = 0; i < 64 * 24 * 2; ++i)
      ASSERT_EQ(g[i], i / (24 * 2) >= end ? 0 : 0x5A) << "end " << end << " byte " << i;
  }
}

}  // namespace
}  // namespace f46::test
