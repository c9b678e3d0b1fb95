// Plan (b) of the CUDA GEMM (src/cuda/gemm/fused_fp4_*): the fused 4-bit kernel forced for the
// M-grouped and dense GEMMs, against an FP64 reference (relative Frobenius < 1e-5, FP32 out),
// bitwise against plan (a) (dequantize + CUTLASS) on the same inputs, each group bitwise equal
// to the dense plan (b) GEMM on its rows, rows past the last offset zero (N10, N11). Partial
// tiles, uneven/empty/single-row groups, subnormal block scales, several persistent waves.
#include <memory>
#include <string>
#include <vector>

#include "cuda/gemm/fused_fp4_gemm.h"
#include "cuda/test_cuda_gemm_plan.h"

namespace f46::test {
namespace {

struct FusedCase {
  int64_t m, n, k;
  std::vector<int32_t> sizes;  // rows per group; empty: the dense GEMM
  AmaxScope a_scope, b_scope;
  DType out;
  int scale_lo;  // smallest E4M3 scale byte (0: subnormal scales occur)
};

std::string fused_name(const testing::TestParamInfo<FusedCase>& info) {
  const FusedCase& c = info.param;
  const char* sc[] = {"T", "R", "G"};
  return "M" + std::to_string(c.m) + "N" + std::to_string(c.n) + "K" + std::to_string(c.k) +
         (c.sizes.empty() ? std::string("_dense") : "E" + std::to_string(c.sizes.size())) + "_a" +
         sc[static_cast<int>(c.a_scope)] + "_b" + sc[static_cast<int>(c.b_scope)] +
         (c.out == DType::kFloat32 ? "_f32" : "_bf16") + "_s" + std::to_string(c.scale_lo);
}

class CudaGemmFused : public testing::TestWithParam<FusedCase> {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_CUDA();
    const FusedCase& c = GetParam();
    prob = std::make_unique<PlanProblem>(
        PlanProblemSpec{c.m, c.n, c.k, c.sizes, c.a_scope, c.b_scope, c.scale_lo, 0x58, 300});
    const uint64_t before = cuda::gemm_detail::fused_fp4_launches();
    out_b = prob->run(GemmPlan::kFusedFp4, c.out);
    launches = cuda::gemm_detail::fused_fp4_launches() - before;
    out_a = prob->run(GemmPlan::kDequantBf16, c.out);
  }

