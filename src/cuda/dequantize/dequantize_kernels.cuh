// Dequantization kernel (docs/numerics.md N8): one thread per 16-byte unit of output (half or a
// quarter of a 16-element block), value = e2m1_value(code) * decode_factor(scale, amax, bound),
// cast once to the output dtype; the codes decoded by the hardware E4M3 conversion where that is
// exact (dequant_fast_ok).
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/numerics.h"
#include "cuda/common/group_offsets.cuh"
#include "cuda/common/tensor_io.cuh"
#include "cuda/dequantize/dequant_unit.cuh"
#include "cuda/quantize/block_io.cuh"

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
  bool vec_codes = false, vec_out = false;  // whole-unit code loads, 16-byte output stores
  bool dense = false;  // codes, scales and out with their minimal row strides (or one row)
};

inline constexpr int kDequantThreads = 256;
inline constexpr int kDequantUnitsPerThread = 4;  // code loads of all 4 units issued first

// Unit u of row r, column c0 = (u mod units_per_row) * kV; 32-bit division when it fits.
struct UnitPos {
  int64_t row, col;
};
__device__ __forceinline__ UnitPos unit_pos(int64_t u, int64_t units_per_row, bool small, int kv) {
  const int64_t row = small ? static_cast<uint32_t>(u) / static_cast<uint32_t>(units_per_row)
                            : u / units_per_row;
  return UnitPos{row, (u - row * units_per_row) * kv};
}

// Dense operands (codes, scales and out with their minimal row strides) under a per-tensor amax:
// unit u's codes, scale and outputs sit at u-linear offsets, no division.
template <typename T>
__global__ void __launch_bounds__(kDequantThreads) dequantize_kernel(const DequantizeParams p) {
  extern __shared__ int32_t s_offs[];
  if (p.scope == ScopeKind::kGroup) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);
  using S = typename T::Storage;
  constexpr int kV = kDequantUnit<T>;
  const int64_t units_per_row = p.cols / kV;
  const int64_t total = p.rows * units_per_row;
  const bool small = total <= 0xFFFFFFFFll;
  const bool linear = p.dense && p.scope == ScopeKind::kTensor;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * kDequantThreads * kDequantUnitsPerThread + threadIdx.x;
  uint32_t codes[kDequantUnitsPerThread];
  uint8_t scale[kDequantUnitsPerThread];
  int64_t row[kDequantUnitsPerThread], out_at[kDequantUnitsPerThread];
#pragma unroll
  for (int k = 0; k < kDequantUnitsPerThread; ++k) {
    const int64_t u = first + k * kDequantThreads;
    if (u >= total) break;
    int64_t code_at, scale_at;
    if (linear) {
      row[k] = 0;
      code_at = u * (kV / 2);
      scale_at = u * kV / 16;
      out_at[k] = u * kV;
    } else {
      const UnitPos at = unit_pos(u, units_per_row, small, kV);
      row[k] = at.row;
      code_at = at.row * p.codes_stride + at.col / 2;
      scale_at = at.row * p.scales_stride + at.col / 16;
      out_at[k] = at.row * p.out_stride + at.col;
    }
    codes[k] = load_unit_codes<kV>(p.codes + code_at, p.vec_codes);
    scale[k] = __ldg(p.scales + scale_at);
  }
  const float inv_denom = num::div(1.0f, num::mul(6.0f, p.bound));
#pragma unroll
  for (int k = 0; k < kDequantUnitsPerThread; ++k) {
    const int64_t u = first + k * kDequantThreads;
    if (u >= total) return;
    const float amax = global_amax_of_row(p.amax, p.scope, s_offs, p.num_groups, row[k]);
    // N8: num::decode_factor with the conversion-free E4M3 decode (same value).
    const float decode = num::mul(num::mul(e4m3_value(scale[k]), amax), inv_denom);
    S* op = static_cast<S*>(p.out) + out_at[k];
    if (p.vec_out && dequant_fast_ok(decode)) {
      *reinterpret_cast<uint4*>(op) = dequant_unit_fast<T>(codes[k], num::mul(decode, 64.0f));
      continue;
    }
    alignas(16) S v[kV];
#pragma unroll
    for (int j = 0; j < kV; ++j)
      store_as(T{}, &v[j], num::mul(e2m1_decode((codes[k] >> (4 * j)) & 0xFu), decode));
    if (p.vec_out) {
      *reinterpret_cast<uint4*>(op) = *reinterpret_cast<const uint4*>(v);
    } else {
#pragma unroll
      for (int j = 0; j < kV; ++j) op[j] = v[j];
    }
  }
}

}  // namespace f46::cuda
