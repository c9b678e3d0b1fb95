// f46::swiglu / swiglu_backward on the device (docs/numerics.md N13). The CUDA 1 + exp(-x) is
// nvcc's compiled expf of PyTorch's kernel, the CPU's std::exp, so the two agree to one unit of
// the storage dtype (almost always exactly); the amaxes are bitwise the N9 amaxes of the device
// outputs' rows. Bitwise agreement with PyTorch's own kernels: tests/python/test_swiglu.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "gemm_test_util.h"

namespace f46::test {
namespace {

float rows_amax(const HostTensor& y, int64_t r0, int64_t r1) {
  uint32_t m = 0;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = 0; c < y.size(1); ++c) m = std::max(m, float_bits(y.at(r, c)) & 0x7FFFFFFFu);
  return bits_float(m);
}

// The clamped group ends the kernels use (group_offsets.cuh): min(max(0, offs[0..g]), rows).
std::vector<int64_t> clamped(const std::vector<int32_t>& o, int64_t rows) {
  std::vector<int64_t> c;
  int64_t run = 0;
  for (int32_t v : o) {
    run = std::max<int64_t>(run, v);
    c.push_back(std::min(run, rows));
  }
  return c;
}

void expect_amax(const HostTensor& y, const std::vector<int32_t>& o, const HostTensor& amax,
                 const std::string& what) {
  const std::vector<int64_t> ends = clamped(o, y.size(0));
  int64_t prev = 0;
  for (size_t g = 0; g < ends.size(); ++g) {
    EXPECT_TRUE(same_bits(amax.get(static_cast<int64_t>(g)), rows_amax(y, prev, ends[g])))
        << what << " group " << g;
    prev = ends[g];
  }
}

// Nearly every 16-bit element equal; every element within one unit of t of the CPU's, or a
// 1e-6 of the tensor's largest value (cancellation in silu' near its zero at x = -1.28).
void expect_close(const HostTensor& cpu, const HostTensor& gpu, const std::string& what) {
  int64_t exact = 0, n = cpu.numel();
  float scale = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(cpu.get(i))) scale = std::max(scale, std::fabs(cpu.get(i)));
  for (int64_t i = 0; i < n; ++i) {
    const float c = cpu.get(i), g = gpu.get(i);
    if (same_bits(c, g) || (std::isnan(c) && std::isnan(g))) {
      ++exact;
      continue;
    }
    const float up = round_to(cpu.dtype(), std::nextafter(c, INFINITY));
    const float unit = std::max(std::fabs(round_to(cpu.dtype(), c * (1.0f + 1.0f / 128)) - c),
                                std::fabs(up - c));
    ASSERT_LE(std::fabs(g - c), unit + 1e-6f * scale) << what << " element " << i;
  }
  if (cpu.dtype() != DType::kFloat32) EXPECT_GE(exact, n * 97 / 100) << what;
}

