// Dequantization kernel (docs/numerics.md N8): one thread per 16-element block,
// value = e2m1_value(code) * decode_factor(scale, amax, bound), cast once to the output dtype.
#pragma once

#include <cstdint>

#include "common/numerics.h"
#include "cuda/common/group_offsets.cuh"
#include "cuda/common/tensor_io.cuh"
#include "cuda/quantize/quantize_kernel_parts.cuh"

namespace f46::cuda {

struct DequantizeParams {
  const uint8_t* codes = nullptr;  // (rows, cols/2)
  int64_t codes_stride = 0;
  const uint8_t* scales = nullptr;  // (rows, cols/16)
  int64_t scales_stride = 0;
  int64_t rows = 0, cols = 0;
  ScopeKind scope = ScopeKind::kTensor;
  const float* amax = nullptr;
  const int32_t* offsets = nullptr;
  int num_groups = 0;
  float bound = 256.0f;
  void* out = nullptr;  // (rows, cols)
  int64_t out_stride = 0;
  bool vec_codes = false, vec_out = false;  // 8-byte code loads, 16-byte output stores
};

inline constexpr int kDequantThreads = 256;

inline constexpr int kDequantBlocksPerThread = 4;  // code loads of all 4 issued first

template <typename T>
__global__ void __launch_bounds__(kDequantThreads) dequantize_kernel(const DequantizeParams p) {
  extern __shared__ int32_t s_offs[];
  if (p.scope == ScopeKind::kGroup) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);
  const int64_t blocks_per_row = p.cols / 16;
  const int64_t total = p.rows * blocks_per_row;
  const bool small = total <= 0xFFFFFFFFll;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * kDequantThreads * kDequantBlocksPerThread + threadIdx.x;
  uint64_t codes[kDequantBlocksPerThread];
  uint8_t scale[kDequantBlocksPerThread];
#pragma unroll
  for (int k = 0; k < kDequantBlocksPerThread; ++k) {
    const int64_t i = first + k * kDequantThreads;
    if (i >= total) break;
    const int64_t row = small ? static_cast<uint32_t>(i) / static_cast<uint32_t>(blocks_per_row)
                              : i / blocks_per_row;
    const int64_t col = (i - row * blocks_per_row) * 16;
    const uint8_t* cp = p.codes + row * p.codes_stride + col / 2;
    if (p.vec_codes) {
      codes[k] = __ldg(reinterpret_cast<const unsigned long long*>(cp));
    } else {
      codes[k] = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) codes[k] |= static_cast<uint64_t>(__ldg(cp + j)) << (8 * j);
    }
    scale[k] = __ldg(p.scales + row * p.scales_stride + col / 16);
  }
  using S = typename T::Storage;
  const float inv_denom = num::div(1.0f, num::mul(6.0f, p.bound));
#pragma unroll
  for (int k = 0; k < kDequantBlocksPerThread; ++k) {
    const int64_t i = first + k * kDequantThreads;
    if (i >= total) return;
    const int64_t row = small ? static_cast<uint32_t>(i) / static_cast<uint32_t>(blocks_per_row)
                              : i / blocks_per_row;
    const int64_t col = (i - row * blocks_per_row) * 16;
    const float amax = global_amax_of_row(p.amax, p.scope, s_offs, p.num_groups, row);
    // N8: num::decode_factor with the conversion-free E4M3 decode (same value).
    const float decode = num::mul(num::mul(e4m3_value(scale[k]), amax), inv_denom);
    S v[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const uint8_t code = static_cast<uint8_t>((codes[k] >> (4 * j)) & 0xFu);
      store_as(T{}, &v[j], num::mul(e2m1_decode(code), decode));
    }
    S* op = static_cast<S*>(p.out) + row * p.out_stride + col;
    if (p.vec_out) {
      constexpr int kVecs = 16 * sizeof(S) / 16;
#pragma unroll
      for (int j = 0; j < kVecs; ++j)
        reinterpret_cast<uint4*>(op)[j] = reinterpret_cast<const uint4*>(v)[j];
    } else {
#pragma unroll
      for (int j = 0; j < 16; ++j) op[j] = v[j];
    }
  }
}

}  // namespace f46::cuda
