// Dense NVFP4 GEMM on the CPU (N10): FP64 reference, bf16 == round(fp32), row independence,
// per-row scales, bias, NaN amax, and a throughput check on a training-demo shape.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "cpu/gemm_kernel.h"
#include "gemm_test_util.h"

namespace f46::test {
namespace {

struct DenseCase {
  int64_t m, n, k;
  AmaxScope a_scope;
  int bias;  // 0 none, 1 float32, 2 bf16
  float bound_a, bound_b;
};

std::string case_name(const testing::TestParamInfo<DenseCase>& info) {
  const DenseCase& c = info.param;
  return "M" + std::to_string(c.m) + "N" + std::to_string(c.n) + "K" + std::to_string(c.k) +
         (c.a_scope == AmaxScope::kRow ? "_row" : "_tensor") + "_bias" + std::to_string(c.bias) +
         "_b" + std::to_string(static_cast<int>(c.bound_a)) +
         std::to_string(static_cast<int>(c.bound_b));
}

class DenseGemm : public testing::TestWithParam<DenseCase> {
 protected:
  void SetUp() override {
    const DenseCase& c = GetParam();
    a = random_qmatrix(c.m, c.k, 11 + c.m);
    b = random_qmatrix(c.n, c.k, 23 + c.n);
    amax_a = float_tensor(random_amax(c.a_scope == AmaxScope::kRow ? c.m : 1, 5));
    amax_b = float_tensor(random_amax(1, 6));
    if (c.bias) {
      const DType t = c.bias == 1 ? DType::kFloat32 : DType::kBFloat16;
      bias = HostTensor(t, {c.n});
      const std::vector<float> v = random_values(c.n, 7, Dist::kGaussian, 3.0f, t);
      for (int64_t j = 0; j < c.n; ++j) bias.set(j, v[j]);
    }
  }
  QuantizedOperand op_a() { return operand(a, amax_a, GetParam().a_scope, GetParam().bound_a); }
  QuantizedOperand op_b() { return operand(b, amax_b, AmaxScope::kTensor, GetParam().bound_b); }
  TensorView bias_view() { return GetParam().bias ? bias.view() : TensorView{}; }

  // FP64 reference of out[m, n].
  double reference(int64_t m, int64_t n) {
    const DenseCase& c = GetParam();
    const double ga =
        static_cast<double>(amax_a.ptr<float>()[c.a_scope == AmaxScope::kRow ? m : 0]) /
        (6.0 * c.bound_a);
    const double gb = static_cast<double>(amax_b.ptr<float>()[0]) / (6.0 * c.bound_b);
    double y = ga * gb * dot_ref(a, 0, m, b, 0, n, 0, c.k);
    if (c.bias) y += bias.get(n);
    return y;
  }

