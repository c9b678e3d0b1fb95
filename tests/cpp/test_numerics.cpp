// Scalar numerics of docs/numerics.md against slow independent references: E4M3 (N1.3),
// E2M1 (N1.1, N5), Philox and stochastic rounding (N6), the Hadamard transform (N7), global
// scales (N2) and amax bit patterns (N9).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <vector>

#include "common/numerics.h"
#include "test_helpers.h"

namespace f46 {
namespace {

using test::bits_float;
using test::float_bits;

// All 127 finite non-negative E4M3 values, by byte, computed from the format definition.
std::vector<double> e4m3_table() {
  std::vector<double> t;
  for (int b = 0; b < 0x7F; ++b) {
    const int e = b >> 3, m = b & 7;
    t.push_back(e == 0 ? m * std::ldexp(1.0, -9) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7));
  }
  return t;
}

// Slow reference: nearest finite E4M3 value, ties to the even mantissa (even byte), > 448 -> 448.
uint8_t e4m3_reference(float x, const std::vector<double>& table) {
  if (x >= 448.0f) return 0x7E;
  int best = 0;
  double best_d = INFINITY;
  for (int b = 0; b < 0x7F; ++b) {
    const double d = std::fabs(table[b] - static_cast<double>(x));
    if (d < best_d || (d == best_d && (b & 1) == 0)) {
      best = b;
      best_d = d;
    }
  }
  return static_cast<uint8_t>(best);
}

TEST(E4M3, DecodeMatchesFormatDefinition) {
  const auto table = e4m3_table();
  for (int b = 0; b < 0x7F; ++b) {
    EXPECT_EQ(static_cast<double>(num::e4m3_to_float(static_cast<uint8_t>(b))), table[b]) << b;
    EXPECT_EQ(static_cast<double>(num::e4m3_to_float(static_cast<uint8_t>(b | 0x80))), -table[b]);
  }
  EXPECT_TRUE(std::isnan(num::e4m3_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(num::e4m3_to_float(0xFF)));
  EXPECT_EQ(num::e4m3_to_float(0x7E), 448.0f);
}

TEST(E4M3, RoundTripEveryByte) {
  for (int b = 0; b < 0x7F; ++b)
    EXPECT_EQ(num::e4m3_from_float(num::e4m3_to_float(static_cast<uint8_t>(b))), b);
}

TEST(E4M3, NearestEvenSweepOfFloatPatterns) {
  const auto table = e4m3_table();
  const uint32_t top = float_bits(448.0f);
  int64_t checked = 0;
  for (uint32_t u = 0; u <= top; u += 997) {  // ~1.1M patterns over [0, 448]
    const float x = bits_float(u);
    ASSERT_EQ(num::e4m3_from_float(x), e4m3_reference(x, table)) << "x = " << x;
    ++checked;
  }
  EXPECT_GT(checked, 1000000);
}

TEST(E4M3, MidpointsAndNeighboursGoToEven) {
  const auto table = e4m3_table();
  for (int b = 0; b + 1 < 0x7F; ++b) {
    const float mid = static_cast<float>((table[b] + table[b + 1]) / 2);  // exact in FP32
    ASSERT_EQ(static_cast<double>(mid), (table[b] + table[b + 1]) / 2);
    const uint8_t even = static_cast<uint8_t>((b & 1) == 0 ? b : b + 1);
    EXPECT_EQ(num::e4m3_from_float(mid), even) << "midpoint of bytes " << b << ", " << b + 1;
    EXPECT_EQ(num::e4m3_from_float(std::nextafter(mid, 0.0f)), b);
    EXPECT_EQ(num::e4m3_from_float(std::nextafter(mid, 1e9f)), b + 1);
  }
}

TEST(E4M3, SubnormalsSaturationAndNaN) {
  EXPECT_EQ(num::e4m3_from_float(0.0f), 0);
  EXPECT_EQ(num::e4m3_from_float(std::ldexp(1.0f, -9)), 1);   // smallest sub-normal
  EXPECT_EQ(num::e4m3_from_float(std::ldexp(1.0f, -10)), 0);  // half of it: tie to 0
  EXPECT_EQ(num::e4m3_from_float(std::ldexp(3.0f, -10)), 2);  // 1.5 * 2^-9: tie to 2
  EXPECT_EQ(num::e4m3_from_float(std::ldexp(7.5f, -9)), 8);   // tie 7|8 -> 8 = 2^-6
  EXPECT_EQ(num::e4m3_from_float(1e-30f), 0);
  EXPECT_EQ(num::e4m3_from_float(448.0f), 0x7E);
  EXPECT_EQ(num::e4m3_from_float(464.0f), 0x7E);
  EXPECT_EQ(num::e4m3_from_float(1e30f), 0x7E);
  EXPECT_EQ(num::e4m3_from_float(INFINITY), 0x7E);
  EXPECT_EQ(num::e4m3_from_float(NAN), 0x7F);
  EXPECT_EQ(num::e4m3_from_float(440.0f), 0x7E);  // tie 416|448 -> even mantissa 6 (448)
  EXPECT_EQ(num::e4m3_from_float(432.0f), 0x7E);
}

// ---- E2M1 ---------------------------------------------------------------------------------
const float kGrid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

TEST(E2M1, ValuesOfEveryCode) {
  for (int c = 0; c < 16; ++c) {
    const float v = num::e2m1_value(static_cast<uint8_t>(c));
    EXPECT_EQ(std::fabs(v), kGrid[c & 7]);
    EXPECT_EQ(std::signbit(v), (c & 8) != 0) << c;
  }
}

TEST(E2M1, TiesOfTheSpecGoToEven) {
  // |v| -> value: 0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4.
  const float ties[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  const float want[7] = {0.0f, 1.0f, 1.0f, 2.0f, 2.0f, 4.0f, 4.0f};
  for (int i = 0; i < 7; ++i) {
    for (float s : {1.0f, -1.0f}) {
      const uint8_t c = num::e2m1_from_float(s * ties[i]);
      EXPECT_EQ(num::e2m1_value(c), s * want[i]) << "tie " << s * ties[i];
      EXPECT_EQ((c & 8) != 0, s < 0);
      // Just off the tie goes to the nearer neighbour.
      const float lo = kGrid[i], hi = kGrid[i + 1];
      EXPECT_EQ(num::e2m1_value(num::e2m1_from_float(s * std::nextafter(ties[i], 0.0f))), s * lo);
      EXPECT_EQ(num::e2m1_value(num::e2m1_from_float(s * std::nextafter(ties[i], 9.0f))), s * hi);
    }
  }
}

TEST(E2M1, NearestOverDenseSweep) {
  for (int i = 0; i <= 60000; ++i) {
    const float v = -6.0f + 12.0f * static_cast<float>(i) / 60000.0f;
    const float q = num::e2m1_value(num::e2m1_from_float(v));
    float best = INFINITY;
    for (float g : kGrid) best = std::min(best, std::fabs(std::fabs(v) - g));
    EXPECT_EQ(std::fabs(std::fabs(v) - std::fabs(q)), best) << v;
  }
}

TEST(E2M1, NegativeZeroAndSaturation) {
  EXPECT_EQ(num::e2m1_from_float(-0.1f), 0x8);
  EXPECT_EQ(num::e2m1_from_float(-0.0f), 0x8);
  EXPECT_EQ(num::e2m1_from_float(0.1f), 0x0);
  EXPECT_EQ(num::e2m1_from_float(num::clamp6(100.0f)), 0x7);
  EXPECT_EQ(num::e2m1_from_float(num::clamp6(-1e30f)), 0xF);
  EXPECT_EQ(num::e2m1_from_float(6.0f), 0x7);
  EXPECT_EQ(num::code_rne(1e30f, 1.0f), 0x7);  // clamp before rounding
}

// ---- Philox, SR ---------------------------------------------------------------------------
TEST(Philox, Random123KnownAnswers) {
  // Published known-answer vectors of Philox4x32-10 (Random123 tests/kat_vectors).
  num::U32x4 r = num::philox4x32_10(0, 0, 0, 0, 0, 0);
  EXPECT_EQ(r.v[0], 0x6627e8d5u);
  EXPECT_EQ(r.v[1], 0xe169c58du);
  EXPECT_EQ(r.v[2], 0xbc57ac4cu);
  EXPECT_EQ(r.v[3], 0x9b00dbd8u);
  r = num::philox4x32_10(~0u, ~0u, ~0u, ~0u, ~0u, ~0u);
  EXPECT_EQ(r.v[0], 0x408f276du);
  EXPECT_EQ(r.v[3], 0x6d5451fdu);
  r = num::philox4x32_10(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u,
                         0x299f31d0u);
  EXPECT_EQ(r.v[0], 0xd16cfe09u);
  EXPECT_EQ(r.v[1], 0x94fdccebu);
  EXPECT_EQ(r.v[2], 0x5001e420u);
  EXPECT_EQ(r.v[3], 0x24126ea1u);
}

TEST(Philox, ElementIndexLayout) {
  // idx -> counter (idx/8 lo, idx/8 hi, offset lo, offset hi), key = seed; half-word idx % 2
  // of word (idx % 8) / 2.
  const uint64_t seed = 0x0123456789ABCDEFull, offset = 0x1122334455667788ull;
  const uint64_t base = ((5ull << 32) + 7) * 8;
  const num::U32x4 r = num::philox4x32_10(7, 5, 0x55667788u, 0x11223344u, 0x89ABCDEFu, 0x01234567u);
  for (uint64_t e = 0; e < 8; ++e)
    EXPECT_EQ(num::random_bits(seed, offset, base + e), (r.v[e / 2] >> (16 * (e % 2))) & 0xFFFFu)
        << "element " << e;
  const num::U32x4 next =
      num::philox4x32_10(8, 5, 0x55667788u, 0x11223344u, 0x89ABCDEFu, 0x01234567u);
  EXPECT_EQ(num::random_bits(seed, offset, base + 8), next.v[0] & 0xFFFFu);
}

TEST(StochasticRounding, OnlyNeighboursAndExactGrid) {
  for (float g : kGrid) {
    EXPECT_EQ(num::e2m1_value(num::e2m1_from_float_stochastic(g, 0xFFFFu)), g);
    EXPECT_EQ(num::e2m1_value(num::e2m1_from_float_stochastic(-g, 0u)), -g);
  }
  // v = 2.25 between 2 and 3: p = 0.25. u = r * 2^-16 with 16 bits r.
  EXPECT_EQ(num::e2m1_value(num::e2m1_from_float_stochastic(2.25f, 0u)), 3.0f);
  EXPECT_EQ(num::e2m1_value(num::e2m1_from_float_stochastic(2.25f, 1u << 14)), 2.0f);
  EXPECT_EQ(num::e2m1_value(num::e2m1_from_float_stochastic(2.25f, (1u << 14) - 1)), 3.0f);
  EXPECT_EQ(num::e2m1_value(num::e2m1_from_float_stochastic(-5.0f, 0xFFFFu)), -4.0f);
  EXPECT_EQ(num::e2m1_from_float_stochastic(-0.1f, 0xFFFFu), 0x8);
  // The granularity is 2^-16: p = 2^-16 rounds up for r = 0 only, p = 2^-17 too.
  const float up1 = 2.0f + 1.52587890625e-05f;  // p = 2^-16
  EXPECT_EQ(num::e2m1_value(num::e2m1_from_float_stochastic(up1, 0u)), 3.0f);
  EXPECT_EQ(num::e2m1_value(num::e2m1_from_float_stochastic(up1, 1u)), 2.0f);
  const float up_half = 2.0f + 7.62939453125e-06f;  // p = 2^-17
  EXPECT_EQ(num::e2m1_value(num::e2m1_from_float_stochastic(up_half, 0u)), 3.0f);
  EXPECT_EQ(num::e2m1_value(num::e2m1_from_float_stochastic(up_half, 1u)), 2.0f);
}

// ---- RHT ----------------------------------------------------------------------------------
// Sylvester Walsh-Hadamard transform by its recursion, in FP32 (the order of N7).
std::vector<float> walsh_hadamard(const std::vector<float>& v) {
  if (v.size() == 1) return v;
  const size_t n = v.size() / 2;
  std::vector<float> sum(n), diff(n);
  for (size_t j = 0; j < n; ++j) {
    sum[j] = v[j] + v[j + n];
    diff[j] = v[j] - v[j + n];
  }
  std::vector<float> out = walsh_hadamard(sum);
  const std::vector<float> lower = walsh_hadamard(diff);
  out.insert(out.end(), lower.begin(), lower.end());
  return out;
}

TEST(Rht, MatchesExplicitMatrixAndIsOrthogonal) {
  const int s[16] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};
  // H16 by the Sylvester recursion, independent of the popcount formula.
  int h[16][16];
  h[0][0] = 1;
  for (int n = 1; n < 16; n *= 2)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        h[i][j + n] = h[i][j];
        h[i + n][j] = h[i][j];
        h[i + n][j + n] = -h[i][j];
      }
  // M = H diag(s) / 4 is orthogonal: M M^T = I exactly.
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 16; ++k) {
      double d = 0;
      for (int j = 0; j < 16; ++j) d += (h[i][j] * s[j] / 4.0) * (h[k][j] * s[j] / 4.0);
      EXPECT_EQ(d, i == k ? 1.0 : 0.0);
    }
  const std::vector<float> x = test::random_values(16 * 50, 3);
  for (int b = 0; b < 50; ++b) {
    const float* xb = x.data() + 16 * b;
    float y[16];
    num::rht16(xb, y);
    // The contract's order (N7), written as its recursion H [a; b] = [H (a + b); H (a - b)].
    std::vector<float> v(16);
    for (int j = 0; j < 16; ++j) v[j] = s[j] < 0 ? -xb[j] : xb[j];
    const std::vector<float> want = walsh_hadamard(v);
    for (int i = 0; i < 16; ++i)
      EXPECT_TRUE(test::same_bits(y[i], want[i] * 0.25f)) << b << " " << i;
    // Within FP32 rounding of the exact transform (a wrong sign or index would be far off).
    for (int i = 0; i < 16; ++i) {
      double exact = 0;
      for (int j = 0; j < 16; ++j) exact += h[i][j] * s[j] * static_cast<double>(xb[j]);
      EXPECT_NEAR(y[i], exact / 4.0, 1e-6 * (1 + std::fabs(exact)));
    }
    // M^T M = I: applying M^T = diag(s) H / 4 undoes the transform up to FP32 rounding.
    for (int j = 0; j < 16; ++j) {
      double back = 0;
      for (int i = 0; i < 16; ++i) back += s[j] * h[i][j] * static_cast<double>(y[i]) / 4.0;
      EXPECT_NEAR(back, xb[j], 1e-5 * (1 + std::fabs(xb[j])));
    }
  }
}

