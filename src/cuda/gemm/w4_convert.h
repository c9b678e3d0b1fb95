// Plan (c)'s weight conversion before the scale multiply, host + device, so the CPU tests check
// it (tests/cpp/cuda/test_w4_convert.cpp): for the WGMMA A fragment of one k16 step a thread
// (lane % 4 = t) holds codes 2t, 2t + 1 (register "lo") and 8 + 2t, 9 + 2t ("hi") of a weight
// row, i.e. byte t of the step's two code words w0 (codes 0..7) and w1 (codes 8..15)
// (N1.2: element 2i in the low nibble of byte i). Each code becomes the BF16 bit pattern of
// code * 2^-126: its magnitude bits (e1 e0 m) at BF16 bits 8..6, its sign at bit 15 (E2M1's 0.5
// becomes a BF16 subnormal); the kernel then multiplies by scale * 2^119 (fused_fp4_dequant.cuh),
// which gives code * scale * 2^-7 exactly.
#pragma once

#include <cstdint>

#include "common/numerics.h"

namespace f46::cuda::gemm_detail::w4 {

// PRMT without the sign-replicate mode: result byte i = byte (s >> 4i) & 7 of {y, x}.
F46_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#ifdef __CUDA_ARCH__
  return __byte_perm(x, y, s);
#else
  const uint64_t v = (uint64_t{y} << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i)
    r |= static_cast<uint32_t>((v >> (8 * ((s >> (4 * i)) & 7u))) & 0xFFu) << (8 * i);
  return r;
#endif
}

// The byte selector of lane t: bytes t, t of w0 and t, t of w1 -> [b0, b0, b1, b1].
F46_HD uint32_t pair_selector(uint32_t t) {
  return t | (t << 4) | ((t + 4) << 8) | ((t + 4) << 12);
}

// lo = (code 2t, code 2t + 1), hi = (code 8 + 2t, code 9 + 2t) as BF16 bit pairs of code * 2^-126
// (the lower k in the low half). One integer multiply by 2^6 + 2^12 places an isolated nibble
// twice without carries; the mask keeps the magnitude of the first copy and the sign of the
// second. Nibbles 16 bits apart share the instructions: ma = (2t, 8 + 2t), mb = (2t + 1, 9 + 2t),
// regrouped by two permutes.
F46_HD void step_code_bits(uint32_t w0, uint32_t w1, uint32_t sel, uint32_t& lo, uint32_t& hi) {
  constexpr uint32_t kKeep = 0x81C081C0u;  // bits 15, 8..6 of each half
  const uint32_t v = byte_perm(w0, w1, sel);
  const uint32_t ma = ((v & 0x000F000Fu) * 0x1040u) & kKeep;
  const uint32_t mb = (((v >> 12) & 0x000F000Fu) * 0x1040u) & kKeep;
  lo = byte_perm(ma, mb, 0x5410);
  hi = byte_perm(ma, mb, 0x7632);
}

}  // namespace f46::cuda::gemm_detail::w4
