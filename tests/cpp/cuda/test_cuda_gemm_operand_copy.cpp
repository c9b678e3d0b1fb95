// Plan (a)'s BF16 operand copy (src/cuda/gemm/gemm_kernels.cu, launch_dequant_bf16) against the
// host formula, bit for bit: value = e2m1_value(code) * e4m3_to_float(scale), exact in BF16, rows
// past `rows` of each group zero. Every code and scale byte (NaN scales 0x7F / 0xFF take the
// element formula, sub-normal scales the hardware decode), 2-D and 3-D operands with group and
// row strides, code rows not 4-byte aligned (byte loads), padded rows, several unit batches.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/numerics.h"
#include "cuda/cuda_test_util.h"
#include "cuda/gemm/gemm_kernels.h"

namespace f46::test {
namespace {

struct CopyCase {
  int groups;
  int64_t rows, out_rows, k;
  int64_t code_row_stride;   // bytes, >= k / 2
  int64_t scale_row_stride;  // bytes, >= k / 16
};

std::string copy_name(const testing::TestParamInfo<CopyCase>& i) {
  const CopyCase& c = i.param;
  return "G" + std::to_string(c.groups) + "R" + std::to_string(c.rows) + "O" +
         std::to_string(c.out_rows) + "K" + std::to_string(c.k) + "C" +
         std::to_string(c.code_row_stride) + "S" + std::to_string(c.scale_row_stride);
}

template <typename T>
T* device_copy(const std::vector<T>& h) {
  T* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, h.size() * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

class CudaGemmOperandCopy : public testing::TestWithParam<CopyCase> {};

TEST_P(CudaGemmOperandCopy, EqualsTheHostFormulaBitwise) {
  F46_SKIP_WITHOUT_CUDA();
  const CopyCase c = GetParam();
  const int64_t code_group = c.rows * c.code_row_stride, scale_group = c.rows * c.scale_row_stride;
  std::vector<uint8_t> codes(static_cast<size_t>(c.groups * code_group));
  std::vector<uint8_t> scales(static_cast<size_t>(c.groups * scale_group));
  std::mt19937 gen(static_cast<uint32_t>(c.k * 131 + c.rows));
  for (auto& b : codes) b = static_cast<uint8_t>(gen());
  for (size_t i = 0; i < scales.size(); ++i) scales[i] = static_cast<uint8_t>(i * 7 + 3);

  const int64_t out_elems = c.groups * c.out_rows * c.k;
  uint8_t* dc = device_copy(codes);
  uint8_t* ds = device_copy(scales);
  __nv_bfloat16* dout = nullptr;
  F46_ASSERT_CUDA(cudaMalloc(&dout, out_elems * 2));
  F46_ASSERT_CUDA(cudaMemset(dout, 0xAB, out_elems * 2));
  cuda::gemm_detail::DequantArgs a;
  a.codes = dc;
  a.scales = ds;
  a.code_group_stride = code_group;
  a.code_row_stride = c.code_row_stride;
  a.scale_group_stride = scale_group;
  a.scale_row_stride = c.scale_row_stride;
  a.groups = c.groups;
  a.rows = c.rows;
  a.out_rows = c.out_rows;
  a.k = c.k;
  a.out = dout;
  cuda::gemm_detail::launch_dequant_bf16(a, nullptr);
  std::vector<uint16_t> got(static_cast<size_t>(out_elems));
  F46_ASSERT_CUDA(cudaDeviceSynchronize());
  F46_ASSERT_CUDA(cudaMemcpy(got.data(), dout, out_elems * 2, cudaMemcpyDeviceToHost));
  cudaFree(dc);
  cudaFree(ds);
  cudaFree(dout);

  int64_t bad = 0, nans = 0;
  for (int g = 0; g < c.groups; ++g) {
    for (int64_t r = 0; r < c.out_rows; ++r) {
      for (int64_t j = 0; j < c.k; ++j) {
        const int64_t at = (g * c.out_rows + r) * c.k + j;
        const uint16_t out = got[static_cast<size_t>(at)];
        if (r >= c.rows) {
          bad += out != 0;
          continue;
        }
        const uint8_t byte =
            codes[static_cast<size_t>(g * code_group + r * c.code_row_stride + j / 2)];
        const uint8_t code = j % 2 == 0 ? byte & 0xF : byte >> 4;  // N1.2
        const uint8_t s =
            scales[static_cast<size_t>(g * scale_group + r * c.scale_row_stride + j / 16)];
        const float v = num::mul(num::e2m1_value(code), num::e4m3_to_float(s));
        if (std::isnan(v)) {
          ++nans;
          bad += !((out & 0x7F80u) == 0x7F80u && (out & 0x7Fu) != 0);
          continue;
        }
        const uint32_t bits = num::bits(v);
        ASSERT_EQ(bits & 0xFFFFu, 0u) << "the product is not exact in BF16";
        if (out != static_cast<uint16_t>(bits >> 16)) {
          if (bad < 5)
            ADD_FAILURE() << "group " << g << " row " << r << " col " << j << ": got 0x" << std::hex
                          << out << ", want 0x" << (bits >> 16);
          ++bad;
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_GT(nans, 0) << "the case has no NaN scale";
}

const CopyCase kCopyCases[] = {
    {1, 37, 37, 256, 128, 16},     // 2-D, dense rows
    {3, 20, 24, 96, 52, 8},        // 3-D, padded output rows, strided codes and scales
    {2, 45, 48, 32, 18, 3},        // code rows 2 bytes off a word: byte loads
    {4, 130, 136, 1040, 520, 65},  // several unit batches per group, 1040 = 65 blocks
    {1, 513, 513, 2048, 1024, 128},
};
INSTANTIATE_TEST_SUITE_P(Shapes, CudaGemmOperandCopy, testing::ValuesIn(kCopyCases), copy_name);

}  // namespace
}  // namespace f46::test
