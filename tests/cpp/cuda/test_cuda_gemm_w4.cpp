// Plan (c) of the CUDA GEMM (src/cuda/gemm/w4_gemm*): A dequantized to BF16, the weight B read as
// 4-bit codes by a register-sourced WGMMA kernel, forced for the M-grouped and dense GEMMs:
// bitwise against plan (a) (dequantize both + CUTLASS) on the same inputs, against an FP64
// reference (bf16 output: relative Frobenius < 4e-3), each group bitwise equal to the dense plan
// (c) GEMM on its rows, rows past the last offset zero (N10, N11). Partial tiles in both
// dimensions, 1 to 16 k-tiles (fewer than the copies kept in flight included), uneven, empty and
// single-row groups, subnormal and the largest block scales, several persistent waves.
#include <algorithm>
#include <string>
#include <vector>

#include "cuda/gemm/w4_gemm.h"
#include "cuda/test_cuda_gemm_util.h"

namespace f46::test {
namespace {

Context plan_ctx(GemmPlan p) {
  Context ctx;
  ctx.gemm.plan = p;
  return ctx;
}

struct W4Case {
  int64_t m, n, k;
  std::vector<int32_t> sizes;  // rows per group; empty: the dense GEMM
  AmaxScope a_scope, b_scope;
  int scale_lo, scale_hi;  // E4M3 scale bytes drawn from [lo, hi] (0: subnormals occur)
};

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
    const W4Case& c = GetParam();
    dense = c.sizes.empty();
    e = dense ? 1 : static_cast<int64_t>(c.sizes.size());
    offs_v = dense ? std::vector<int32_t>{static_cast<int32_t>(c.m)} : cumulative(c.sizes);
    a = random_qmatrix(c.m, c.k, 500 + c.m, 0, c.scale_lo, c.scale_hi);
    b = random_qmatrix(c.n, c.k, 600 + c.n, dense ? 0 : e, c.scale_lo, c.scale_hi);
    amax_a = float_tensor(random_amax(c.a_scope == AmaxScope::kGroup ? e : 1, 51));
    amax_b = float_tensor(random_amax(c.b_scope == AmaxScope::kGroup ? e : 1, 52));
    const uint64_t before = cuda::gemm_detail::w4_launches();
    out_c = run(GemmPlan::kWeight4);
    launches = cuda::gemm_detail::w4_launches() - before;
    out_a = run(GemmPlan::kDequantBf16);
  }

  HostTensor run(GemmPlan plan) {
    const W4Case& c = GetParam();
    DeviceOperand da(a, amax_a, c.a_scope, 256), db(b, amax_b, c.b_scope, 448);
    GemmDeviceTensor dout(garbage(DType::kBFloat16, {c.m, c.n}));
    if (dense) {
      gemm(da.op, db.op, TensorView{}, dout.view(), plan_ctx(plan));
    } else {
      GemmDeviceTensor doffs(int_tensor(offs_v));
      grouped_gemm_m(da.op, db.op, doffs.view(), TensorView{}, dout.view(), plan_ctx(plan));
    }
    cuda_ok(cudaDeviceSynchronize());
    return dout.download();
  }
  int group_of(int64_t row) const {
    for (int g = 0; g < e; ++g)
      if (row < offs_v[g]) return g;
    return -1;
  }

  bool dense = false;
  int64_t e = 0;
  std::vector<int32_t> offs_v;
  QMatrix a, b;
  HostTensor amax_a, amax_b, out_a, out_c;
  uint64_t launches = 0;
};

TEST_P(CudaGemmW4, RunsPlanC) { EXPECT_EQ(launches, 1u) << "plan (c) was not launched"; }

TEST_P(CudaGemmW4, MatchesFp64Reference) {
  const W4Case& c = GetParam();
  const int64_t step = c.m * c.n * c.k > (int64_t{1} << 26) ? 37 : 1;
  std::vector<float> got;
  std::vector<double> want;
  for (int64_t i = 0; i < c.m; i += step) {
    const int g = group_of(i);
    for (int64_t j = 0; j < c.n; ++j) {
      got.push_back(out_c.at(i, j));
      if (g < 0) {
        want.push_back(0.0);
        continue;
      }
      const double ga = amax_a.ptr<float>()[c.a_scope == AmaxScope::kGroup ? g : 0] / (6.0 * 256);
      const double gb = amax_b.ptr<float>()[c.b_scope == AmaxScope::kGroup ? g : 0] / (6.0 * 448);
      want.push_back(ga * gb * dot_ref(a, 0, i, b, dense ? 0 : g, j, 0, c.k));
    }
  }
  EXPECT_LT(rel_frobenius(got, want), 4e-3);
}

