// Plan (c)'s weight conversion (src/cuda/gemm/w4_convert.h) on the CPU, the same function the
// kernel runs: for every lane t, every code byte of the two words and every finite E4M3 scale,
// the A-fragment registers lo / hi hold the right codes in the right halves, as BF16 bit
// patterns of code * 2^-126, and multiplying them by scale * 2^119 (the kernel's one bf16x2
// multiply) is exact and gives code * scale * 2^-7 (docs/numerics.md N1.2, N10).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cuda/gemm/w4_convert.h"
#include "gemm_test_util.h"

namespace f46::test {
namespace {

using cuda::gemm_detail::w4::byte_perm;
using cuda::gemm_detail::w4::pair_selector;
using cuda::gemm_detail::w4::step_code_bits;

double bf16_bits_value(uint32_t h) {
  const uint32_t f = h << 16;
  float v;
  std::memcpy(&v, &f, 4);
  return v;
}

// True when x is exactly a BF16 number (8 significant bits, FP32's exponent range).
bool bf16_exact(double x) {
  if (x == 0.0) return true;
  int e;
  const double m = std::frexp(std::fabs(x), &e);  // x = m 2^e, m in [0.5, 1)
  const double scaled = std::ldexp(m, 8);
  return scaled == std::floor(scaled) && e <= 128 && e >= -132;
}

TEST(W4Convert, ByteSelectorPicksByteTOfEachWord) {
  const uint32_t w0 = 0x33221100u, w1 = 0x77665544u;
  for (uint32_t t = 0; t < 4; ++t) {
    const uint32_t b0 = 0x11u * t, b1 = 0x11u * (t + 4);
    EXPECT_EQ(byte_perm(w0, w1, pair_selector(t)), b0 | (b0 << 8) | (b1 << 16) | (b1 << 24)) << t;
  }
  EXPECT_EQ(byte_perm(0x03020100u, 0x07060504u, 0x5410), 0x05040100u);
  EXPECT_EQ(byte_perm(0x03020100u, 0x07060504u, 0x7632), 0x07060302u);
}

TEST(W4Convert, EveryCodeLandsInItsHalfAndScalesExactly) {
  const uint32_t noise[4] = {0xA5u, 0x3Cu, 0xF0u, 0x69u};  // the other bytes of each word
  int64_t checked = 0;
  for (uint32_t t = 0; t < 4; ++t) {
    for (uint32_t b0 = 0; b0 < 256; ++b0) {
      for (uint32_t b1 = 0; b1 < 256; ++b1) {
        uint32_t w0 = 0, w1 = 0;
        for (uint32_t j = 0; j < 4; ++j) {
          w0 |= (j == t ? b0 : noise[j]) << (8 * j);
          w1 |= (j == t ? b1 : noise[3 - j]) << (8 * j);
        }
        uint32_t lo, hi;
        step_code_bits(w0, w1, pair_selector(t), lo, hi);
        // lo: codes 2t (low nibble of byte t of w0), 2t + 1; hi: codes 8 + 2t, 9 + 2t.
        const uint32_t halves[4] = {lo & 0xFFFFu, lo >> 16, hi & 0xFFFFu, hi >> 16};
        const int codes[4] = {static_cast<int>(b0 & 15u), static_cast<int>(b0 >> 4),
                              static_cast<int>(b1 & 15u), static_cast<int>(b1 >> 4)};
        for (int i = 0; i < 4; ++i) {
          const double got = bf16_bits_value(halves[i]);
          const double want = e2m1_ref(codes[i]) * std::ldexp(1.0, -126);
          ASSERT_EQ(got, want) << "t " << t << " bytes " << b0 << " " << b1 << " half " << i;
          ASSERT_EQ(std::signbit(got), (codes[i] & 8) != 0) << "sign of code " << codes[i];
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 256 * 256 * 4);
}

TEST(W4Convert, ScaleMultiplyIsExactForEveryCodeAndScale) {
  for (int code = 0; code < 16; ++code) {
    const double bits_value = e2m1_ref(code) * std::ldexp(1.0, -126);
    for (int s = 0; s < 256; ++s) {
      if ((s & 0x7F) == 0x7F) continue;  // E4M3 NaN: NaN products, as plan (a)
      const double scale = e4m3_ref(static_cast<uint8_t>(s));
      const double big = scale * std::ldexp(1.0, 119);  // S, exact in BF16 (E4M3 has 3 bits)
      ASSERT_TRUE(bf16_exact(big)) << "scale byte " << s;
      const double product = bits_value * big;
      ASSERT_TRUE(bf16_exact(product)) << "code " << code << " scale byte " << s;
      ASSERT_EQ(product, e2m1_ref(code) * scale * std::ldexp(1.0, -7));
    }
  }
}

}  // namespace
}  // namespace f46::test
