// Dequantization kernel (docs/numerics.md N8): one thread per 16-element block,
// value = e2m1_value(code) * decode_factor(scale, amax, bound), cast once to the output dtype.
#pragma once

#include <cstdint>

#include "common/numerics.h"
#include "cuda/common/group_offsets.cuh"
#include "cuda/common/tensor_io.cuh"
#include "cuda/quantize/quantize_kernels.cuh"

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

template <typename T>
__global__ void __launch_bounds__(kDequantThreads) dequantize_kernel(const DequantizeParams p) {
  extern __shared__ int32_t s_offs[];
  if (p.scope == ScopeKind::kGroup) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);
  const int64_t blocks_per_row = p.cols / 16;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kDequantThreads + threadIdx.x;
  if (i >= p.rows * blocks_per_row) return;
  const int64_t row = i / blocks_per_row, col = (i - row * blocks_per_row) * 16;

  const uint8_t* cp = p.codes + row * p.codes_stride + col / 2;
  uint64_t codes;
  if (p.vec_codes) {
    codes = *reinterpret_cast<const uint64_t*>(cp);
  } else {
    codes = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k) codes |= static_cast<uint64_t>(cp[k]) << (8 * k);
  }
  const uint8_t scale = p.scales[row * p.scales_stride + col / 16];
  const float amax = global_amax_of_row(p.amax, p.scope, s_offs, p.num_groups, row);
  const float decode = num::decode_factor(scale, amax, p.bound);

  using S = typename T::Storage;
  S v[16];
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    const uint8_t code = static_cast<uint8_t>((codes >> (4 * k)) & 0xFu);
    store_as(T{}, &v[k], num::mul(num::e2m1_value(code), decode));
  }
  S* op = static_cast<S*>(p.out) + row * p.out_stride + col;
  if (p.vec_out) {
    constexpr int kVecs = 16 * sizeof(S) / 16;
#pragma unroll
    for (int k = 0; k < kVecs; ++k)
      reinterpret_cast<uint4*>(op)[k] = reinterpret_cast<const uint4*>(v)[k];
  } else {
#pragma unroll
    for (int k = 0; k < 16; ++k) op[k] = v[k];
  }
}

}  // namespace f46::cuda
