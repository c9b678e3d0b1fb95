// CUDA M-grouped and K-grouped NVFP4 GEMMs (N11): FP64 reference, each group bitwise equal to
// the dense CUDA GEMM on that group, rows past the last offset zero, empty and single-row
// groups, per-row/per-group scales, bias, device-side clamping of invalid offsets.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cuda/test_cuda_gemm_util.h"

namespace f46::test {
namespace {

// ---- M-grouped --------------------------------------------------------------------------------
struct MCase {
  int64_t m, n, k;
  std::vector<int32_t> sizes;  // rows per group; offsets are their cumulative sums
  AmaxScope a_scope, b_scope;
  int bias;  // 0 none, 1 float32, 2 bf16
  DType out;
};

std::string m_name(const testing::TestParamInfo<MCase>& info) {
  const MCase& c = info.param;
  const char* sc[] = {"T", "R", "G"};
  return "M" + std::to_string(c.m) + "N" + std::to_string(c.n) + "K" + std::to_string(c.k) + "E" +
         std::to_string(c.sizes.size()) + "_a" + sc[static_cast<int>(c.a_scope)] + "_b" +
         sc[static_cast<int>(c.b_scope)] + "_bias" + std::to_string(c.bias) +
         (c.out == DType::kFloat32 ? "_f32" : "_bf16");
}

class CudaGroupedM : public testing::TestWithParam<MCase> {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_CUDA();
    const MCase& c = GetParam();
    e = static_cast<int64_t>(c.sizes.size());
    offs_v = cumulative(c.sizes);
    a = random_qmatrix(c.m, c.k, 100 + c.m);
    b = random_qmatrix(c.n, c.k, 200 + c.n, e);
    offs = int_tensor(offs_v);
    amax_a = float_tensor(random_amax(
        c.a_scope == AmaxScope::kRow ? c.m : (c.a_scope == AmaxScope::kGroup ? e : 1), 31));
    amax_b = float_tensor(random_amax(c.b_scope == AmaxScope::kGroup ? e : 1, 32));
    if (c.bias) {
      const DType t = c.bias == 1 ? DType::kFloat32 : DType::kBFloat16;
      bias = HostTensor(t, {e, c.n});
      const std::vector<float> v = random_values(e * c.n, 33, Dist::kGaussian, 2.0f, t);
      for (int64_t i = 0; i < e * c.n; ++i) bias.set(i, v[i]);
    }
    DeviceOperand da(a, amax_a, c.a_scope, 256), db(b, amax_b, c.b_scope, 448);
    GemmDeviceTensor doffs(offs), dout(garbage(c.out, {c.m, c.n}));
    std::unique_ptr<GemmDeviceTensor> dbias;
    if (c.bias) dbias = std::make_unique<GemmDeviceTensor>(bias);
    grouped_gemm_m(da.op, db.op, doffs.view(), dbias ? dbias->view() : TensorView{}, dout.view());
    cuda_ok(cudaDeviceSynchronize());
    out = dout.download();
  }
  int group_of(int64_t row) const {
    for (int g = 0; g < e; ++g)
      if (row < offs_v[g]) return g;
    return -1;
  }