// Same exact products, the same k16 WGMMA steps in increasing K, the same epilogue formula:
// plan (c) gives plan (a)'s bits.
TEST_P(CudaGemmW4, BitwiseEqualsPlanA) {
  const W4Case& c = GetParam();
  const int64_t row = c.n * 2;
  int64_t diff_rows = 0, first = -1;
  for (int64_t i = 0; i < c.m; ++i) {
    if (!bytes_equal(out_a, i * row, out_c, i * row, row)) {
      if (first < 0) first = i;
      ++diff_rows;
    }
  }
  EXPECT_EQ(diff_rows, 0) << "first differing row " << first;
}

TEST_P(CudaGemmW4, RowsPastLastOffsetAreZero) {
  const W4Case& c = GetParam();
  for (int64_t i = offs_v.back() * c.n * 2; i < c.m * c.n * 2; ++i)
    ASSERT_EQ(out_c.bytes()[i], 0) << "byte " << i;
}

TEST_P(CudaGemmW4, EachGroupEqualsDenseBitwise) {
  const W4Case& c = GetParam();
  if (dense) GTEST_SKIP() << "dense case";
  int64_t lo = 0;
  for (int64_t g = 0; g < e; ++g) {
    const int64_t hi = offs_v[g];
    if (hi == lo) continue;
    QMatrix ag = slice_rows(a, lo, hi), bg = slice_rows(b, 0, c.n, g);
    HostTensor am = float_tensor({amax_a.ptr<float>()[c.a_scope == AmaxScope::kGroup ? g : 0]});
    HostTensor bm = float_tensor({amax_b.ptr<float>()[c.b_scope == AmaxScope::kGroup ? g : 0]});
    DeviceOperand da(ag, am, AmaxScope::kTensor, 256), db(bg, bm, AmaxScope::kTensor, 448);
    GemmDeviceTensor dout(garbage(DType::kBFloat16, {hi - lo, c.n}));
    gemm(da.op, db.op, TensorView{}, dout.view(), plan_ctx(GemmPlan::kWeight4));
    const HostTensor d = dout.download();
    for (int64_t i = 0; i < hi - lo; ++i)
      ASSERT_TRUE(bytes_equal(d, i * c.n * 2, out_c, (lo + i) * c.n * 2, c.n * 2))
          << "group " << g << " row " << lo + i;
    lo = hi;
  }
}

constexpr AmaxScope kT = AmaxScope::kTensor, kG = AmaxScope::kGroup;
const W4Case kW4Cases[] = {
    // one tile, one k-tile (fewer k-tiles than copies in flight)
    {256, 128, 64, {}, kT, kT, 0x30, 0x58},
    // partial tiles in tokens and weight rows; 2, 3, 5 k-tiles; subnormal and largest scales
    {300, 264, 192, {}, kT, kT, 0x00, 0x58},
    {37, 24, 128, {}, kT, kT, 0x30, 0x58},
    {513, 392, 320, {}, kT, kT, 0x68, 0x7E},
    // uneven, empty and single-row groups; offs[-1] < M
    {330, 272, 256, {150, 1, 0, 109, 0}, kG, kT, 0x30, 0x58},
    {330, 272, 256, {150, 1, 0, 109, 0}, kT, kG, 0x00, 0x58},
    {40, 64, 64, {1, 1, 0, 1, 30}, kG, kG, 0x30, 0x58},
    {600, 256, 1024, {200, 197, 3, 200}, kG, kG, 0x30, 0x58},
    // every group empty: all rows zero
    {16, 32, 64, {0, 0}, kG, kG, 0x30, 0x58},
    // several persistent waves (> 132 tiles), eight uneven groups
    {8192, 1024, 128, {2000, 0, 2, 1022, 2400, 768, 1400, 600}, kG, kG, 0x30, 0x58},
    {4096, 1280, 192, {1000, 0, 1, 511, 1200, 384, 700, 300}, kT, kG, 0x00, 0x58},
};
INSTANTIATE_TEST_SUITE_P(Shapes, CudaGemmW4, testing::ValuesIn(kW4Cases), w4_name);

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
      gemm(da.op, db.op, TensorView{}, dout.view(), plan_ctx(p));
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
