// f46::amax on the CPU (N9): tensor / rows / groups against a direct host computation, NaN and
// Inf propagation, empty groups, strided bf16/fp16 inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_quantize_util.h"

namespace f46 {
namespace {

using test::HostTensor;

class AmaxScopes : public ::testing::TestWithParam<DType> {};

TEST_P(AmaxScopes, MatchHostComputation) {
  const int64_t R = 301, C = 48;
  const HostTensor x =
      test::random_matrix(GetParam(), R, C, 71, test::Dist::kStudentT, 2.0f, /*row_stride=*/56);
  const std::vector<int32_t> offs{0, 100, 100, 250};  // empty groups; rows 250.. in none
  std::vector<float> rows(R, 0.0f), groups(offs.size(), 0.0f);
  float all = 0.0f;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) {
      const float a = std::fabs(x.at(r, c));
      rows[r] = std::max(rows[r], a);
      all = std::max(all, a);
      for (size_t g = 0; g < offs.size(); ++g)
        if (r >= (g ? offs[g - 1] : 0) && r < offs[g]) groups[g] = std::max(groups[g], a);
    }
  EXPECT_EQ(test::amax_host(x, AmaxScope::kTensor)[0], all);
  EXPECT_EQ(test::amax_host(x, AmaxScope::kRow), rows);
  EXPECT_EQ(test::amax_host(x, AmaxScope::kGroup, offs), groups);
  EXPECT_EQ(groups[0], 0.0f);
  EXPECT_EQ(groups[2], 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AmaxScopes,
                         ::testing::Values(DType::kBFloat16, DType::kFloat16, DType::kFloat32));

TEST(AmaxNonFinite, NaNAndInfPropagate) {
  std::vector<float> v = test::random_values(40 * 32, 72);
  v[3 * 32 + 1] = -INFINITY;  // row 3, group 0
  v[25 * 32 + 9] = NAN;       // row 25, group 1
  v[33 * 32 + 2] = INFINITY;  // row 33, group 2
  v[34 * 32 + 2] = -NAN;      // row 34, group 2: NaN beats Inf
  const HostTensor x = test::make_matrix(DType::kFloat32, 40, 32, v);
  EXPECT_TRUE(std::isnan(test::amax_host(x, AmaxScope::kTensor)[0]));
  const auto rows = test::amax_host(x, AmaxScope::kRow);
  EXPECT_EQ(rows[3], INFINITY);
  EXPECT_TRUE(std::isnan(rows[25]));
  EXPECT_EQ(rows[33], INFINITY);
  EXPECT_TRUE(std::isnan(rows[34]));
  EXPECT_TRUE(std::isfinite(rows[0]));
  const auto g = test::amax_host(x, AmaxScope::kGroup, {16, 32, 40});
  EXPECT_EQ(g[0], INFINITY);
  EXPECT_TRUE(std::isnan(g[1]));
  EXPECT_TRUE(std::isnan(g[2]));
}

TEST(AmaxNonFinite, Bf16NaN) {
  std::vector<float> v(16 * 16, 1.0f);
  v[200] = NAN;
  const HostTensor x = test::make_matrix(DType::kBFloat16, 16, 16, v);
  EXPECT_TRUE(std::isnan(test::amax_host(x, AmaxScope::kTensor)[0]));
  EXPECT_TRUE(std::isnan(test::amax_host(x, AmaxScope::kTensor, {}, true)[0]));
}

TEST(AmaxEdge, EmptyAndZero) {
  HostTensor x(DType::kFloat32, {0, 16});
  EXPECT_EQ(test::amax_host(x, AmaxScope::kTensor)[0], 0.0f);
  HostTensor z(DType::kFloat32, {4, 16});
  EXPECT_EQ(test::amax_host(z, AmaxScope::kTensor)[0], 0.0f);
  z.set_at(2, 3, -0.0f);
  EXPECT_FALSE(std::signbit(test::amax_host(z, AmaxScope::kTensor)[0]));
}

}  // namespace
}  // namespace f46