  int64_t e = 0;
  std::vector<int32_t> offs_v;
  QMatrix a, b;
  HostTensor offs, amax_a, amax_b, bias, out;
};

TEST_P(CudaGroupedM, MatchesFp64Reference) {
  const MCase& c = GetParam();
  std::vector<float> got;
  std::vector<double> want;
  for (int64_t i = 0; i < c.m; ++i) {
    const int g = group_of(i);
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
  EXPECT_LT(rel_frobenius(got, want), c.out == DType::kFloat32 ? 1e-5 : 4e-3);
}

TEST_P(CudaGroupedM, MatchesCpuReference) {
  const MCase& c = GetParam();
  HostTensor want(c.out, {c.m, c.n});
  grouped_gemm_m(operand(a, amax_a, c.a_scope, 256), operand(b, amax_b, c.b_scope, 448), offs,
                 c.bias ? bias.view() : TensorView{}, want);
  std::vector<double> w;
  for (float v : values(want)) w.push_back(v);
  EXPECT_LT(rel_frobenius(values(out), w), c.out == DType::kFloat32 ? 1e-5 : 4e-3);
}

TEST_P(CudaGroupedM, EachGroupEqualsDenseGemmBitwise) {
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
    std::unique_ptr<GemmDeviceTensor> dbias;
    if (c.bias) {
      HostTensor bias_g(bias.dtype(), {c.n});
      for (int64_t j = 0; j < c.n; ++j) bias_g.set(j, bias.get(g * c.n + j));
      dbias = std::make_unique<GemmDeviceTensor>(bias_g);
    }
    const AmaxScope sa = c.a_scope == AmaxScope::kRow ? AmaxScope::kRow : AmaxScope::kTensor;
    DeviceOperand da(ag, amax_ag, sa, 256), db(bg, amax_bg, AmaxScope::kTensor, 448);
    GemmDeviceTensor dout(garbage(c.out, {hi - lo, c.n}));
    gemm(da.op, db.op, dbias ? dbias->view() : TensorView{}, dout.view());
    const HostTensor dense = dout.download();
    const int64_t es = dtype_size(c.out);
    for (int64_t i = 0; i < hi - lo; ++i)
      ASSERT_TRUE(bytes_equal(dense, i * c.n * es, out, (lo + i) * c.n * es, c.n * es))
          << "group " << g << " row " << lo + i;
    lo = hi;
  }
}

TEST_P(CudaGroupedM, RowsPastLastOffsetAreZero) {
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
    {330, 270, 256, {150, 1, 0, 109, 0}, AmaxScope::kGroup, AmaxScope::kTensor, 2, DType::kFloat32},
    {600,
     264,
     1024,
     {200, 197, 3, 200},
     AmaxScope::kTensor,
     AmaxScope::kGroup,
     1,
     DType::kBFloat16},
    // no bias, tensor/group scopes, N % 8 == 0: the fused-epilogue path
    {300, 256, 512, {100, 0, 1, 150}, AmaxScope::kGroup, AmaxScope::kGroup, 0, DType::kBFloat16},
    {300, 256, 512, {100, 0, 1, 150}, AmaxScope::kTensor, AmaxScope::kGroup, 0, DType::kFloat32},
    {16, 8, 16, {0, 0, 0}, AmaxScope::kGroup, AmaxScope::kGroup, 1, DType::kFloat32},
    {5, 17, 32, {5}, AmaxScope::kRow, AmaxScope::kTensor, 0, DType::kFloat32},
    // fused epilogue with more rows past the last offset than the zeroing grid has blocks
    // (1024) and more columns than it has threads (256)
    {2100, 264, 32, {40, 0, 24}, AmaxScope::kGroup, AmaxScope::kGroup, 0, DType::kBFloat16},
    {1500, 272, 32, {0, 16}, AmaxScope::kTensor, AmaxScope::kTensor, 0, DType::kFloat32},
};
INSTANTIATE_TEST_SUITE_P(Shapes, CudaGroupedM, testing::ValuesIn(kMCases), m_name);

// Offsets are never validated on the device; each is clamped into [previous, M], so invalid
// offsets give the result of the clamped ones and no out-of-bounds access.
TEST(CudaGroupedMOffsets, InvalidOffsetsAreClamped) {
  SKIP_WITHOUT_CUDA();
  const int64_t m = 64, n = 24, k = 32, e = 4;
  QMatrix a = random_qmatrix(m, k, 7), b = random_qmatrix(n, k, 8, e);
  HostTensor am = float_tensor({3.0f}), bm = float_tensor({2.0f});
  DeviceOperand da(a, am, AmaxScope::kTensor, 256), db(b, bm, AmaxScope::kTensor, 256);
  auto run = [&](const std::vector<int32_t>& o) {
    GemmDeviceTensor doffs(int_tensor(o)), dout(garbage(DType::kFloat32, {m, n}));
    grouped_gemm_m(da.op, db.op, doffs.view(), {}, dout.view());
    return dout.download();
  };
  const HostTensor bad = run({10, 5, 1000, -3}), good = run({10, 10, 64, 64});
  EXPECT_TRUE(bytes_equal(bad, 0, good, 0, m * n * 4));
}

// No host synchronisation and no host read of the offsets: both grouped GEMMs can be captured
// into a CUDA graph on a side stream, and the replay gives the eager bits.
TEST(CudaGroupedGraph, CapturedCallsEqualEagerBitwise) {
  SKIP_WITHOUT_CUDA();
  const int64_t m = 200, n = 64, k = 128, e = 3;
  QMatrix a = random_qmatrix(m, k, 51), b = random_qmatrix(n, k, 52, e);
  QMatrix y = random_qmatrix(n, m - 8, 53), x = random_qmatrix(k, m - 8, 54);  // T = 192
  HostTensor am = float_tensor({3.0f, 1.5f, 2.0f}), bm = float_tensor({2.0f, 0.5f, 4.0f});
  DeviceOperand da(a, am, AmaxScope::kGroup, 256), db(b, bm, AmaxScope::kGroup, 256);
  DeviceOperand dy(y, am, AmaxScope::kGroup, 448), dx(x, bm, AmaxScope::kGroup, 448);
  GemmDeviceTensor offs_m(int_tensor({50, 50, 170})), offs_k(int_tensor({64, 64, 192}));
  GemmDeviceTensor eager_m(garbage(DType::kBFloat16, {m, n})),
      graph_m(garbage(DType::kBFloat16, {m, n}));
  GemmDeviceTensor eager_k(garbage(DType::kFloat32, {e, n, k})),
      graph_k(garbage(DType::kFloat32, {e, n, k}));
  cudaStream_t s = nullptr;
  cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Context ctx;
  ctx.cuda_stream = s;
  grouped_gemm_m(da.op, db.op, offs_m.view(), {}, eager_m.view(), ctx);
  grouped_gemm_k(dy.op, dx.op, offs_k.view(), eager_k.view(), ctx);
  cuda_ok(cudaStreamSynchronize(s));

  cudaGraph_t graph = nullptr;
  cuda_ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  grouped_gemm_m(da.op, db.op, offs_m.view(), {}, graph_m.view(), ctx);
  grouped_gemm_k(dy.op, dx.op, offs_k.view(), graph_k.view(), ctx);
  cuda_ok(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  cuda_ok(cudaGraphInstantiate(&exec, graph, 0));
  cuda_ok(cudaGraphLaunch(exec, s));
  cuda_ok(cudaStreamSynchronize(s));
  const HostTensor em = eager_m.download(), gm = graph_m.download();
  const HostTensor ek = eager_k.download(), gk = graph_k.download();
  EXPECT_TRUE(bytes_equal(em, 0, gm, 0, m * n * 2));
  EXPECT_TRUE(bytes_equal(ek, 0, gk, 0, e * n * k * 4));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

// ---- K-grouped --------------------------------------------------------------------------------
struct KCase {
  int64_t n, k;
  std::vector<int32_t> sizes;  // token group sizes, multiples of 16
  int64_t extra_tokens;        // tokens past the last offset (multiple of 16), ignored
  AmaxScope a_scope, b_scope;
  DType out;
};

std::string k_name(const testing::TestParamInfo<KCase>& info) {
  const KCase& c = info.param;
  std::string s = "N" + std::to_string(c.n) + "K" + std::to_string(c.k) + "_sizes";
  for (int32_t v : c.sizes) s += "_" + std::to_string(v);
  return s + "_extra" + std::to_string(c.extra_tokens) +
         (c.a_scope == AmaxScope::kGroup ? "_aG" : "_aT") +
         (c.b_scope == AmaxScope::kGroup ? "_bG" : "_bT") +
         (c.out == DType::kFloat32 ? "_f32" : "_bf16");
}

class CudaGroupedK : public testing::TestWithParam<KCase> {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_CUDA();
    const KCase& c = GetParam();
    e = static_cast<int64_t>(c.sizes.size());
    offs_v = cumulative(c.sizes);
    t = offs_v.back() + c.extra_tokens;
    a = random_qmatrix(c.n, t, 300 + c.n);  // columnwise dY: (N, T)
    b = random_qmatrix(c.k, t, 400 + c.k);  // columnwise X: (K, T)
    offs = int_tensor(offs_v);
    amax_a = float_tensor(random_amax(c.a_scope == AmaxScope::kGroup ? e : 1, 41));
    amax_b = float_tensor(random_amax(c.b_scope == AmaxScope::kGroup ? e : 1, 42));
    DeviceOperand da(a, amax_a, c.a_scope, 448), db(b, amax_b, c.b_scope, 448);
    GemmDeviceTensor doffs(offs), dout(garbage(c.out, {e, c.n, c.k}));
    grouped_gemm_k(da.op, db.op, doffs.view(), dout.view());
    cuda_ok(cudaDeviceSynchronize());
    out = dout.download();
  }
  float amax(const HostTensor& v, AmaxScope s, int64_t g) const {
    return v.ptr<float>()[s == AmaxScope::kGroup ? g : 0];
  }

  int64_t e = 0, t = 0;
  QMatrix a, b;
  std::vector<int32_t> offs_v;
  HostTensor offs, amax_a, amax_b, out;
};

TEST_P(CudaGroupedK, MatchesFp64Reference) {
  const KCase& c = GetParam();
  std::vector<double> want;
  for (int64_t g = 0; g < e; ++g) {
    const int64_t lo = g == 0 ? 0 : offs_v[g - 1], hi = offs_v[g];
    const double s =
        amax(amax_a, c.a_scope, g) / (6.0 * 448) * amax(amax_b, c.b_scope, g) / (6.0 * 448);
    for (int64_t i = 0; i < c.n; ++i)
      for (int64_t j = 0; j < c.k; ++j) want.push_back(s * dot_ref(a, 0, i, b, 0, j, lo, hi));
  }
  EXPECT_LT(rel_frobenius(values(out), want), c.out == DType::kFloat32 ? 1e-5 : 4e-3);
}

TEST_P(CudaGroupedK, MatchesCpuReference) {
  const KCase& c = GetParam();
  HostTensor want(c.out, {e, c.n, c.k});
  grouped_gemm_k(operand(a, amax_a, c.a_scope, 448), operand(b, amax_b, c.b_scope, 448), offs,
                 want);
  std::vector<double> w;
  for (float v : values(want)) w.push_back(v);
  EXPECT_LT(rel_frobenius(values(out), w), c.out == DType::kFloat32 ? 1e-5 : 4e-3);
}

TEST_P(CudaGroupedK, EachGroupEqualsDenseGemmBitwise) {
  const KCase& c = GetParam();
  const int64_t es = dtype_size(c.out), block = c.n * c.k * es;
  for (int64_t g = 0; g < e; ++g) {
    const int64_t lo = g == 0 ? 0 : offs_v[g - 1], hi = offs_v[g];
    if (hi == lo) {  // an empty group gives a zero matrix
      for (int64_t i = 0; i < block; ++i) ASSERT_EQ(out.bytes()[g * block + i], 0) << g;
      continue;
    }
    QMatrix ag = slice_cols(a, lo, hi), bg = slice_cols(b, lo, hi);
    HostTensor am = float_tensor({amax(amax_a, c.a_scope, g)});
    HostTensor bm = float_tensor({amax(amax_b, c.b_scope, g)});
    DeviceOperand da(ag, am, AmaxScope::kTensor, 448), db(bg, bm, AmaxScope::kTensor, 448);
    GemmDeviceTensor dout(garbage(c.out, {c.n, c.k}));
    gemm(da.op, db.op, {}, dout.view());
    const HostTensor dense = dout.download();
    ASSERT_TRUE(bytes_equal(dense, 0, out, g * block, block)) << "group " << g;
  }
}

const KCase kKCases[] = {
    {8, 16, {16, 0, 32}, 0, AmaxScope::kTensor, AmaxScope::kTensor, DType::kFloat32},
    {24, 40, {48, 16, 0, 0, 64}, 32, AmaxScope::kGroup, AmaxScope::kGroup, DType::kFloat32},
    {24, 40, {48, 16, 0, 0, 64}, 32, AmaxScope::kGroup, AmaxScope::kTensor, DType::kBFloat16},
    {130, 272, {256, 16, 528}, 0, AmaxScope::kTensor, AmaxScope::kGroup, DType::kFloat32},
    {260, 144, {0, 1024, 96}, 64, AmaxScope::kGroup, AmaxScope::kGroup, DType::kBFloat16},
    {16, 16, {0, 0}, 16, AmaxScope::kGroup, AmaxScope::kGroup, DType::kFloat32},
    // empty groups whose zero blocks have more rows (N) than the zeroing grid has blocks
    {1040, 264, {0, 32, 0}, 0, AmaxScope::kGroup, AmaxScope::kGroup, DType::kBFloat16},
};
INSTANTIATE_TEST_SUITE_P(Shapes, CudaGroupedK, testing::ValuesIn(kKCases), k_name);

}  // namespace
}  // namespace f46::test
