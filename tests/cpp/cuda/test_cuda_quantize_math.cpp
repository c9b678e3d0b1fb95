// The exact rewrites of the CUDA quantizer's fast path (src/cuda/quantize/grid_rounding.h), checked
// on the host against the reference formulas of common/numerics.h (no GPU needed): E2M1
// rounding by a max and two FMAs, the stochastic-rounding floor, the Markstein divisions, the exact
// 4/6 error from grid values, and the bound on the approximate error that decides 4/6.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/numerics.h"
#include "cuda/quantize/grid_rounding.h"
#include "test_helpers.h"

namespace f46::test {
namespace {

namespace grid = cuda::grid;

float ref_grid(float v) { return num::e2m1_value(num::e2m1_from_float(num::clamp6(v))); }
float ref_floor(float a) {  // the `lo` of num::e2m1_from_float_stochastic, 0 <= a <= 6
  uint8_t lo;
  if (a >= 6.0f)
    lo = 7;
  else if (a < 2.0f)
    lo = static_cast<uint8_t>(static_cast<int>(a * 2.0f));
  else if (a < 4.0f)
    lo = static_cast<uint8_t>(static_cast<int>(a) + 2);
  else
    lo = 6;
  return num::e2m1_value(lo);
}

// Every float within 300 ulps of the midpoints, grid points and binade edges, and a sweep of
// [0, 7) in steps of 997 ulps (the whole range was also checked exhaustively).
std::vector<float> rounding_inputs() {
  std::vector<float> v;
  for (float c : {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f,
                  5.0f, 6.0f, 6.5f}) {
    const uint32_t u = num::bits(c);
    for (uint32_t d = 0; d <= 300; ++d) {
      v.push_back(num::from_bits(u + d));
      if (u >= d) v.push_back(num::from_bits(u - d));
    }
  }
  for (uint32_t u = 0; num::from_bits(u) < 7.0f; u += 997) v.push_back(num::from_bits(u));
  return v;
}

TEST(CudaQuantizeMath, RoundToGridEqualsReference) {
  for (float v : rounding_inputs()) {
    if (!(v < 7.0f)) continue;
    ASSERT_TRUE(same_bits(grid::round_to_grid(v), ref_grid(v))) << v;
    ASSERT_EQ(grid::code_bits22(grid::round_to_grid(v)) >> 22,
              num::e2m1_from_float(num::clamp6(v)) & 7u)
        << v;
  }
}

// The scaled form (grid values in units of 2^-6) and the codes read from their E4M3 bytes.
TEST(CudaQuantizeMath, ScaledRoundToGridAndCodeBytes) {
  for (float v : rounding_inputs()) {
    if (!(v < 7.0f)) continue;
    const float g = grid::round_to_grid_s(num::mul(v, grid::k2m6));
    ASSERT_TRUE(same_bits(g, num::mul(ref_grid(v), grid::k2m6))) << v;
    const uint32_t code = num::e2m1_from_float(num::clamp6(v)) & 7u;
    ASSERT_EQ(grid::code_bytes_s(g, 0.0f), code << 2) << v;
    ASSERT_EQ(grid::code_bytes_s(0.0f, g), code << 10) << v;
  }
  for (float v : {1e-45f, 1e-40f, 1.17549435e-38f, 2.3e-38f})  // sub-normal and tiny: code 0
    EXPECT_TRUE(same_bits(grid::round_to_grid_s(v), 0.0f)) << v;
  // Eight codes into nibbles 0..7, every code at every position.
  for (int pos = 0; pos < 8; ++pos) {
    for (uint8_t code = 0; code < 8; ++code) {
      float g[8];
      for (int j = 0; j < 8; ++j)
        g[j] = num::mul(num::e2m1_value(j == pos ? code : static_cast<uint8_t>(7 - j % 8)),
                        grid::k2m6);
      uint32_t want = 0;
      for (int j = 0; j < 8; ++j) want |= uint32_t{j == pos ? code : 7u - j} << (4 * j);
      ASSERT_EQ(grid::pack_codes8_s(g), want) << pos << " " << int{code};
    }
  }
}

// C1 for the scaled reciprocal agrees with C1 wherever inv * 2^-6 is normal, and refuses it
// where it is not; the Markstein b / 6 where div6_fast_ok admits it.
TEST(CudaQuantizeMath, ScaledFastConditionAndDivision) {
  std::mt19937 gen(5);
  std::uniform_int_distribution<uint32_t> bits(0, 0x7F7FFFFFu);
  for (int it = 0; it < 200000; ++it) {
    const float b = num::from_bits(bits(gen)), inv = num::from_bits(bits(gen));
    const float inv_s = num::mul(inv, grid::k2m6);
    if (inv_s >= 1.17549435e-38f)
      ASSERT_EQ(grid::codes_fast_ok_s(b, inv_s), grid::codes_fast_ok(b, inv)) << b << " " << inv;
    else
      ASSERT_FALSE(grid::codes_fast_ok_s(b, inv_s)) << b << " " << inv;
    if (grid::div6_fast_ok(b)) ASSERT_TRUE(same_bits(grid::div6_fast(b), b / 6.0f)) << b;
  }
  EXPECT_TRUE(grid::div6_fast_ok(0.0f));
  EXPECT_FALSE(grid::div6_fast_ok(1e-31f));
  EXPECT_FALSE(grid::div6_fast_ok(std::nanf("")));
}

// The lean kernels' table limit: b < fast_limit(inv_s) exactly when codes_fast_ok_s(b, inv_s),
// checked at the limit, one ulp around it and at random b; 0 where inv_s is not normal.
TEST(CudaQuantizeMath, FastLimitIsTheFastCondition) {
  std::mt19937 gen(11);
  std::uniform_int_distribution<uint32_t> bits(0, 0x7F7FFFFFu);
  int at_limit = 0;
  for (int it = 0; it < 100000; ++it) {
    const float inv_s = num::mul(num::from_bits(bits(gen)), grid::k2m6);
    const float lim = grid::fast_limit(inv_s);
    if (!(inv_s >= 1.17549435e-38f)) {
      ASSERT_EQ(lim, 0.0f) << inv_s;
      continue;
    }
    ASSERT_GT(lim, 0.0f) << inv_s;
    const uint32_t u = num::bits(lim);
    for (float b : {lim, num::from_bits(u - 1), num::from_bits(u + 1), num::from_bits(bits(gen)),
                    0.0f, std::numeric_limits<float>::infinity(), std::nanf("")}) {
      ASSERT_EQ(b < lim, grid::codes_fast_ok_s(b, inv_s)) << b << " " << inv_s;
    }
    at_limit += grid::codes_fast_ok_s(num::from_bits(u - 1), inv_s);
  }
  EXPECT_GT(at_limit, 90000);  // the limit is tight: one ulp below it is fast
}

// The lean kernels' signed code words (grid::signed_codes8): nibble i is the code of element i
// (from the even/odd E4M3 code words, byte 4 c) with the sign of element i (bf16 half i % 2 of
// raw word i / 2) at bit 3, for any words and codes.
TEST(CudaQuantizeMath, SignedCodesFromBf16Words) {
  std::mt19937 gen(12);
  for (int it = 0; it < 100000; ++it) {
    uint32_t w[4];
    for (uint32_t& v : w) v = gen();
    uint32_t code[8], want = 0;
    grid::CodeWords c{0, 0};
    for (int i = 0; i < 8; ++i) {
      code[i] = gen() & 7u;
      (i % 2 ? c.odd : c.even) |= (4u * code[i]) << (8 * (i / 2));  // E4M3 byte 4 c
      const uint32_t sign = (w[i / 2] >> (16 * (i % 2) + 15)) & 1u;
      want |= (code[i] | (sign << 3)) << (4 * i);
    }
    ASSERT_EQ(grid::signed_codes8(c, w), want) << it;
  }
  // prmt itself: plain nibbles copy bytes, nibbles >= 8 replicate the byte's sign bit.
  EXPECT_EQ(grid::prmt(0x7F80FF01u, 0x44332211u, 0x7654u), 0x44332211u);
  EXPECT_EQ(grid::prmt(0x7F80FF01u, 0u, 0x3210u), 0x7F80FF01u);
  EXPECT_EQ(grid::prmt(0x7F80FF01u, 0u, 0xBA98u), 0x00FFFF00u);
}

TEST(CudaQuantizeMath, FloorToGridEqualsReference) {
  for (float v : rounding_inputs()) {
    if (!(v <= 6.0f)) continue;
    ASSERT_TRUE(same_bits(grid::floor_to_grid(v), ref_floor(v))) << v;
  }
}

// A wrong rounding must fail: the plain Veltkamp form (b = max(v, 1), 2^22 b + v) misrounds the
// top of each binade, and round_to_grid's form with the floor 1 instead of 1 + 2^-21 misrounds
// (0, 1) (quantum 0.25 there); the test inputs contain both.
TEST(CudaQuantizeMath, InputsCatchAWrongRounding) {
  int wrong_plus = 0, wrong_floor = 0;
  for (float v : rounding_inputs()) {
    if (!(v < 7.0f)) continue;
    const float b = std::fmax(v, 1.0f);
    const float g = grid::fma_rn(-b, grid::k2p22, grid::fma_rn(b, grid::k2p22, v));
    wrong_plus += !same_bits(g, ref_grid(v));
    const float h = grid::fma_rn(b, grid::k2p22, -grid::fma_rn(b, grid::k2p22, -v));
    wrong_floor += !same_bits(h, ref_grid(v));
  }
  EXPECT_GT(wrong_plus, 0);
  EXPECT_GT(wrong_floor, 0);
}

// Markstein divisions: every mantissa at several exponents.
TEST(CudaQuantizeMath, MarksteinDivisionsCorrectlyRounded) {
  for (int e : {-100, -99, -60, -1, 0, 1, 7, 60, 117, 118, 119, 120}) {
    for (uint32_t m = 0; m < (1u << 23); m += (e == 0 || e == -100 || e == 118) ? 1 : 7) {
      const float t = num::from_bits((static_cast<uint32_t>(e + 127) << 23) | m);
      for (float d : {1536.0f, 2688.0f}) {
        const float rd = 1.0f / d;
        ASSERT_TRUE(same_bits(grid::div_by(t, d, rd), t / d)) << t << " / " << d;
      }
      if (e <= 127) ASSERT_TRUE(same_bits(grid::div6(t), t / 6.0f)) << t;
    }
  }
  for (float t : {0.0f, 1e-45f, 1e-38f, 3.4e38f}) EXPECT_TRUE(same_bits(grid::div6(t), t / 6.0f));
}

// One 1x16 block (or tile row) of a candidate: the reference error, the exact fast error, the
// approximate error and its bound.
struct Candidate {
  bool fast = false;
  float exact_ref = 0, exact_fast = 0, approx = 0, k = 0;
};
template <Rule R>
Candidate candidate(const float* x, float block_amax, uint8_t s, float amax, float bound) {
  Candidate c;
  const float s_dec = num::div(1.0f, num::encode_scale(amax, bound));
  const float inv = num::inverse_scale(s, s_dec), sf = num::e4m3_to_float(s);
  const float d = 6.0f * bound, rd = num::div(1.0f, d);
  c.exact_ref = num::row_error(x, s, s_dec, amax, bound, R);
  c.fast = grid::codes_fast_ok(block_amax, inv) && grid::error_fast_ok(sf, amax);
  if (!c.fast) return c;
  float g[16];
  for (int i = 0; i < 16; ++i) g[i] = grid::round_to_grid(num::mul(std::fabs(x[i]), inv));
  c.k = grid::div_by(num::mul(sf, amax), d, rd);
  c.exact_fast = grid::exact_error<R>(x, g, sf, amax, d, rd);
  float gs[16];  // the scaled grid values give the same exact error
  for (int i = 0; i < 16; ++i)
    gs[i] = grid::round_to_grid_s(num::mul(std::fabs(x[i]), num::mul(inv, grid::k2m6)));
  const float scaled = grid::exact_error<R>(x, gs, sf, amax, d, rd, 64.0f);
  if (num::mul(inv, grid::k2m6) >= 1.17549435e-38f && !same_bits(scaled, c.exact_fast))
    c.exact_fast = std::nanf("");  // fails the caller's bitwise check
  c.approx = grid::approx_error<R>(x, g, c.k);
  return c;
}
template <Rule R>
float bound_of(float e, float k, float n) {
  if constexpr (R == Rule::kMSE) return grid::approx_bound_mse(e, k, n);
  if constexpr (R == Rule::kAbsMax) return grid::approx_bound_absmax(k);
  return grid::approx_bound_mae(e, k, n);
}

// Blocks of many kinds: Gaussian/Student-t/uniform, magnitudes 2^-40..2^40 relative to the
// global amax, the global amax at the edges of C2 (RN(sf A) near 2^-100 and 2^118), E4M3
// sub-normal scales, exact E2M1 midpoints (near-ties of err4 and err6).
template <Rule R>
void check_rule(const char* name) {
  std::mt19937_64 gen(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::student_t_distribution<float> heavy(3.0f);
  long fast = 0, total = 0, undecided = 0, exact_ties = 0;
  for (int it = 0; it < 60000; ++it) {
    const int kind = static_cast<int>(gen() % 6);
    const float bound = gen() % 2 ? 256.0f : 448.0f;
    const bool tile = gen() % 4 == 0;
    const int rows = tile ? 16 : 1;
    std::vector<float> x(16 * rows);
    const float mag = std::ldexp(1.0f, static_cast<int>(gen() % 81) - 40);
    for (float& v : x) {
      if (kind == 0)
        v = normal(gen) * mag;
      else if (kind == 1)
        v = heavy(gen) * mag;
      else if (kind == 2)
        v = (static_cast<float>(gen() % 2001) - 1000.0f) * 0.001f * mag;
      else if (kind == 3)
        v = (static_cast<float>(gen() % 25) - 12.0f) * 0.25f * mag;  // midpoints
      else
        v = normal(gen) * mag;
    }
    float block_amax = 0;
    for (float v : x) block_amax = std::fmax(block_amax, std::fabs(v));
    float amax = block_amax * std::ldexp(1.0f, static_cast<int>(gen() % 5));
    if (kind == 4) amax = std::ldexp(1.0f, gen() % 2 ? -100 : 120) * (1.0f + (gen() % 64) / 64.0f);
    if (kind == 5) amax = block_amax * std::ldexp(1.0f, 10 + static_cast<int>(gen() % 12));
    if (kind == 3) amax = 6.0f * bound * mag;  // S_enc = 1/mag: scales 1 and 1.5, exact ties
    const float s_enc = num::encode_scale(amax, bound);
    const uint8_t s6 = num::scale_map6(block_amax, s_enc), s4 = num::scale_map4(block_amax, s_enc);
    float e6r[16], e4r[16], e6f[16], e4f[16], e6a[16], e4a[16];
    bool ok = true;
    float k6 = 0, k4 = 0;
    for (int r = 0; r < rows; ++r) {
      const Candidate c6 = candidate<R>(x.data() + 16 * r, block_amax, s6, amax, bound);
      const Candidate c4 = candidate<R>(x.data() + 16 * r, block_amax, s4, amax, bound);
      ok = ok && c6.fast && c4.fast;
      if (!ok) break;
      e6r[r] = c6.exact_ref, e4r[r] = c4.exact_ref, e6f[r] = c6.exact_fast, e4f[r] = c4.exact_fast;
      e6a[r] = c6.approx, e4a[r] = c4.approx, k6 = c6.k, k4 = c4.k;
      ASSERT_TRUE(same_bits(c6.exact_fast, c6.exact_ref)) << name << " case " << it << " row " << r;
      ASSERT_TRUE(same_bits(c4.exact_fast, c4.exact_ref)) << name << " case " << it << " row " << r;
    }
    ++total;
    if (!ok) continue;
    ++fast;
    const float e6 = tile ? num::tile_error(e6r, R) : e6r[0];
    const float e4 = tile ? num::tile_error(e4r, R) : e4r[0];
    const float a6 = tile ? num::tile_error(e6a, R) : e6a[0];
    const float a4 = tile ? num::tile_error(e4a, R) : e4a[0];
    const float n = static_cast<float>(rows);
    ASSERT_LE(std::fabs(e6 - a6), bound_of<R>(a6, k6, n)) << name << " case " << it;
    ASSERT_LE(std::fabs(e4 - a4), bound_of<R>(a4, k4, n)) << name << " case " << it;
    const bool decided = std::fabs(a4 - a6) > bound_of<R>(a6, k6, n) + bound_of<R>(a4, k4, n);
    if (decided) ASSERT_EQ(a4 < a6, num::pick_map4(e4, e6)) << name << " case " << it;
    if (!tile) {  // the lean kernels' bound (quantize_lean.cuh) for one row
      const float lean =
          grid::lean_bound<R>(a6, a4, grid::bound_kterm<R>(k6), grid::bound_kterm<R>(k4));
      ASSERT_GE(lean, (bound_of<R>(a6, k6, 1) + bound_of<R>(a4, k4, 1)) * (1.0f - 0x1p-22f))
          << name << " case " << it;
      ASSERT_LE(std::fabs(e6 - a6) + std::fabs(e4 - a4), lean) << name << " case " << it;
      if (std::fabs(a4 - a6) > lean)
        ASSERT_EQ(a4 < a6, num::pick_map4(e4, e6)) << name << " case " << it;
    }
    undecided += !decided;
    exact_ties += e4 == e6;
    (void)e6f;
    (void)e4f;
  }
  // The fast path must cover most blocks, and the decision must rarely need the exact errors
  // except for the constructed midpoint blocks (kind 3).
  EXPECT_GT(fast, total / 2) << name;
  EXPECT_LT(undecided, total / 5) << name << " undecided " << undecided << " ties " << exact_ties;
}

TEST(CudaQuantizeMath, ExactErrorAndApproximateBoundMAE) { check_rule<Rule::kMAE>("mae"); }
TEST(CudaQuantizeMath, ExactErrorAndApproximateBoundMSE) { check_rule<Rule::kMSE>("mse"); }
TEST(CudaQuantizeMath, ExactErrorAndApproximateBoundAbsMax) {
  check_rule<Rule::kAbsMax>("abs_max");
}

}  // namespace
}  // namespace f46::test
