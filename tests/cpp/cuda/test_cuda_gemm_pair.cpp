// The GEMM pairs on CUDA (f46::grouped_gemm_m_pair / grouped_gemm_k_pair, src/cuda/gemm/
// gemm_launch.cpp): one operand's BF16 copy made once and read by both GEMMs, each output bitwise
// the single GEMM's on the same inputs, under plan (a) (both GEMMs copy-reading), plan (c) (A's
// copy only), plan (b) (no copy), the automatic rule, and a pair whose two GEMMs take different
// routes (bf16 and fp32 outputs under a forced plan (c): the fp32 one falls back to plan (a) and
// reads the copy plan (c) made); uneven, empty and single-row groups, rows past the last group.
#include <string>
#include <vector>

#include "cuda/test_cuda_gemm_plan.h"

namespace f46::test {
namespace {

const GemmPlan kPlans[] = {GemmPlan::kDequantBf16, GemmPlan::kWeight4, GemmPlan::kFusedFp4,
                           GemmPlan::kAuto};

TEST(CudaGemmPair, MGroupedEachEqualsTheSingleGemmBitwise) {
  SKIP_WITHOUT_CUDA();
  struct Case {
    int64_t m, n, k;
    std::vector<int32_t> sizes;
    DType out1, out2;
  };
  for (const Case& c :
       {Case{330, 272, 256, {150, 1, 0, 109, 0}, DType::kBFloat16, DType::kBFloat16},
        Case{600, 256, 1024, {200, 197, 3, 200}, DType::kBFloat16, DType::kFloat32},
        Case{64, 40, 128, {0, 0}, DType::kFloat32, DType::kFloat32}}) {
    const int64_t e = static_cast<int64_t>(c.sizes.size());
    QMatrix a = random_qmatrix(c.m, c.k, 71);
    QMatrix b1 = random_qmatrix(c.n, c.k, 72, e), b2 = random_qmatrix(c.n, c.k, 73, e);
    HostTensor am = float_tensor(random_amax(e, 74)), bm1 = float_tensor(random_amax(e, 75)),
               bm2 = float_tensor(random_amax(e, 76));
    DeviceOperand da(a, am, AmaxScope::kGroup, 256), db1(b1, bm1, AmaxScope::kGroup, 448),
        db2(b2, bm2, AmaxScope::kGroup, 448);
    GemmDeviceTensor doffs(int_tensor(cumulative(c.sizes)));
    for (GemmPlan plan : kPlans) {
      GemmDeviceTensor p1(garbage(c.out1, {c.m, c.n})), p2(garbage(c.out2, {c.m, c.n}));
      GemmDeviceTensor s1(garbage(c.out1, {c.m, c.n})), s2(garbage(c.out2, {c.m, c.n}));
      grouped_gemm_m_pair(da.op, db1.op, db2.op, doffs.view(), p1.view(), p2.view(),
                          forced_plan(plan));
      grouped_gemm_m(da.op, db1.op, doffs.view(), TensorView{}, s1.view(), forced_plan(plan));
      grouped_gemm_m(da.op, db2.op, doffs.view(), TensorView{}, s2.view(), forced_plan(plan));
      const std::string what =
          "M " + std::to_string(c.m) + " plan " + std::to_string(static_cast<int>(plan));
      EXPECT_TRUE(bytes_equal(p1.download(), 0, s1.download(), 0, c.m * c.n * dtype_size(c.out1)))
          << what << " out1";
      EXPECT_TRUE(bytes_equal(p2.download(), 0, s2.download(), 0, c.m * c.n * dtype_size(c.out2)))
          << what << " out2";
    }
  }
}

TEST(CudaGemmPair, KGroupedEachEqualsTheSingleGemmBitwise) {
  SKIP_WITHOUT_CUDA();
  const int64_t n = 96, k = 128, t = 256;
  for (DType out : {DType::kBFloat16, DType::kFloat32}) {
    for (const std::vector<int32_t>& ends :
         {std::vector<int32_t>{64, 64, 192, 240}, std::vector<int32_t>{0, 0}}) {
      const int64_t e = static_cast<int64_t>(ends.size());
      QMatrix a1 = random_qmatrix(n, t, 81), a2 = random_qmatrix(n, t, 82);
      QMatrix b = random_qmatrix(k, t, 83);
      HostTensor am1 = float_tensor(random_amax(e, 84)), am2 = float_tensor(random_amax(e, 85)),
                 bm = float_tensor(random_amax(e, 86));
      DeviceOperand da1(a1, am1, AmaxScope::kGroup, 448), da2(a2, am2, AmaxScope::kGroup, 448),
          db(b, bm, AmaxScope::kGroup, 256);
      GemmDeviceTensor doffs(int_tensor(ends));
      GemmDeviceTensor p1(garbage(out, {e, n, k})), p2(garbage(out, {e, n, k}));
      GemmDeviceTensor s1(garbage(out, {e, n, k})), s2(garbage(out, {e, n, k}));
      grouped_gemm_k_pair(da1.op, da2.op, db.op, doffs.view(), p1.view(), p2.view());
      grouped_gemm_k(da1.op, db.op, doffs.view(), s1.view());
      grouped_gemm_k(da2.op, db.op, doffs.view(), s2.view());
      const int64_t bytes = e * n * k * dtype_size(out);
      const std::string what =
          "E " + std::to_string(e) + " fp32 " + std::to_string(out == DType::kFloat32);
      EXPECT_TRUE(bytes_equal(p1.download(), 0, s1.download(), 0, bytes)) << what << " out1";
      EXPECT_TRUE(bytes_equal(p2.download(), 0, s2.download(), 0, bytes)) << what << " out2";
    }
  }
}

}  // namespace
}  // namespace f46::test
