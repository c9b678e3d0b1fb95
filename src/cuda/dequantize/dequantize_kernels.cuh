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

// Outputs per thread unit: one 16-byte store (8 bf16/fp16, 4 fp32), so the 32 lanes of a warp
// write 512 contiguous bytes per store instruction.
template <typename T>
inline constexpr int kDequantUnit = 16 / static_cast<int>(sizeof(typename T::Storage));

// The unit's codes (kDequantUnit / 2 bytes), element j at bits [4j, 4j + 4).
template <int kV>
__device__ __forceinline__ uint32_t load_unit_codes(const uint8_t* cp, bool vec) {
  if (vec) {
    if constexpr (kV == 8) return __ldg(reinterpret_cast<const uint32_t*>(cp));
    else return __ldg(reinterpret_cast<const uint16_t*>(cp));
  }
  uint32_t c = 0;
#pragma unroll
  for (int j = 0; j < kV / 2; ++j) c |= static_cast<uint32_t>(__ldg(cp + j)) << (8 * j);
  return c;
}

// Unit u of row r, column c0 = (u mod units_per_row) * kV; 32-bit division when it fits.
struct UnitPos {
  int64_t row, col;
};
__device__ __forceinline__ UnitPos unit_pos(int64_t u, int64_t units_per_row, bool small, int kv) {
  const int64_t row = small ? static_cast<uint32_t>(u) / static_cast<uint32_t>(units_per_row)
                            : u / units_per_row;
  return UnitPos{row, (u - row * units_per_row) * kv};
}

// ---- the fast element path -------------------------------------------------------------------
// For a finite decode factor d with |d| < 2^122 (dequant_fast_ok), N8's RN(q * d) for an E2M1
// value q equals RN((q 2^-6) * (d 2^6)): the same real product, d 2^6 exact and finite, and
// q 2^-6 is the E4M3 number whose byte is 4 * (magnitude code) | sign << 7 (the scaled grid
// values of grid_rounding.h). So one cvt.rn.f16x2.e4m3x2 decodes two codes exactly, a conversion to
// float and one multiply give the FP32 product, and the hardware round-to-nearest-even
// conversions to bf16/fp16 equal bf16_bits_rne/f16_bits_rne for every finite float (NaN, the only
// difference, cannot arise: q and d finite). Other factors (NaN, Inf, huge) take the reference
// formula element by element.
__device__ __forceinline__ bool dequant_fast_ok(float decode) {
  return fabsf(decode) < 5.31691198e+36f;  // 2^122; false for NaN
}
// E4M3 bytes of q 2^-6 for four codes held one per byte (bits 0..3 of each byte).
__device__ __forceinline__ uint32_t e4m3_of_codes4(uint32_t c) {
  return ((c << 2) & 0x1C1C1C1Cu) | ((c << 4) & 0x80808080u);
}
// Two E4M3 bytes (bits 0..7 -> lo, 8..15 -> hi) as floats, exactly.
__device__ __forceinline__ float2 e4m3x2_to_float2(uint32_t pair) {
  uint32_t h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(static_cast<uint16_t>(pair)));
  float lo, hi;
  asm("{.reg .f16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h;}"
      : "=f"(lo), "=f"(hi)
      : "r"(h2));
  return make_float2(lo, hi);
}
// Two outputs packed into one 32-bit word (lo at bits 0..15) / kept as floats for fp32.
__device__ __forceinline__ uint32_t pack2(Bf16, float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ uint32_t pack2(F16, float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
// The 16 output bytes of a unit of kV codes c (element j at bits 4j) under d64 = d * 2^6.
template <typename T>
__device__ __forceinline__ uint4 dequant_unit_fast(uint32_t c, float d64) {
  constexpr int kV = kDequantUnit<T>;
  // Bytes in element order: PRMT interleaves the even (0, 2, ..) and odd (1, 3, ..) codes.
  const uint32_t even = e4m3_of_codes4(c & 0x0F0F0F0Fu), odd = e4m3_of_codes4((c >> 4) & 0x0F0F0F0Fu);
  const uint32_t b[2] = {__byte_perm(even, odd, 0x5140), __byte_perm(even, odd, 0x7362)};
  float v[kV];
#pragma unroll
  for (int i = 0; i < kV / 2; ++i) {
    const float2 q = e4m3x2_to_float2(b[i / 2] >> (16 * (i % 2)));
    v[2 * i] = num::mul(q.x, d64);
    v[2 * i + 1] = num::mul(q.y, d64);
  }
  uint4 r;
  if constexpr (std::is_same_v<T, F32>) {
    r = make_uint4(num::bits(v[0]), num::bits(v[1]), num::bits(v[2]), num::bits(v[3]));
  } else {
    r = make_uint4(pack2(T{}, v[0], v[1]), pack2(T{}, v[2], v[3]), pack2(T{}, v[4], v[5]),
                   pack2(T{}, v[6], v[7]));
  }
  return r;
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