// ---- global scales, amax ------------------------------------------------------------------
TEST(GlobalScale, ZeroTinyInfNaN) {
  EXPECT_EQ(num::encode_scale(0.0f, 256.0f), 1.0f);
  EXPECT_EQ(num::encode_scale(1e-45f, 256.0f), FLT_MAX);  // 1536 / 1e-45 overflows: clamp
  EXPECT_EQ(num::encode_scale(INFINITY, 448.0f), 1.0f);   // S_enc == 0 -> 1
  EXPECT_TRUE(std::isnan(num::encode_scale(NAN, 448.0f)));
  EXPECT_EQ(num::encode_scale(3.0f, 256.0f), 1536.0f / 3.0f);
  EXPECT_EQ(num::decode_factor(0x38, 3.0f, 256.0f), (1.0f * 3.0f) * (1.0f / 1536.0f));
}

TEST(Amax, BitPatternOrderPropagatesNaN) {
  uint32_t m = 0;
  for (float x : {1.0f, -7.5f, INFINITY, 3.0f}) m = std::max(m, num::abs_bits(x));
  EXPECT_EQ(num::from_bits(m), INFINITY);
  m = std::max(m, num::abs_bits(-NAN));
  EXPECT_TRUE(std::isnan(num::from_bits(m)));
  EXPECT_TRUE(std::isnan(num::max_keep_nan(1.0f, NAN)));
  EXPECT_TRUE(std::isnan(num::max_keep_nan(NAN, 1.0f)));
  EXPECT_TRUE(std::isnan(num::min_keep_nan(NAN, 448.0f)));
}

}  // namespace
}  // namespace f46