  std::unique_ptr<PlanProblem> prob;
  HostTensor out_a, out_b;
  uint64_t launches = 0;
};

TEST_P(CudaGemmFused, RunsPlanB) { EXPECT_EQ(launches, 1u) << "plan (b) was not launched"; }

TEST_P(CudaGemmFused, MatchesFp64Reference) {
  EXPECT_LT(prob->fp64_error(out_b), GetParam().out == DType::kFloat32 ? 1e-5 : 4e-3);
}

// Same exact BF16 products, same WGMMA k16 sequence in increasing K, same epilogue formula:
// plan (b) gives plan (a)'s bits.
TEST_P(CudaGemmFused, BitwiseEqualsPlanA) {
  int64_t first = -1;
  EXPECT_EQ(prob->differing_rows(out_a, out_b, first), 0) << "first differing row " << first;
}

TEST_P(CudaGemmFused, RowsPastLastOffsetAreZero) {
  EXPECT_EQ(prob->nonzero_past_groups(out_b), -1);
}

TEST_P(CudaGemmFused, EachGroupEqualsDenseBitwise) {
  if (prob->dense) GTEST_SKIP() << "dense case";
  prob->expect_groups_equal_dense(out_b, GemmPlan::kFusedFp4);
}

constexpr AmaxScope kT = AmaxScope::kTensor, kG = AmaxScope::kGroup;
const FusedCase kFusedCases[] = {
    // one tile, one k-tile
    {128, 256, 64, {}, kT, kT, DType::kBFloat16, 0x30},
    // partial tiles in M and N, three k-tiles (odd count), subnormal scales
    {300, 264, 192, {}, kT, kT, DType::kFloat32, 0x00},
    {37, 24, 128, {}, kT, kT, DType::kBFloat16, 0x30},
    // uneven, empty and single-row groups; offs[-1] < M
    {330, 272, 256, {150, 1, 0, 109, 0}, kG, kT, DType::kBFloat16, 0x30},
    {330, 272, 256, {150, 1, 0, 109, 0}, kT, kG, DType::kFloat32, 0x00},
    {40, 64, 64, {1, 1, 0, 1, 30}, kG, kG, DType::kFloat32, 0x30},
    {600, 256, 1024, {200, 197, 3, 200}, kG, kG, DType::kBFloat16, 0x30},
    // every group empty: all rows zero
    {16, 32, 64, {0, 0}, kG, kG, DType::kFloat32, 0x30},
    // several persistent waves (> 132 tiles), eight uneven groups
    {8192, 1024, 128, {2000, 0, 2, 1022, 2400, 768, 1400, 600}, kG, kG, DType::kBFloat16, 0x30},
    {4096, 1280, 192, {1000, 0, 1, 511, 1200, 384, 700, 300}, kT, kG, DType::kFloat32, 0x00},
};
INSTANTIATE_TEST_SUITE_P(Shapes, CudaGemmFused, testing::ValuesIn(kFusedCases), fused_name);

// Outside plan (b)'s scope (K % 64 != 0, row-scaled A, bias) a forced plan (b) runs plan (a):
// the result is still right and no plan (b) kernel is launched.
TEST(CudaGemmFusedScope, OutOfScopeFallsBackToPlanA) {
  SKIP_WITHOUT_CUDA();
  const int64_t m = 40, n = 32, k = 48;
  QMatrix a = random_qmatrix(m, k, 71), b = random_qmatrix(n, k, 72);
  HostTensor am = float_tensor({2.0f}), bm = float_tensor({3.0f});
  DeviceOperand da(a, am, AmaxScope::kTensor, 256), db(b, bm, AmaxScope::kTensor, 256);
  auto run = [&](GemmPlan p) {
    GemmDeviceTensor dout(garbage(DType::kFloat32, {m, n}));
    gemm(da.op, db.op, TensorView{}, dout.view(), forced_plan(p));
    return dout.download();
  };
  const uint64_t before = cuda::gemm_detail::fused_fp4_launches();
  const HostTensor forced = run(GemmPlan::kFusedFp4);
  EXPECT_EQ(cuda::gemm_detail::fused_fp4_launches(), before);
  const HostTensor plain = run(GemmPlan::kDequantBf16);
  EXPECT_TRUE(bytes_equal(forced, 0, plain, 0, m * n * 4));
}

// The CUTLASS group scheduler's swizzle and raster order (Context::gemm) change the order tiles
// run in, never a bit of the M-grouped and K-grouped products.
TEST(CudaGemmTuning, SchedulerChoicesGiveTheSameBits) {
  SKIP_WITHOUT_CUDA();
  const int64_t m = 700, n = 272, k = 256;
  const std::vector<int32_t> offs_v = cumulative({300, 0, 17, 383});
  QMatrix a = random_qmatrix(m, k, 81), b = random_qmatrix(n, k, 82, 4);
  QMatrix at = random_qmatrix(n, m - 12, 83), bt = random_qmatrix(k, m - 12, 84);
  HostTensor am = float_tensor(random_amax(4, 85)), bm = float_tensor(random_amax(4, 86));
  DeviceOperand da(a, am, AmaxScope::kGroup, 256), db(b, bm, AmaxScope::kGroup, 448);
  DeviceOperand dat(at, am, AmaxScope::kGroup, 256), dbt(bt, bm, AmaxScope::kGroup, 448);
  GemmDeviceTensor doffs(int_tensor(offs_v)), dtoffs(int_tensor({288, 288, 304, 688}));
  auto run = [&](const GemmTuning& t) {
    Context ctx;
    ctx.gemm = t;
    GemmDeviceTensor om(garbage(DType::kFloat32, {m, n})), ok(garbage(DType::kBFloat16, {4, n, k}));
    grouped_gemm_m(da.op, db.op, doffs.view(), TensorView{}, om.view(), ctx);
    grouped_gemm_k(dat.op, dbt.op, dtoffs.view(), ok.view(), ctx);
    return std::make_pair(om.download(), ok.download());
  };
  const auto want = run(GemmTuning{GemmPlan::kDequantBf16, 0, false});
  for (const GemmTuning& t :
       {GemmTuning{GemmPlan::kDequantBf16, 2, true}, GemmTuning{GemmPlan::kDequantBf16, 8, false},
        GemmTuning{GemmPlan::kAuto, 4, true}}) {
    const auto got = run(t);
    EXPECT_TRUE(bytes_equal(got.first, 0, want.first, 0, m * n * 4)) << t.max_swizzle;
    EXPECT_TRUE(bytes_equal(got.second, 0, want.second, 0, 4 * n * k * 2)) << t.max_swizzle;
  }
}

}  // namespace
}  // namespace f46::test
