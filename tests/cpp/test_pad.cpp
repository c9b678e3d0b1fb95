// Token-group padding (N12): padded_rows bound, pad/unpad round trip for every row dtype and
// alignment, zero padding rows, padded_offs, and validation messages.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>

#include "gemm_test_util.h"

namespace f46::test {
namespace {

int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

TEST(PaddedRows, IsAMultipleOfAlignmentAndBoundsEveryGroupSplit) {
  for (int64_t a : {1, 2, 3, 16, 128}) {
    for (int64_t e = 1; e <= 4; ++e) {
      for (int64_t m = 0; m <= 40; m += 7) {
        const int64_t p = padded_rows(m, e, a);
        EXPECT_EQ(p % a, 0);
        EXPECT_GE(p, m);
        // Worst case: e - 1 groups of one row and the rest in the last (or all in one).
        int64_t worst = 0;
        std::mt19937 gen(static_cast<unsigned>(m * 31 + e * 7 + a));
        for (int trial = 0; trial < 200; ++trial) {
          std::vector<int64_t> cut(static_cast<size_t>(e - 1));
          for (auto& c : cut) c = std::uniform_int_distribution<int64_t>(0, m)(gen);
          std::sort(cut.begin(), cut.end());
          int64_t prev = 0, total = 0;
          for (int64_t c : cut) total += round_up(c - prev, a), prev = c;
          total += round_up(m - prev, a);
          worst = std::max(worst, total);
        }
        EXPECT_LE(worst, p) << "m " << m << " e " << e << " a " << a;
      }
    }
  }
  EXPECT_EQ(padded_rows(0, 1, 1), 0);
  EXPECT_EQ(padded_rows(5, 2, 4), 12);  // round_up(5 + 6, 4)
}

struct PadCase {
  DType dtype;
  int64_t m, c, alignment;
  std::vector<int32_t> sizes;  // sum <= m
};

class Pad : public testing::TestWithParam<PadCase> {};

TEST_P(Pad, RoundTripZeroPaddingAndOffsets) {
  const PadCase& pc = GetParam();
  const int64_t e = static_cast<int64_t>(pc.sizes.size());
  std::vector<int32_t> offs_v(pc.sizes.size());
  std::partial_sum(pc.sizes.begin(), pc.sizes.end(), offs_v.begin());
  HostTensor x(pc.dtype, {pc.m, pc.c});
  std::mt19937 gen(7);
  for (size_t i = 0; i < x.bytes().size(); ++i)
    static_cast<uint8_t*>(x.data())[i] = static_cast<uint8_t>(gen() | 1);  // nonzero bytes
  HostTensor offs = int_tensor(offs_v);
  const int64_t p = padded_rows(pc.m, e, pc.alignment);
  HostTensor padded(pc.dtype, {p, pc.c}), poffs(DType::kInt32, {e});
  padded.fill_bytes(0xEE);
  poffs.fill_bytes(0xEE);
  pad_token_groups(x, offs, pc.alignment, padded, poffs);

  const int64_t rb = pc.c * dtype_size(pc.dtype);
  int64_t src = 0, dst = 0;
  std::vector<bool> used(static_cast<size_t>(p), false);
  for (int64_t g = 0; g < e; ++g) {
    const int64_t size = offs_v[g] - src;
    for (int64_t r = 0; r < size; ++r) {
      ASSERT_EQ(0, std::memcmp(padded.bytes().data() + (dst + r) * rb,
                               x.bytes().data() + (src + r) * rb, rb))
          << "group " << g << " row " << r;
      used[dst + r] = true;
    }
    dst += round_up(size, pc.alignment);
    src = offs_v[g];
    EXPECT_EQ(poffs.ptr<int32_t>()[g], dst) << "padded_offs[" << g << "]";
    EXPECT_EQ(dst % pc.alignment, 0);
  }
  for (int64_t r = 0; r < p; ++r) {
    if (used[r]) continue;
    for (int64_t b = 0; b < rb; ++b)
      ASSERT_EQ(padded.bytes()[r * rb + b], 0) << "padding row " << r << " not zero";
  }

  HostTensor back(pc.dtype, {pc.m, pc.c});
  back.fill_bytes(0xEE);
  unpad_token_groups(padded, offs, poffs, back);
  const int64_t valid = offs_v.back() * rb;
  EXPECT_EQ(0, std::memcmp(back.bytes().data(), x.bytes().data(), valid));
  for (int64_t b = valid; b < pc.m * rb; ++b) ASSERT_EQ(back.bytes()[b], 0) << "byte " << b;
}

const PadCase kPadCases[] = {
    {DType::kBFloat16, 10, 8, 4, {3, 0, 5}},
    {DType::kFloat16, 7, 3, 1, {2, 5}},
    {DType::kFloat32, 33, 5, 16, {1, 16, 0, 15}},
    {DType::kUInt8, 20, 17, 3, {20}},
    {DType::kUInt8, 300, 16, 128, {0, 129, 1, 0, 100}},
    {DType::kBFloat16, 12, 4, 8, {0, 0}},
    {DType::kFloat32, 9, 2, 5, {4}},  // rows past offs[-1] of x are dropped, zero after unpad
};
INSTANTIATE_TEST_SUITE_P(Cases, Pad, testing::ValuesIn(kPadCases));

TEST(PadValidation, ErrorsNameTheArgument) {
  HostTensor x(DType::kFloat32, {8, 4});
  HostTensor offs = int_tensor({3, 8});
  HostTensor out(DType::kFloat32, {padded_rows(8, 2, 4), 4}), poffs(DType::kInt32, {2});
  expect_error([&] { pad_token_groups(x, offs, 0, out, poffs); }, {"alignment"});
  HostTensor small(DType::kFloat32, {8, 4});
  expect_error([&] { pad_token_groups(x, offs, 4, small, poffs); }, {"out", "padded_rows"});
  HostTensor wrong_t(DType::kBFloat16, {padded_rows(8, 2, 4), 4});
  expect_error([&] { pad_token_groups(x, offs, 4, wrong_t, poffs); }, {"out", "dtype"});
  HostTensor bad_offs = int_tensor({5, 3});
  expect_error([&] { pad_token_groups(x, bad_offs, 4, out, poffs); }, {"offs", "non-decreasing"});
  HostTensor big_offs = int_tensor({3, 9});
  expect_error([&] { pad_token_groups(x, big_offs, 4, out, poffs); }, {"offs", "exceeds"});
  HostTensor f_offs = float_tensor({3.0f, 8.0f});
  expect_error([&] { pad_token_groups(x, f_offs, 4, out, poffs); }, {"offs", "int32"});
  HostTensor poffs3(DType::kInt32, {3});
  expect_error([&] { pad_token_groups(x, offs, 4, out, poffs3); }, {"padded_offs"});
  expect_error([&] { pad_token_groups(x, offs, 4, x, poffs); }, {"out"});
  expect_error([&] { padded_rows(-1, 1, 1); }, {"m"});
  expect_error([&] { padded_rows(1, 0, 1); }, {"num_groups"});
  expect_error([&] { padded_rows(1, 1, 0); }, {"alignment"});

  pad_token_groups(x, offs, 4, out, poffs);
  HostTensor back(DType::kFloat32, {8, 4});
  HostTensor tight = int_tensor({2, 8});  // group 0 has 3 rows but only 2 padded rows
  expect_error([&] { unpad_token_groups(out, offs, tight, back); }, {"padded_offs", "group 0"});
  HostTensor poffs1 = int_tensor({4});
  expect_error([&] { unpad_token_groups(out, offs, poffs1, back); }, {"padded_offs", "groups"});
  HostTensor back_t(DType::kFloat16, {8, 4});
  expect_error([&] { unpad_token_groups(out, offs, poffs, back_t); }, {"out", "dtype"});
  HostTensor back_c(DType::kFloat32, {8, 5});
  expect_error([&] { unpad_token_groups(out, offs, poffs, back_c); }, {"out", "columns"});
  HostTensor short_back(DType::kFloat32, {6, 4});
  expect_error([&] { unpad_token_groups(out, offs, poffs, short_back); }, {"offs", "exceeds"});
  HostTensor far = int_tensor({4, 100});
  expect_error([&] { unpad_token_groups(out, offs, far, back); }, {"padded_offs", "exceeds"});
}

// N11: rows at and past offs[E-1] are outside every group. zero_rows_past_groups zeroes exactly
// those rows, in place, and leaves every byte of the others (row padding beyond C included).
TEST(ZeroRowsPastGroups, ZeroesOnlyTheRowsOutsideEveryGroup) {
  std::mt19937 gen(11);
  for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kUInt8}) {
    for (int64_t row_stride : {int64_t{0}, int64_t{9}}) {  // 0: contiguous (C = 5)
      for (const std::vector<int32_t>& o :
           {std::vector<int32_t>{0}, std::vector<int32_t>{2, 2, 7}, std::vector<int32_t>{4, 9},
            std::vector<int32_t>{0, 0}}) {
        HostTensor x(t, std::vector<int64_t>{9, 5}, row_stride);
        for (size_t i = 0; i < x.bytes().size(); ++i)
          static_cast<uint8_t*>(x.data())[i] = static_cast<uint8_t>(gen() | 1);
        const HostTensor before = x;
        zero_rows_past_groups(x, int_tensor(o));
        const int64_t es = dtype_size(t), pitch = x.view().strides[0] * es;
        const auto* b = before.bytes().data();
        const auto* a = static_cast<const uint8_t*>(x.data());
        for (int64_t r = 0; r < 9; ++r)
          for (int64_t k = 0; k < pitch && r * pitch + k < static_cast<int64_t>(x.bytes().size());
               ++k) {
            const bool zeroed = r >= o.back() && k < 5 * es;
            EXPECT_EQ(a[r * pitch + k], zeroed ? 0 : b[r * pitch + k])
                << dtype_name(t) << " stride " << row_stride << " end " << o.back() << " row " << r
                << " byte " << k;
          }
      }
    }
  }
  HostTensor x(DType::kFloat32, {8, 4});
  expect_error([&] { zero_rows_past_groups(x, int_tensor({3, 9})); }, {"offs", "exceeds"});
  expect_error([&] { zero_rows_past_groups(x, int_tensor({5, 3})); }, {"offs", "non-decreasing"});
  expect_error([&] { zero_rows_past_groups(x, float_tensor({3.0f})); }, {"offs", "int32"});
  HostTensor x3(DType::kFloat32, {2, 4, 4});
  expect_error([&] { zero_rows_past_groups(x3, int_tensor({1})); }, {"x", "2-D"});
}

}  // namespace
}  // namespace f46::test
