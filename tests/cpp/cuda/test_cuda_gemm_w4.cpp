// Plan (c) of the CUDA GEMM (src/cuda/gemm/w4_gemm*): A dequantized to BF16, the weight B read as
// 4-bit codes by a register-sourced WGMMA kernel, forced for the M-grouped and dense GEMMs:
// bitwise against plan (a) (dequantize both + CUTLASS) on the same inputs, against an FP64
// reference (bf16 output: relative Frobenius < 4e-3), each group bitwise equal to the dense plan
// (c) GEMM on its rows, rows past the last offset zero (N10, N11). Partial tiles in both
// dimensions, 1 to 16 k-tiles (fewer than the copies kept in flight included), uneven, empty and
// single-row groups, subnormal and the largest block scales, several persistent waves.
#include <memory>
#include <string>
#include <vector>

#include "cuda/gemm/w4_gemm.h"
#include "cuda/test_cuda_gemm_plan.h"

namespace f46::test {
namespace {

// The cases (test_cuda_gemm_plan.h), operand seeds from 500.
using W4Case = PlanProblemSpec;

std::string w4_name(const testing::TestParamInfo<W4Case>& info) {
  const W4Case& c = info.param;
  const char* sc[] = {"T", "R", "G"};
  return "M" + std::to_string(c.m) + "N" + std::to_string(c.n) + "K" + std::to_string(c.k) +
         (c.sizes.empty() ? std::string("_dense") : "E" + std::to_string(c.sizes.size())) + "_a" +
         sc[static_cast<int>(c.a_scope)] + "_b" + sc[static_cast<int>(c.b_scope)] + "_s" +
         std::to_string(c.scale_lo) + "_" + std::to_string(c.scale_hi);
}

class CudaGemmW4 : public testing::TestWithParam<W4Case> {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_CUDA();
    prob = std::make_unique<PlanProblem>(GetParam());
    const uint64_t before = cuda::gemm_detail::w4_launches();
    out_c = prob->run(GemmPlan::kWeight4, DType::kBFloat16);
    launches = cuda::gemm_detail::w4_launches() - before;
    out_a = prob->run(GemmPlan::kDequantBf16, DType::kBFloat16);
  }

