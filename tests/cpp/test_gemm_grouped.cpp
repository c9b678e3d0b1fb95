// Grouped NVFP4 GEMMs on the CPU (N11): M-grouped and K-grouped against an FP64 reference and,
// bitwise, against the dense GEMM on each group's rows / token slice.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "gemm_test_util.h"

namespace f46::test {
namespace {

std::vector<int32_t> cumulative(const std::vector<int32_t>& sizes) {
  std::vector<int32_t> offs(sizes.size());
  std::partial_sum(sizes.begin(), sizes.end(), offs.begin());
  return offs;
}

// ---- M-grouped ------------------------------------------------------------------------------
struct MCase {
  int64_t m, n, k;
  std::vector<int32_t> sizes;  // group sizes; sum <= m (rows past the sum must come out zero)
  AmaxScope a_scope, b_scope;
  int bias;  // 0 none, 1 float32, 2 bf16
  DType out;
};

std::string m_name(const testing::TestParamInfo<MCase>& info) {
  const MCase& c = info.param;
  auto scope = [](AmaxScope s) {
    return s == AmaxScope::kRow ? "row" : (s == AmaxScope::kGroup ? "group" : "tensor");
  };
  return "M" + std::to_string(c.m) + "N" + std::to_string(c.n) + "K" + std::to_string(c.k) + "E" +
         std::to_string(c.sizes.size()) + "_" + scope(c.a_scope) + "_" + scope(c.b_scope) +
         "_bias" + std::to_string(c.bias) + (c.out == DType::kFloat32 ? "_f32" : "_bf16") + "_" +
         std::to_string(info.index);
}

class GroupedM : public testing::TestWithParam<MCase> {
 protected:
  void SetUp() override {
    const MCase& c = GetParam();
    e = static_cast<int64_t>(c.sizes.size());
    a = random_qmatrix(c.m, c.k, 100 + c.m);
    b = random_qmatrix(c.n, c.k, 200 + c.n, e);
    offs_v = cumulative(c.sizes);
    offs = int_tensor(offs_v);
    const int64_t na =
        c.a_scope == AmaxScope::kRow ? c.m : (c.a_scope == AmaxScope::kGroup ? e : 1);
    amax_a = float_tensor(random_amax(na, 31));
    amax_b = float_tensor(random_amax(c.b_scope == AmaxScope::kGroup ? e : 1, 32));
    if (c.bias) {
      const DType t = c.bias == 1 ? DType::kFloat32 : DType::kBFloat16;
      bias = HostTensor(t, {e, c.n});
      const std::vector<float> v = random_values(e * c.n, 33, Dist::kGaussian, 2.0f, t);
      for (int64_t i = 0; i < e * c.n; ++i) bias.set(i, v[i]);
    }
    out = HostTensor(c.out, {c.m, c.n});
    out.fill_bytes(0x5A);  // garbage: every element must be written
    grouped_gemm_m(operand(a, amax_a, c.a_scope, 256), operand(b, amax_b, c.b_scope, 448), offs,
                   c.bias ? bias.view() : TensorView{}, out);
  }
  int64_t group_of(int64_t row) const {
    for (int64_t g = 0; g < e; ++g)
      if (row < offs_v[g]) return g;
    return -1;
  }