TEST(CudaSwiGLU, CloseToCpuAndAmaxesOfTheDeviceRows) {
  F46_SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(3);
  struct Case {
    int64_t m, f;
    int e;
  };
  // f 48: 16-byte rows for every dtype (vector path); f 36: bf16/fp16 rows of 72 bytes (scalar
  // path); m 3000 spreads rows over several warps per group.
  for (DType t : {DType::kBFloat16, DType::kFloat16, DType::kFloat32})
    for (const Case& k : {Case{1, 48, 1}, Case{37, 36, 3}, Case{300, 48, 5}, Case{3000, 40, 9}}) {
      const std::string what = std::string(dtype_name(t)) + " " + std::to_string(k.m) + "x" +
                               std::to_string(k.f);
      const HostTensor a = random_matrix(t, k.m, k.f, gen(), Dist::kGaussian, 4.0f);
      const HostTensor b = random_matrix(t, k.m, k.f, gen(), Dist::kGaussian, 2.0f);
      const HostTensor dy = random_matrix(t, k.m, k.f, gen());
      std::vector<int32_t> o;
      for (int g = 0; g < k.e; ++g) o.push_back(static_cast<int32_t>(gen() % (k.m + 1)));
      std::sort(o.begin(), o.end());
      const HostTensor offs = int_tensor(o);
      HostTensor out(t, {k.m, k.f}), amax(DType::kFloat32, {k.e}), none;
      amax.fill_bytes(0xFF);
      HostTensor out_cpu = out, amax_cpu = amax;
      swiglu(a, b, out_cpu, offs, amax_cpu);
      DeviceTensor da_(a), db_(b), ddy(dy), doffs(offs), dout(out), damax(amax);
      swiglu(da_.view(), db_.view(), dout.view(), doffs.view(), damax.view());
      const HostTensor out_gpu = dout.to_host(out);
      expect_close(out_cpu, out_gpu, "out " + what);
      expect_amax(out_gpu, o, damax.to_host(amax), "amax " + what);

      HostTensor ga(t, {k.m, k.f}), gb(t, {k.m, k.f}), ma(DType::kFloat32, {k.e}),
          mb(DType::kFloat32, {k.e});
      HostTensor ga_cpu = ga, gb_cpu = gb, ma_cpu = ma, mb_cpu = mb;
      swiglu_backward(dy, a, b, ga_cpu, gb_cpu, offs, ma_cpu, mb_cpu);
      DeviceTensor dga(ga), dgb(gb), dma(ma), dmb(mb);
      swiglu_backward(ddy.view(), da_.view(), db_.view(), dga.view(), dgb.view(), doffs.view(),
                      dma.view(), dmb.view());
      const HostTensor ga_gpu = dga.to_host(ga), gb_gpu = dgb.to_host(gb);
      expect_close(ga_cpu, ga_gpu, "da " + what);
      expect_close(gb_cpu, gb_gpu, "db " + what);
      expect_amax(ga_gpu, o, dma.to_host(ma), "amax_da " + what);
      expect_amax(gb_gpu, o, dmb.to_host(mb), "amax_db " + what);
      // Without amaxes: the same outputs, and `none` offsets are accepted.
      DeviceTensor dga2(ga), dgb2(gb);
      swiglu_backward(ddy.view(), da_.view(), db_.view(), dga2.view(), dgb2.view(), none.view(),
                      none.view(), none.view());
      EXPECT_EQ(first_byte_diff(ga_gpu, dga2.to_host(ga)), -1) << what;
      EXPECT_EQ(first_byte_diff(gb_gpu, dgb2.to_host(gb)), -1) << what;
    }
}

// Offsets the CPU would reject (decreasing, past M, negative) are clamped on the device: no
// access out of bounds (compute-sanitizer runs this test), amaxes of the clamped groups.
TEST(CudaSwiGLU, InvalidOffsetsAreClamped) {
  F46_SKIP_WITHOUT_CUDA();
  const int64_t m = 64, f = 24;
  const HostTensor a = random_matrix(DType::kBFloat16, m, f, 9, Dist::kGaussian, 3.0f);
  const HostTensor b = random_matrix(DType::kBFloat16, m, f, 10);
  for (const std::vector<int32_t>& o : {std::vector<int32_t>{50, 20}, std::vector<int32_t>{5, 1 << 30},
                                        std::vector<int32_t>{-7, -1}, std::vector<int32_t>{-7, 12, 3}}) {
    HostTensor out(DType::kBFloat16, {m, f}), amax(DType::kFloat32, {static_cast<int64_t>(o.size())});
    DeviceTensor da_(a), db_(b), dout(out), damax(amax), doffs(int_tensor(o));
    swiglu(da_.view(), db_.view(), dout.view(), doffs.view(), damax.view());
    expect_amax(dout.to_host(out), o, damax.to_host(amax), "offsets " + std::to_string(o[0]));
  }
}

}  // namespace
}  // namespace f46::test
