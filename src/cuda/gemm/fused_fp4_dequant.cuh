// Device helpers of plan (b): NVFP4 (E2M1 codes x E4M3 block scale) -> exact BF16, eight
// elements at a time, bit tricks plus two bf16x2 multiplies (docs/numerics.md N10: the product
// has at most 6 significant bits and lies in [2^-10, 2688], so every step is exact).
#pragma once

#include <cstdint>

namespace f46::cuda::gemm_detail::fp4 {

__device__ __forceinline__ uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// BF16 bits of one E4M3 byte times 2^-120: exponent and mantissa bits moved into place (E4M3
// subnormals become BF16 subnormals); 0x7F/0xFF (NaN) give a BF16 NaN.
__device__ __forceinline__ uint32_t e4m3_bf16_raw(uint32_t byte) {
  const uint32_t mag = byte & 0x7Fu;
  return mag == 0x7Fu ? 0x7FC0u : (mag << 4) | ((byte & 0x80u) << 8);
}

// Two E4M3 scales (bytes 0 and 1 of `pair`) -> bf16x2 (scale0, scale1), exact.
__device__ __forceinline__ uint32_t e4m3x2_to_bf16x2(uint32_t pair) {
  constexpr uint32_t kTwo120 = 0x7B807B80u;  // bf16 2^120 in both halves
  const uint32_t raw = e4m3_bf16_raw(pair & 0xFFu) | (e4m3_bf16_raw((pair >> 8) & 0xFFu) << 16);
  return bf16x2_mul(raw, kTwo120);
}

// Eight E2M1 codes (element 2i in the low nibble of byte i, N1.2) times the block scale `s2`
// (bf16x2, the same scale in both halves) -> eight BF16 in element order. A code's magnitude
// bits (e1 e0 m) moved to BF16 bits 8..6 and its sign to bit 15 give the BF16 number
// code * 2^-126 (E2M1's subnormal 0.5 becomes a BF16 subnormal); one multiply by 2^126 makes it
// the code's value, a second by the scale the dequantized value. The shifts pair elements
// (0,4), (1,5), (2,6), (3,7); byte permutes restore the element order.
__device__ __forceinline__ uint4 e2m1x8_to_bf16x8(uint32_t w, uint32_t s2) {
  constexpr uint32_t kMag = 0x01C001C0u, kSign = 0x80008000u;
  constexpr uint32_t kTwo126 = 0x7E807E80u;  // bf16 2^126 in both halves
  const uint32_t p04 = ((w << 6) & kMag) | ((w << 12) & kSign);
  const uint32_t p15 = ((w << 2) & kMag) | ((w << 8) & kSign);
  const uint32_t p26 = ((w >> 2) & kMag) | ((w << 4) & kSign);
  const uint32_t p37 = ((w >> 6) & kMag) | (w & kSign);
  const uint32_t q04 = bf16x2_mul(bf16x2_mul(p04, kTwo126), s2);
  const uint32_t q15 = bf16x2_mul(bf16x2_mul(p15, kTwo126), s2);
  const uint32_t q26 = bf16x2_mul(bf16x2_mul(p26, kTwo126), s2);
  const uint32_t q37 = bf16x2_mul(bf16x2_mul(p37, kTwo126), s2);
  uint4 o;
  o.x = __byte_perm(q04, q15, 0x5410);  // elements 0, 1
  o.y = __byte_perm(q26, q37, 0x5410);  // 2, 3
  o.z = __byte_perm(q04, q15, 0x7632);  // 4, 5
  o.w = __byte_perm(q26, q37, 0x7632);  // 6, 7
  return o;
}

}  // namespace f46::cuda::gemm_detail::fp4
