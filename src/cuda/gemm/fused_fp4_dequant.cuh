// Device helpers of plan (b): NVFP4 (E2M1 codes x E4M3 block scale) -> exact BF16, eight
// elements at a time: integer bit placement plus one bf16x2 multiply per two elements.
// docs/numerics.md N10: code * scale has at most 6 significant bits and lies in [2^-10, 2688].
// Plan (b) produces it times 2^-7 (so the multiply needs no exponent fix-up and stays normal);
// the products of A and B are then the exact products times 2^-14, and the epilogue multiplies
// the FP32 sum by 2^14 (exact) before applying N10.
#pragma once

#include <cstdint>

namespace f46::cuda::gemm_detail::fp4 {

__device__ __forceinline__ uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// Two E4M3 scales (bytes 0 and 1 of `pair`) -> bf16x2 (scale0 * 2^119, scale1 * 2^119), exact
// (448 * 2^119 < 2^128). Each byte's exponent and mantissa bits moved to BF16 bits 10..4 and its
// sign to bit 15 give scale * 2^-120 (E4M3 subnormals become BF16 subnormals, which the
// multiplies normalise); a magnitude of 0x7F (E4M3 NaN) also sets bits 14..11: a BF16 NaN.
__device__ __forceinline__ uint32_t e4m3x2_to_bf16x2_scaled(uint32_t pair) {
  constexpr uint32_t kTwo120 = 0x7B807B80u, kTwo119 = 0x7B007B00u;  // bf16 2^120, 2^119
  const uint32_t v = __byte_perm(pair, 0, 0x4140);  // byte 0 in half 0, byte 1 in half 1
  const uint32_t mag = v & 0x007F007Fu;
  const uint32_t nan = ((mag + 0x00010001u) & 0x00800080u) * 0xF0u;  // 0x7F -> bits 14..11
  const uint32_t raw = (mag << 4) | ((v << 8) & 0x80008000u) | nan;
  return bf16x2_mul(bf16x2_mul(raw, kTwo120), kTwo119);
}

// Eight E2M1 codes (element 2i in the low nibble of byte i, N1.2) times the block scale `s2`
// (bf16x2 (S, S), S = scale * 2^119) -> eight BF16 values code * scale * 2^-7, exact, in the
// paired order (e0, e4, e1, e5, e2, e6, e3, e7). A code's magnitude bits (e1 e0 m) at BF16 bits
// 8..6 and its sign at bit 15 form the BF16 number code * 2^-126 (E2M1's subnormal 0.5 becomes a
// BF16 subnormal); the multiply by S gives code * scale * 2^-7 in [2^-17, 21]. One integer
// multiply by 2^a + 2^(a+6) places each isolated nibble twice (no carries), so one mask keeps
// the magnitude of the first copy and the sign of the second; nibbles 16 bits apart share the
// instructions, hence the pairing.
__device__ __forceinline__ uint4 e2m1x8_to_bf16x8_paired(uint32_t w, uint32_t s2) {
  constexpr uint32_t kKeep = 0x81C081C0u;  // bits 15, 8..6 of each half
  const uint32_t w8 = w >> 8;
  uint4 o;
  o.x = bf16x2_mul(((w & 0x000F000Fu) * 0x1040u) & kKeep, s2);   // elements 0, 4
  o.y = bf16x2_mul(((w & 0x00F000F0u) * 0x0104u) & kKeep, s2);   // 1, 5
  o.z = bf16x2_mul(((w8 & 0x000F000Fu) * 0x1040u) & kKeep, s2);  // 2, 6
  o.w = bf16x2_mul(((w8 & 0x00F000F0u) * 0x0104u) & kKeep, s2);  // 3, 7
  return o;
}

}  // namespace f46::cuda::gemm_detail::fp4