  std::unique_ptr<PlanProblem> prob;
  HostTensor out_a, out_c;
  uint64_t launches = 0;
};

TEST_P(CudaGemmW4, RunsPlanC) { EXPECT_EQ(launches, 1u) << "plan (c) was not launched"; }

TEST_P(CudaGemmW4, MatchesFp64Reference) { EXPECT_LT(prob->fp64_error(out_c), 4e-3); }

// Same exact products, the same k16 WGMMA steps in increasing K, the same epilogue formula:
// plan (c) gives plan (a)'s bits.
TEST_P(CudaGemmW4, BitwiseEqualsPlanA) {
  int64_t first = -1;
  EXPECT_EQ(prob->differing_rows(out_a, out_c, first), 0) << "first differing row " << first;
}

TEST_P(CudaGemmW4, RowsPastLastOffsetAreZero) { EXPECT_EQ(prob->nonzero_past_groups(out_c), -1); }

TEST_P(CudaGemmW4, EachGroupEqualsDenseBitwise) {
  if (prob->dense) GTEST_SKIP() << "dense case";
  prob->expect_groups_equal_dense(out_c, GemmPlan::kWeight4);
}

constexpr AmaxScope kT = AmaxScope::kTensor, kG = AmaxScope::kGroup;
const W4Case kW4Cases[] = {
    // one tile, one k-tile (fewer k-tiles than copies in flight)
    {256, 128, 64, {}, kT, kT, 0x30, 0x58, 500},
    // partial tiles in tokens and weight rows; 2, 3, 5 k-tiles; subnormal and largest scales
    {300, 264, 192, {}, kT, kT, 0x00, 0x58, 500},
    {37, 24, 128, {}, kT, kT, 0x30, 0x58, 500},
    {513, 392, 320, {}, kT, kT, 0x68, 0x7E, 500},
    // uneven, empty and single-row groups; offs[-1] < M
    {330, 272, 256, {150, 1, 0, 109, 0}, kG, kT, 0x30, 0x58, 500},
    {330, 272, 256, {150, 1, 0, 109, 0}, kT, kG, 0x00, 0x58, 500},
    {40, 64, 64, {1, 1, 0, 1, 30}, kG, kG, 0x30, 0x58, 500},
    {600, 256, 1024, {200, 197, 3, 200}, kG, kG, 0x30, 0x58, 500},
    // every group empty: all rows zero
    {16, 32, 64, {0, 0}, kG, kG, 0x30, 0x58, 500},
    // several persistent waves (> 132 tiles), eight uneven groups
    {8192, 1024, 128, {2000, 0, 2, 1022, 2400, 768, 1400, 600}, kG, kG, 0x30, 0x58, 500},
    {4096, 1280, 192, {1000, 0, 1, 511, 1200, 384, 700, 300}, kT, kG, 0x00, 0x58, 500},
};
INSTANTIATE_TEST_SUITE_P(Shapes, CudaGemmW4, testing::ValuesIn(kW4Cases), w4_name);

// The automatic rule (gemm_choice.cpp) takes plan (c) at and above the measured sizes (8 and 4
// groups of 8192 x 1024 x 1024, 2^33 multiply-adds) and plan (a) below them (4096 rows): plan (c)
// launched or not, and the same bytes as plan (a) either way.
TEST(CudaGemmW4Auto, MeasuredSizesTakePlanC) {
  SKIP_WITHOUT_CUDA();
  for (const auto& [rows, groups] : {std::pair{8192, 8}, std::pair{8192, 4}, std::pair{4096, 4}}) {
    const PlanProblemSpec spec{rows,
                               1024,
                               1024,
                               std::vector<int32_t>(groups, rows / groups),
                               AmaxScope::kGroup,
                               AmaxScope::kGroup,
                               100,
                               126,
                               600};
    PlanProblem prob(spec);
    const uint64_t before = cuda::gemm_detail::w4_launches();
    const HostTensor out_auto = prob.run(GemmPlan::kAuto, DType::kBFloat16);
    EXPECT_EQ(cuda::gemm_detail::w4_launches() - before, rows == 8192 ? 1u : 0u)
        << rows << " rows, " << groups << " groups";
    const HostTensor out_a = prob.run(GemmPlan::kDequantBf16, DType::kBFloat16);
    int64_t first = -1;
    EXPECT_EQ(prob.differing_rows(out_a, out_auto, first), 0)
        << rows << " rows, " << groups << " groups, first differing row " << first;
  }
}

// Outside plan (c)'s scope (fp32 output, N % 8 != 0, K % 64 != 0, row-scaled A) a forced plan
// (c) runs plan (a): the same bytes, and no plan (c) kernel is launched.
TEST(CudaGemmW4Scope, OutOfScopeFallsBackToPlanA) {
  SKIP_WITHOUT_CUDA();
  struct Scope {
    int64_t m, n, k;
    DType out;
    AmaxScope a_scope;
  };
  for (const Scope& sc : {Scope{40, 32, 128, DType::kFloat32, AmaxScope::kTensor},
                          Scope{40, 36, 128, DType::kBFloat16, AmaxScope::kTensor},
                          Scope{40, 32, 48, DType::kBFloat16, AmaxScope::kTensor},
                          Scope{40, 32, 128, DType::kBFloat16, AmaxScope::kRow}}) {
    QMatrix a = random_qmatrix(sc.m, sc.k, 91), b = random_qmatrix(sc.n, sc.k, 92);
    HostTensor am =
        sc.a_scope == AmaxScope::kRow ? float_tensor(random_amax(sc.m, 93)) : float_tensor({2.0f});
    HostTensor bm = float_tensor({3.0f});
    DeviceOperand da(a, am, sc.a_scope, 256), db(b, bm, AmaxScope::kTensor, 256);
    auto run = [&](GemmPlan p) {
      GemmDeviceTensor dout(garbage(sc.out, {sc.m, sc.n}));
      gemm(da.op, db.op, TensorView{}, dout.view(), forced_plan(p));
      return dout.download();
    };
    const uint64_t before = cuda::gemm_detail::w4_launches();
    const HostTensor forced = run(GemmPlan::kWeight4);
    EXPECT_EQ(cuda::gemm_detail::w4_launches(), before) << "n " << sc.n << " k " << sc.k;
    const HostTensor plain = run(GemmPlan::kDequantBf16);
    EXPECT_TRUE(bytes_equal(forced, 0, plain, 0, sc.m * sc.n * dtype_size(sc.out)))
        << "n " << sc.n << " k " << sc.k;
  }
}

}  // namespace
}  // namespace f46::test