  QMatrix a, b;
  HostTensor amax_a, amax_b, bias;
};

TEST_P(DenseGemm, MatchesFp64Reference) {
  const DenseCase& c = GetParam();
  HostTensor out(DType::kFloat32, {c.m, c.n});
  gemm(op_a(), op_b(), bias_view(), out);
  std::vector<double> want;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) want.push_back(reference(i, j));
  EXPECT_LT(rel_frobenius(values(out), want), 1e-6);
}

TEST_P(DenseGemm, Bf16OutputIsRoundedFp32Output) {
  const DenseCase& c = GetParam();
  HostTensor out32(DType::kFloat32, {c.m, c.n}), out16(DType::kBFloat16, {c.m, c.n});
  gemm(op_a(), op_b(), bias_view(), out32);
  gemm(op_a(), op_b(), bias_view(), out16);
  const uint16_t* h = out16.ptr<uint16_t>();
  const float* f = out32.ptr<float>();
  for (int64_t i = 0; i < c.m * c.n; ++i) ASSERT_EQ(h[i], float_to_bf16(f[i])) << "element " << i;
}

// Any slice of A's rows gives the same rows of the output, bitwise (M-position independence).
TEST_P(DenseGemm, RowSlicesAreBitwiseEqual) {
  const DenseCase& c = GetParam();
  HostTensor out(DType::kFloat32, {c.m, c.n});
  gemm(op_a(), op_b(), bias_view(), out);
  const int64_t r0 = c.m / 3, r1 = std::min(c.m, r0 + 1 + c.m / 2);
  QMatrix as = slice_rows(a, r0, r1);
  HostTensor amax_s = amax_a;
  if (c.a_scope == AmaxScope::kRow) {
    amax_s = float_tensor(std::vector<float>(amax_a.ptr<float>() + r0, amax_a.ptr<float>() + r1));
  }
  HostTensor part(DType::kFloat32, {r1 - r0, c.n});
  gemm(operand(as, amax_s, c.a_scope, c.bound_a), op_b(), bias_view(), part);
  for (int64_t i = 0; i < r1 - r0; ++i)
    for (int64_t j = 0; j < c.n; ++j)
      ASSERT_TRUE(same_bits(part.at(i, j), out.at(r0 + i, j))) << "row " << r0 + i << " col " << j;
}

INSTANTIATE_TEST_SUITE_P(Shapes, DenseGemm,
                         testing::Values(DenseCase{1, 1, 16, AmaxScope::kTensor, 0, 256, 256},
                                         DenseCase{3, 5, 32, AmaxScope::kTensor, 1, 256, 448},
                                         DenseCase{17, 33, 48, AmaxScope::kRow, 0, 448, 256},
                                         DenseCase{13, 16, 64, AmaxScope::kRow, 2, 256, 256},
                                         DenseCase{64, 128, 256, AmaxScope::kTensor, 2, 448, 448},
                                         DenseCase{100, 70, 512, AmaxScope::kRow, 1, 256, 448},
                                         DenseCase{130, 300, 272, AmaxScope::kTensor, 1, 256, 256},
                                         DenseCase{7, 19, 1024, AmaxScope::kTensor, 0, 256, 256}),
                         case_name);

// Row scope: y = mul(mul(acc, s), amax[m]) with s = mul(1/(6 bound_a), gB), exactly (N10).
TEST(DenseGemmScales, RowScopeEpilogueIsExact) {
  QMatrix a = random_qmatrix(5, 32, 1), b = random_qmatrix(4, 32, 2);
  HostTensor amax_row = float_tensor({1.0f, 3.0f, 0.7f, 11.0f, 2.5f});
  HostTensor one = float_tensor({1.0f});  // gA = div(1, 6 * 256): the row-scope s exactly
  HostTensor amax_b = float_tensor({4.25f});
  HostTensor out_row(DType::kFloat32, {5, 4}), out_one(DType::kFloat32, {5, 4});
  gemm(operand(a, amax_row, AmaxScope::kRow, 256), operand(b, amax_b, AmaxScope::kTensor, 256), {},
       out_row);
  gemm(operand(a, one, AmaxScope::kTensor, 256), operand(b, amax_b, AmaxScope::kTensor, 256), {},
       out_one);  // out_one = mul(acc, 1 * gB) = mul(acc, s)
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_TRUE(same_bits(out_row.at(i, j), out_one.at(i, j) * amax_row.ptr<float>()[i]));
}

TEST(DenseGemmScales, NanAmaxGivesNonFiniteOutput) {
  QMatrix a = random_qmatrix(6, 32, 3), b = random_qmatrix(5, 32, 4);
  HostTensor amax_b = float_tensor({2.0f});
  HostTensor nan_t = float_tensor({NAN});
  HostTensor out(DType::kBFloat16, {6, 5});
  gemm(operand(a, nan_t, AmaxScope::kTensor, 256), operand(b, amax_b, AmaxScope::kTensor, 256), {},
       out);
  for (float v : values(out)) EXPECT_FALSE(std::isfinite(v));
  // Row scope: only the NaN row is non-finite.
  HostTensor amax_row = float_tensor({1.0f, 2.0f, NAN, 1.0f, 3.0f, 0.5f});
  gemm(operand(a, amax_row, AmaxScope::kRow, 256), operand(b, amax_b, AmaxScope::kTensor, 256), {},
       out);
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(std::isfinite(out.at(i, j)), i != 2) << i << "," << j;
  // NaN in B's amax poisons everything.
  HostTensor one = float_tensor({1.0f});
  gemm(operand(a, one, AmaxScope::kTensor, 256), operand(b, nan_t, AmaxScope::kTensor, 256), {},
       out);
  for (float v : values(out)) EXPECT_FALSE(std::isfinite(v));
}

// The AVX-512, AVX2 and SSE2 kernels compute the same per-element sequence: bitwise equal.
TEST(DenseGemmSimd, EverySimdPathIsBitwiseEqual) {
  using cpu::gemm_detail::Simd;
  QMatrix a = random_qmatrix(37, 544, 12), b = random_qmatrix(45, 544, 13);
  HostTensor amax_a = float_tensor({2.0f}), amax_b = float_tensor({3.0f});
  const auto qa = operand(a, amax_a, AmaxScope::kTensor, 256);
  const auto qb = operand(b, amax_b, AmaxScope::kTensor, 448);
  cpu::gemm_detail::force_simd(Simd::kSse2);
  HostTensor ref(DType::kFloat32, {37, 45});
  gemm(qa, qb, {}, ref);
  int checked = 0;
  for (Simd s : {Simd::kAvx2, Simd::kAvx512}) {
    if (!cpu::gemm_detail::simd_supported(s)) continue;
    cpu::gemm_detail::force_simd(s);
    HostTensor out(DType::kFloat32, {37, 45});
    gemm(qa, qb, {}, out);
    EXPECT_EQ(0, std::memcmp(out.bytes().data(), ref.bytes().data(), ref.bytes().size()))
        << "simd level " << static_cast<int>(s);
    ++checked;
  }
  cpu::gemm_detail::force_simd(Simd::kAuto);
  std::printf("[ simd ] compared %d wider path(s) with SSE2\n", checked);
  std::vector<double> want;
  for (int64_t i = 0; i < 37; ++i)
    for (int64_t j = 0; j < 45; ++j)
      want.push_back(2.0 / 1536 * 3.0 / 2688 * dot_ref(a, 0, i, b, 0, j, 0, 544));
  EXPECT_LT(rel_frobenius(values(ref), want), 1e-6);  // the SSE2 path is right too
}

// Training-demo shape: correct on sampled entries (speed is measured by benchmarks, not here).
TEST(DenseGemmLarge, DemoShape) {
  const int64_t m = 4096, k = 256, n = 1024;
  QMatrix a = random_qmatrix(m, k, 8), b = random_qmatrix(n, k, 9);
  HostTensor amax_a = float_tensor({3.0f}), amax_b = float_tensor({0.5f});
  HostTensor out(DType::kBFloat16, {m, n});
  const auto qa = operand(a, amax_a, AmaxScope::kTensor, 256);
  const auto qb = operand(b, amax_b, AmaxScope::kTensor, 256);
  gemm(qa, qb, {}, out);
  const double g = 3.0 / 1536.0 * 0.5 / 1536.0;
  for (int64_t i = 0; i < m; i += 509)
    for (int64_t j = 0; j < n; j += 97) {
      const double want = g * dot_ref(a, 0, i, b, 0, j, 0, k);
      EXPECT_NEAR(out.at(i, j), want, std::fabs(want) * 8e-3 + 1e-30) << i << "," << j;
    }
}

}  // namespace
}  // namespace f46::test
