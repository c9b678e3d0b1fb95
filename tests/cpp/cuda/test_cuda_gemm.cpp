// CUDA NVFP4 GEMMs (src/cuda/gemm) against an FP64 reference on the dequantized operands
// (relative Frobenius error < 1e-5, FP32 output), against the CPU reference, and dense vs
// grouped bitwise (N10, N11). Every case skips when no CUDA device is present.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cuda/test_cuda_gemm_util.h"

namespace f46::test {
namespace {

// ---- dense ------------------------------------------------------------------------------------
struct DenseCase {
  int64_t m, n, k;
  AmaxScope a_scope;
  int bias;  // 0 none, 1 float32, 2 bf16
  float bound_a, bound_b;
};

std::string dense_name(const testing::TestParamInfo<DenseCase>& info) {
  const DenseCase& c = info.param;
  return "M" + std::to_string(c.m) + "N" + std::to_string(c.n) + "K" + std::to_string(c.k) +
         (c.a_scope == AmaxScope::kRow ? "_row" : "_tensor") + "_bias" + std::to_string(c.bias) +
         "_b" + std::to_string(static_cast<int>(c.bound_a)) +
         std::to_string(static_cast<int>(c.bound_b));
}

class CudaDenseGemm : public testing::TestWithParam<DenseCase> {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_CUDA();
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
  // The CUDA GEMM into a `t` output; ctx optional.
  HostTensor run(DType t, const Context& ctx = {}) {
    const DenseCase& c = GetParam();
    DeviceOperand da(a, amax_a, c.a_scope, c.bound_a), db(b, amax_b, AmaxScope::kTensor, c.bound_b);
    GemmDeviceTensor dout(garbage(t, {c.m, c.n}));
    std::unique_ptr<GemmDeviceTensor> dbias;
    if (c.bias) dbias = std::make_unique<GemmDeviceTensor>(bias);
    gemm(da.op, db.op, dbias ? dbias->view() : TensorView{}, dout.view(), ctx);
    cuda_ok(cudaDeviceSynchronize());
    return dout.download();
  }
  double reference(int64_t m, int64_t n) {
    const DenseCase& c = GetParam();
    const double ga = amax_a.ptr<float>()[c.a_scope == AmaxScope::kRow ? m : 0] / (6.0 * c.bound_a);
    const double gb = amax_b.ptr<float>()[0] / (6.0 * c.bound_b);
    double y = ga * gb * dot_ref(a, 0, m, b, 0, n, 0, c.k);
    if (c.bias) y += bias.get(n);
    return y;
  }

  QMatrix a, b;
  HostTensor amax_a, amax_b, bias;
};

TEST_P(CudaDenseGemm, MatchesFp64Reference) {
  const DenseCase& c = GetParam();
  const HostTensor out = run(DType::kFloat32);
  std::vector<double> want;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) want.push_back(reference(i, j));
  EXPECT_LT(rel_frobenius(values(out), want), 1e-5);
}

TEST_P(CudaDenseGemm, MatchesCpuReference) {
  const DenseCase& c = GetParam();
  const HostTensor got = run(DType::kFloat32);
  HostTensor want(DType::kFloat32, {c.m, c.n});
  gemm(operand(a, amax_a, c.a_scope, c.bound_a), operand(b, amax_b, AmaxScope::kTensor, c.bound_b),
       c.bias ? bias.view() : TensorView{}, want);
  std::vector<double> w;
  for (float v : values(want)) w.push_back(v);
  EXPECT_LT(rel_frobenius(values(got), w), 1e-5);
}

// The BF16 output is the FP32 output with one round-to-nearest-even cast (N10).
TEST_P(CudaDenseGemm, Bf16OutputIsRoundedFp32Output) {
  const DenseCase& c = GetParam();
  const HostTensor f32 = run(DType::kFloat32), b16 = run(DType::kBFloat16);
  const float* f = f32.ptr<float>();
  const uint16_t* h = b16.ptr<uint16_t>();
  for (int64_t i = 0; i < c.m * c.n; ++i)
    ASSERT_EQ(h[i], float_to_bf16(f[i])) << "element " << i << " fp32 " << f[i];
}

TEST_P(CudaDenseGemm, CallerWorkspaceGivesTheSameBits) {
  const DenseCase& c = GetParam();
  const int64_t bytes = gemm_workspace_bytes(c.m, c.n, c.k);
  void* ws = nullptr;
  cuda_ok(cudaMalloc(&ws, bytes));
  Context ctx;
  ctx.workspace = ws;
  ctx.workspace_bytes = bytes;
  const HostTensor with = run(DType::kBFloat16, ctx), without = run(DType::kBFloat16);
  cudaFree(ws);
  EXPECT_TRUE(bytes_equal(with, 0, without, 0, c.m * c.n * 2));
}

const DenseCase kDenseCases[] = {
    {1, 8, 16, AmaxScope::kTensor, 0, 256, 256},
    {1, 1, 32, AmaxScope::kRow, 1, 256, 448},
    {37, 50, 48, AmaxScope::kTensor, 1, 256, 256},  // N not a multiple of 8
    {37, 50, 48, AmaxScope::kRow, 2, 448, 256},
    {128, 256, 256, AmaxScope::kTensor, 2, 256, 256},
    {300, 520, 1024, AmaxScope::kRow, 1, 256, 256},  // several tiles in M and N
    {129, 264, 2048, AmaxScope::kTensor, 0, 448, 448},
    {200, 384, 512, AmaxScope::kTensor, 0, 256, 256},
    {200, 384, 512, AmaxScope::kRow, 0, 256, 256},
};
INSTANTIATE_TEST_SUITE_P(Shapes, CudaDenseGemm, testing::ValuesIn(kDenseCases), dense_name);

TEST(CudaGemmWorkspace, TooSmallWorkspaceIsRejected) {
  SKIP_WITHOUT_CUDA();
  QMatrix a = random_qmatrix(16, 32, 1), b = random_qmatrix(16, 32, 2);
  HostTensor am = float_tensor({1.0f});
  DeviceOperand da(a, am, AmaxScope::kTensor, 256), db(b, am, AmaxScope::kTensor, 256);
  GemmDeviceTensor out(garbage(DType::kBFloat16, {16, 16}));
  void* ws = nullptr;
  cuda_ok(cudaMalloc(&ws, 1024));
  Context ctx;
  ctx.workspace = ws;
  ctx.workspace_bytes = 1024;
  expect_error([&] { gemm(da.op, db.op, {}, out.view(), ctx); }, {"ctx.workspace", "1024"});
  cudaFree(ws);
}

TEST(CudaGemmNumerics, NanAmaxGivesNanOutput) {
  SKIP_WITHOUT_CUDA();
  QMatrix a = random_qmatrix(4, 32, 1), b = random_qmatrix(8, 32, 2);
  HostTensor am = float_tensor({1.0f, NAN, 1.0f, 1.0f}), bm = float_tensor({2.0f});
  DeviceOperand da(a, am, AmaxScope::kRow, 256), db(b, bm, AmaxScope::kTensor, 256);
  GemmDeviceTensor out(garbage(DType::kFloat32, {4, 8}));
  gemm(da.op, db.op, {}, out.view());
  const HostTensor h = out.download();
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 8; ++j) EXPECT_EQ(std::isnan(h.at(i, j)), i == 1) << i << "," << j;
}

}  // namespace
}  // namespace f46::test
