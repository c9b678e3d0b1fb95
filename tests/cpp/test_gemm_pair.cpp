// The GEMM pairs on the CPU (f46::grouped_gemm_m_pair / grouped_gemm_k_pair): each output
// bitwise the single GEMM's, and the argument errors naming the pair's own arguments.
#include <gtest/gtest.h>

#include <vector>

#include "gemm_test_util.h"

namespace f46::test {
namespace {

struct MPair {
  int64_t m = 70, n = 48, k = 64, e = 3;
  QMatrix a = random_qmatrix(m, k, 11), b1 = random_qmatrix(n, k, 12, e),
          b2 = random_qmatrix(n, k, 13, e);
  HostTensor am = float_tensor(random_amax(e, 14)), bm1 = float_tensor(random_amax(e, 15)),
             bm2 = float_tensor(random_amax(e, 16));
  HostTensor offs = int_tensor({20, 20, 61});  // an empty group, rows past the last
  QuantizedOperand qa = operand(a, am, AmaxScope::kGroup, 256),
                   qb1 = operand(b1, bm1, AmaxScope::kGroup, 448),
                   qb2 = operand(b2, bm2, AmaxScope::kGroup, 448);
};

TEST(GemmPair, MGroupedEachEqualsTheSingleGemmBitwise) {
  MPair p;
  for (DType out : {DType::kBFloat16, DType::kFloat32}) {
    HostTensor o1(out, {p.m, p.n}), o2(out, {p.m, p.n}), s1(out, {p.m, p.n}), s2(out, {p.m, p.n});
    grouped_gemm_m_pair(p.qa, p.qb1, p.qb2, p.offs.view(), o1.view(), o2.view());
    grouped_gemm_m(p.qa, p.qb1, p.offs.view(), TensorView{}, s1.view());
    grouped_gemm_m(p.qa, p.qb2, p.offs.view(), TensorView{}, s2.view());
    EXPECT_EQ(o1.bytes(), s1.bytes());
    EXPECT_EQ(o2.bytes(), s2.bytes());
    EXPECT_NE(o1.bytes(), o2.bytes());  // two different weights
  }
}

TEST(GemmPair, KGroupedEachEqualsTheSingleGemmBitwise) {
  const int64_t n = 32, k = 48, t = 96, e = 3;
  QMatrix a1 = random_qmatrix(n, t, 21), a2 = random_qmatrix(n, t, 22),
          b = random_qmatrix(k, t, 23);
  HostTensor am1 = float_tensor(random_amax(e, 24)), am2 = float_tensor(random_amax(e, 25)),
             bm = float_tensor(random_amax(e, 26));
  QuantizedOperand qa1 = operand(a1, am1, AmaxScope::kGroup, 448),
                   qa2 = operand(a2, am2, AmaxScope::kGroup, 448),
                   qb = operand(b, bm, AmaxScope::kGroup, 256);
  HostTensor offs = int_tensor({32, 32, 80});
  HostTensor o1(DType::kFloat32, {e, n, k}), o2(DType::kFloat32, {e, n, k}),
      s1(DType::kFloat32, {e, n, k}), s2(DType::kFloat32, {e, n, k});
  grouped_gemm_k_pair(qa1, qa2, qb, offs.view(), o1.view(), o2.view());
  grouped_gemm_k(qa1, qb, offs.view(), s1.view());
  grouped_gemm_k(qa2, qb, offs.view(), s2.view());
  EXPECT_EQ(o1.bytes(), s1.bytes());
  EXPECT_EQ(o2.bytes(), s2.bytes());
}

TEST(GemmPair, ErrorsNameThePairsArguments) {
  MPair p;
  HostTensor o1(DType::kBFloat16, {p.m, p.n}), o2(DType::kBFloat16, {p.m, p.n});
  QMatrix wide = random_qmatrix(p.n + 16, p.k, 17, p.e);
  QuantizedOperand qw = operand(wide, p.bm2, AmaxScope::kGroup, 448);
  expect_error([&] { grouped_gemm_m_pair(p.qa, p.qb1, qw, p.offs.view(), o1.view(), o2.view()); },
               {"out2"});  // out2 (M, N) against b2's N + 16
  HostTensor o2w(DType::kBFloat16, {p.m, p.n + 16});
  expect_error([&] { grouped_gemm_m_pair(p.qa, p.qb1, qw, p.offs.view(), o1.view(), o2w.view()); },
               {"grouped_gemm_m_pair", "b1.codes", "b2.codes", "one shape"});
  expect_error(
      [&] { grouped_gemm_m_pair(p.qa, p.qb1, p.qb2, p.offs.view(), o1.view(), o1.view()); },
      {"out1", "out2"});
  QMatrix short_a = random_qmatrix(32, 96, 27);
  HostTensor am = float_tensor(random_amax(3, 28));
  QuantizedOperand qs = operand(short_a, am, AmaxScope::kGroup, 448);
  QMatrix a1 = random_qmatrix(32, 64, 29), b = random_qmatrix(48, 64, 30);
  QuantizedOperand q1 = operand(a1, am, AmaxScope::kGroup, 448),
                   qb = operand(b, am, AmaxScope::kGroup, 256);
  HostTensor offs = int_tensor({16, 32, 64}), k1(DType::kFloat32, {3, 32, 48}),
             k2(DType::kFloat32, {3, 32, 48});
  expect_error([&] { grouped_gemm_k_pair(q1, qs, qb, offs.view(), k1.view(), k2.view()); },
               {"grouped_gemm_k_pair", "a2.codes"});  // a2 has T = 96, b T = 64
}

}  // namespace
}  // namespace f46::test