  int64_t e = 0;
  QMatrix a, b;
  std::vector<int32_t> offs_v;
  HostTensor offs, amax_a, amax_b, bias, out;
};

TEST_P(GroupedM, MatchesFp64Reference) {
  const MCase& c = GetParam();
  std::vector<double> want;
  std::vector<float> got;
  for (int64_t i = 0; i < c.m; ++i) {
    const int64_t g = group_of(i);
    for (int64_t j = 0; j < c.n; ++j) {
      got.push_back(out.at(i, j));
      if (g < 0) {
        want.push_back(0.0);
        continue;
      }
      const int64_t ia =
          c.a_scope == AmaxScope::kRow ? i : (c.a_scope == AmaxScope::kGroup ? g : 0);
      const double ga = amax_a.ptr<float>()[ia] / (6.0 * 256);
      const double gb = amax_b.ptr<float>()[c.b_scope == AmaxScope::kGroup ? g : 0] / (6.0 * 448);
      double y = ga * gb * dot_ref(a, 0, i, b, g, j, 0, c.k);
      if (c.bias) y += bias.get(g * c.n + j);
      want.push_back(y);
    }
  }
  EXPECT_LT(rel_frobenius(got, want), c.out == DType::kFloat32 ? 1e-6 : 4e-3);
}

TEST_P(GroupedM, EachGroupEqualsDenseGemmBitwise) {
  const MCase& c = GetParam();
  int64_t lo = 0;
  for (int64_t g = 0; g < e; ++g) {
    const int64_t hi = offs_v[g];
    if (hi == lo) continue;
    QMatrix ag = slice_rows(a, lo, hi), bg = slice_rows(b, 0, c.n, g);
    HostTensor amax_ag;
    if (c.a_scope == AmaxScope::kRow)
      amax_ag =
          float_tensor(std::vector<float>(amax_a.ptr<float>() + lo, amax_a.ptr<float>() + hi));
    else
      amax_ag = float_tensor({amax_a.ptr<float>()[c.a_scope == AmaxScope::kGroup ? g : 0]});
    HostTensor amax_bg =
        float_tensor({amax_b.ptr<float>()[c.b_scope == AmaxScope::kGroup ? g : 0]});
    HostTensor bias_g;
    if (c.bias) {
      bias_g = HostTensor(bias.dtype(), {c.n});
      for (int64_t j = 0; j < c.n; ++j) bias_g.set(j, bias.get(g * c.n + j));
    }
    HostTensor dense(c.out, {hi - lo, c.n});
    const AmaxScope sa = c.a_scope == AmaxScope::kRow ? AmaxScope::kRow : AmaxScope::kTensor;
    gemm(operand(ag, amax_ag, sa, 256), operand(bg, amax_bg, AmaxScope::kTensor, 448),
         c.bias ? bias_g.view() : TensorView{}, dense);
    const int64_t es = dtype_size(c.out);
    for (int64_t i = 0; i < hi - lo; ++i)
      ASSERT_EQ(0, std::memcmp(dense.bytes().data() + i * c.n * es,
                               out.bytes().data() + (lo + i) * c.n * es, c.n * es))
          << "group " << g << " row " << lo + i;
    lo = hi;
  }
}

TEST_P(GroupedM, RowsPastLastOffsetAreZero) {
  const MCase& c = GetParam();
  const int64_t es = dtype_size(c.out);
  for (int64_t i = offs_v.back() * c.n * es; i < c.m * c.n * es; ++i)
    ASSERT_EQ(out.bytes()[i], 0) << "byte " << i;
}

const MCase kMCases[] = {
    {8, 16, 32, {3, 0, 5}, AmaxScope::kTensor, AmaxScope::kTensor, 0, DType::kFloat32},
    {8, 16, 32, {3, 0, 5}, AmaxScope::kTensor, AmaxScope::kTensor, 0, DType::kBFloat16},
    {20, 33, 48, {1, 1, 0, 7, 1}, AmaxScope::kGroup, AmaxScope::kGroup, 1, DType::kFloat32},
    {20, 33, 48, {1, 1, 0, 7, 1}, AmaxScope::kGroup, AmaxScope::kGroup, 2, DType::kBFloat16},
    {40, 24, 64, {0, 13, 14}, AmaxScope::kRow, AmaxScope::kGroup, 1, DType::kFloat32},
    {40, 24, 64, {0, 13, 14}, AmaxScope::kRow, AmaxScope::kTensor, 2, DType::kBFloat16},
    {130, 70, 256, {50, 1, 0, 60, 0}, AmaxScope::kGroup, AmaxScope::kTensor, 2, DType::kFloat32},
    {300, 64, 512, {100, 97, 3, 100}, AmaxScope::kTensor, AmaxScope::kGroup, 1, DType::kFloat32},
    {16, 8, 16, {0, 0, 0}, AmaxScope::kGroup, AmaxScope::kGroup, 1, DType::kFloat32},
    {5, 17, 32, {5}, AmaxScope::kRow, AmaxScope::kTensor, 0, DType::kFloat32},
};
INSTANTIATE_TEST_SUITE_P(Shapes, GroupedM, testing::ValuesIn(kMCases), m_name);

TEST(GroupedMScales, NanGroupAmaxPoisonsOnlyThatGroup) {
  QMatrix a = random_qmatrix(12, 32, 1), b = random_qmatrix(8, 32, 2, 3);
  HostTensor offs = int_tensor({4, 8, 12});
  HostTensor amax_a = float_tensor({1.0f, NAN, 2.0f}), amax_b = float_tensor({1.0f, 1.0f, 1.0f});
  HostTensor out(DType::kBFloat16, {12, 8});
  grouped_gemm_m(operand(a, amax_a, AmaxScope::kGroup, 256),
                 operand(b, amax_b, AmaxScope::kGroup, 256), offs, {}, out);
  for (int64_t i = 0; i < 12; ++i)
    for (int64_t j = 0; j < 8; ++j)
      EXPECT_EQ(std::isfinite(out.at(i, j)), i < 4 || i >= 8) << i << "," << j;
}

// ---- K-grouped ------------------------------------------------------------------------------
struct KCase {
  int64_t n, k;
  std::vector<int32_t> sizes;  // token group sizes, multiples of 16
  int64_t extra_tokens;        // tokens past the last offset (multiple of 16), ignored
  AmaxScope a_scope, b_scope;
  DType out;
};

class GroupedK : public testing::TestWithParam<KCase> {
 protected:
  void SetUp() override {
    const KCase& c = GetParam();
    e = static_cast<int64_t>(c.sizes.size());
    offs_v = cumulative(c.sizes);
    t = offs_v.back() + c.extra_tokens;
    a = random_qmatrix(c.n, t, 300 + c.n);  // columnwise dY: (N, T)
    b = random_qmatrix(c.k, t, 400 + c.k);  // columnwise X: (K, T)
    offs = int_tensor(offs_v);
    amax_a = float_tensor(random_amax(c.a_scope == AmaxScope::kGroup ? e : 1, 41));
    amax_b = float_tensor(random_amax(c.b_scope == AmaxScope::kGroup ? e : 1, 42));
    out = HostTensor(c.out, {e, c.n, c.k});
    out.fill_bytes(0xA5);
    grouped_gemm_k(operand(a, amax_a, c.a_scope, 448), operand(b, amax_b, c.b_scope, 448), offs,
                   out);
  }
  float amax(const HostTensor& t, AmaxScope s, int64_t g) const {
    return t.ptr<float>()[s == AmaxScope::kGroup ? g : 0];
  }

