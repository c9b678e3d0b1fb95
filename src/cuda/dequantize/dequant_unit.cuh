// The 16-byte output unit of a dequantization (docs/numerics.md N8): its codes loaded as one
// word and decoded by the hardware E4M3 conversion where that is exact. Shared by the dequantize
// op (dequantize_kernels.cuh) and plan (a)'s BF16 operand copy (gemm/gemm_kernels.cu).
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/numerics.h"
#include "cuda/common/tensor_io.cuh"

namespace f46::cuda {

// Outputs per thread unit: one 16-byte store (8 bf16/fp16, 4 fp32), so the 32 lanes of a warp
// write 512 contiguous bytes per store instruction.
template <typename T>
inline constexpr int kDequantUnit = 16 / static_cast<int>(sizeof(typename T::Storage));

// The unit's codes (kDequantUnit / 2 bytes), element j at bits [4j, 4j + 4).
template <int kV>
__device__ __forceinline__ uint32_t load_unit_codes(const uint8_t* cp, bool vec) {
  if (vec) {
    if constexpr (kV == 8)
      return __ldg(reinterpret_cast<const uint32_t*>(cp));
    else
      return __ldg(reinterpret_cast<const uint16_t*>(cp));
  }
  uint32_t c = 0;
#pragma unroll
  for (int j = 0; j < kV / 2; ++j) c |= static_cast<uint32_t>(__ldg(cp + j)) << (8 * j);
  return c;
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
  const uint32_t even = e4m3_of_codes4(c & 0x0F0F0F0Fu),
                 odd = e4m3_of_codes4((c >> 4) & 0x0F0F0F0Fu);
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

}  // namespace f46::cuda