  int64_t e = 0, t = 0;
  QMatrix a, b;
  std::vector<int32_t> offs_v;
  HostTensor offs, amax_a, amax_b, out;
};

TEST_P(GroupedK, MatchesFp64Reference) {
  const KCase& c = GetParam();
  std::vector<double> want;
  for (int64_t g = 0; g < e; ++g) {
    const int64_t lo = g ? offs_v[g - 1] : 0, hi = offs_v[g];
    const double s =
        amax(amax_a, c.a_scope, g) / (6.0 * 448) * amax(amax_b, c.b_scope, g) / (6.0 * 448);
    for (int64_t i = 0; i < c.n; ++i)
      for (int64_t j = 0; j < c.k; ++j) want.push_back(s * dot_ref(a, 0, i, b, 0, j, lo, hi));
  }
  EXPECT_LT(rel_frobenius(values(out), want), c.out == DType::kFloat32 ? 1e-6 : 4e-3);
}

TEST_P(GroupedK, EachGroupEqualsDenseGemmOnTokenSliceBitwise) {
  const KCase& c = GetParam();
  const int64_t es = dtype_size(c.out);
  for (int64_t g = 0; g < e; ++g) {
    const int64_t lo = g ? offs_v[g - 1] : 0, hi = offs_v[g];
    const uint8_t* got = out.bytes().data() + g * c.n * c.k * es;
    if (hi == lo) {  // empty group -> zero matrix
      for (int64_t i = 0; i < c.n * c.k * es; ++i) ASSERT_EQ(got[i], 0) << "group " << g;
      continue;
    }
    QMatrix ag = slice_cols(a, lo, hi), bg = slice_cols(b, lo, hi);
    HostTensor ma = float_tensor({amax(amax_a, c.a_scope, g)});
    HostTensor mb = float_tensor({amax(amax_b, c.b_scope, g)});
    HostTensor dense(c.out, {c.n, c.k});
    gemm(operand(ag, ma, AmaxScope::kTensor, 448), operand(bg, mb, AmaxScope::kTensor, 448), {},
         dense);
    ASSERT_EQ(0, std::memcmp(dense.bytes().data(), got, c.n * c.k * es)) << "group " << g;
  }
}

const KCase kKCases[] = {
    {4, 5, {16}, 0, AmaxScope::kTensor, AmaxScope::kTensor, DType::kFloat32},
    {4, 5, {16}, 0, AmaxScope::kTensor, AmaxScope::kTensor, DType::kBFloat16},
    {17, 33, {32, 0, 16, 48}, 32, AmaxScope::kGroup, AmaxScope::kGroup, DType::kFloat32},
    {17, 33, {32, 0, 16, 48}, 32, AmaxScope::kGroup, AmaxScope::kTensor, DType::kBFloat16},
    {64, 40, {0, 256, 0}, 0, AmaxScope::kTensor, AmaxScope::kGroup, DType::kFloat32},
    {30, 70, {128, 384, 16, 0, 112}, 16, AmaxScope::kGroup, AmaxScope::kGroup, DType::kFloat32},
    {8, 8, {0, 0}, 16, AmaxScope::kGroup, AmaxScope::kGroup, DType::kFloat32},
};
INSTANTIATE_TEST_SUITE_P(Shapes, GroupedK, testing::ValuesIn(kKCases));

TEST(GroupedKScales, NanGroupAmaxPoisonsOnlyThatGroup) {
  QMatrix a = random_qmatrix(6, 64, 1), b = random_qmatrix(5, 64, 2);
  HostTensor offs = int_tensor({16, 48, 64});
  HostTensor amax_a = float_tensor({1.0f, 2.0f, 3.0f}), amax_b = float_tensor({1.0f, NAN, 1.0f});
  HostTensor out(DType::kFloat32, {3, 6, 5});
  grouped_gemm_k(operand(a, amax_a, AmaxScope::kGroup, 448),
                 operand(b, amax_b, AmaxScope::kGroup, 448), offs, out);
  for (int64_t i = 0; i < 3 * 6 * 5; ++i) EXPECT_EQ(std::isfinite(out.get(i)), i / 30 != 1) << i;
}

}  // namespace
}  // namespace f46::test
