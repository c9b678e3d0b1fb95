// Layout properties of f46::quantize on the CPU: per-group and per-row scales equal each split
// alone, columnwise equals rowwise of the transpose, 16x16 tiles (N3.4), RHT (N7) and
// stochastic rounding (N6).
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "common/numerics.h"
#include "test_quantize_util.h"

namespace f46 {
namespace {

using test::AmaxSpec;
using test::code_at;
using test::HostTensor;
using test::tensor_amax;

// Bytes [c0, c1) of every row of a (rows, cols) uint8 tensor.
std::vector<uint8_t> columns(const HostTensor& t, int64_t c0, int64_t c1) {
  std::vector<uint8_t> out;
  for (int64_t r = 0; r < t.size(0); ++r)
    for (int64_t c = c0; c < c1; ++c) out.push_back(t.ptr<uint8_t>()[r * t.size(1) + c]);
  return out;
}
std::vector<uint8_t> rows(const HostTensor& t, int64_t r0, int64_t r1) {
  return std::vector<uint8_t>(t.bytes().begin() + r0 * t.size(1),
                              t.bytes().begin() + r1 * t.size(1));
}

// Quantize rows [r0, r1) of x alone with a tensor amax.
test::Quantized quantize_split(const HostTensor& x, int64_t r0, int64_t r1, float amax,
                               const QuantizeConfig& cfg) {
  const int64_t n = r1 - r0, C = x.size(1);
  test::Quantized q;
  QuantizedOutputs out;
  q.codes = HostTensor(DType::kUInt8, {n, C / 2});
  q.scales = HostTensor(DType::kUInt8, {n, C / 16});
  out.codes = q.codes.view();
  out.scales = q.scales.view();
  if (cfg.columnwise) {
    q.codes_t = HostTensor(DType::kUInt8, {C, n / 2});
    q.scales_t = HostTensor(DType::kUInt8, {C, n / 16});
    out.codes_t = q.codes_t.view();
    out.scales_t = q.scales_t.view();
  }
  test::GlobalAmaxOwner g(tensor_amax(amax));
  QuantizeConfig c = cfg;
  c.rowwise = true;
  quantize(test::row_slice(x, r0, r1), g.get(), c, out);
  return q;
}

std::vector<float> group_amaxes(const HostTensor& x, const std::vector<int32_t>& offs) {
  std::vector<float> a;
  int32_t prev = 0;
  for (int32_t o : offs) {
    std::vector<float> v;
    for (int64_t r = prev; r < o; ++r)
      for (int64_t c = 0; c < x.size(1); ++c) v.push_back(x.at(r, c));
    a.push_back(test::host_amax(v));
    prev = o;
  }
  return a;
}

TEST(Groups, RowwiseEqualsEachSplitAlone) {
  const int64_t R = 45, C = 64;
  const HostTensor x = test::random_matrix(DType::kBFloat16, R, C, 21, test::Dist::kStudentT);
  const std::vector<int32_t> offs{0, 7, 7, 23, 40};  // empty first and third groups; rows 40.. out
  const std::vector<float> a = group_amaxes(x, offs);
  EXPECT_EQ(a, test::amax_host(x, AmaxScope::kGroup, offs));
  for (Rule rule : {Rule::kMAE, Rule::kMSE, Rule::kAll6}) {
    QuantizeConfig cfg;
    cfg.rule = rule;
    const auto q = test::quantize_host(x, AmaxSpec{AmaxScope::kGroup, a, offs, {}}, cfg);
    int32_t prev = 0;
    for (size_t g = 0; g <= offs.size(); ++g) {
      const int32_t end = g < offs.size() ? offs[g] : static_cast<int32_t>(R);
      if (end == prev) continue;
      // Rows past the last offset are in no group: amax 0 (S_enc = 1).
      const float ga = g < offs.size() ? a[g] : 0.0f;
      const auto s = quantize_split(x, prev, end, ga, cfg);
      EXPECT_EQ(rows(q.codes, prev, end), s.codes.bytes()) << "group " << g;
      EXPECT_EQ(rows(q.scales, prev, end), s.scales.bytes()) << "group " << g;
      prev = end;
    }
  }
}

TEST(Groups, ColumnwiseAnd16x16EqualEachSplitAlone) {
  const int64_t R = 80, C = 48;
  const HostTensor x = test::random_matrix(DType::kFloat32, R, C, 22);
  const std::vector<int32_t> offs{16, 16, 48, 64};  // an empty group; rows 64..79 out
  const std::vector<float> a = group_amaxes(x, offs);
  for (Block blk : {Block::k1x16, Block::k16x16}) {
    QuantizeConfig cfg;
    cfg.block = blk;
    cfg.columnwise = true;
    const auto q = test::quantize_host(x, AmaxSpec{AmaxScope::kGroup, a, offs, {}}, cfg);
    int32_t prev = 0;
    for (size_t g = 0; g <= offs.size(); ++g) {
      const int32_t end = g < offs.size() ? offs[g] : static_cast<int32_t>(R);
      if (end == prev) continue;
      const auto s = quantize_split(x, prev, end, g < offs.size() ? a[g] : 0.0f, cfg);
      EXPECT_EQ(rows(q.codes, prev, end), s.codes.bytes());
      EXPECT_EQ(rows(q.scales, prev, end), s.scales.bytes());
      EXPECT_EQ(columns(q.codes_t, prev / 2, end / 2), s.codes_t.bytes()) << "group " << g;
      EXPECT_EQ(columns(q.scales_t, prev / 16, end / 16), s.scales_t.bytes()) << "group " << g;
      prev = end;
    }
  }
}

TEST(RowScope, EachRowAlone) {
  const int64_t R = 37, C = 96;
  const HostTensor x = test::random_matrix(DType::kBFloat16, R, C, 23, test::Dist::kStudentT);
  const std::vector<float> a = test::amax_host(x, AmaxScope::kRow);
  const auto q = test::quantize_host(x, AmaxSpec{AmaxScope::kRow, a, {}, {}}, QuantizeConfig{});
  for (int64_t r = 0; r < R; ++r) {
    const auto s = quantize_split(x, r, r + 1, a[static_cast<size_t>(r)], QuantizeConfig{});
    EXPECT_EQ(rows(q.codes, r, r + 1), s.codes.bytes()) << r;
    EXPECT_EQ(rows(q.scales, r, r + 1), s.scales.bytes()) << r;
  }
}

// ---- columnwise == rowwise of x^T over modes ------------------------------------------------
struct Mode {
  Rule rule;
  Block block;
  bool gradient;
  bool rht;
  DType dtype;
};
class Columnwise : public ::testing::TestWithParam<std::tuple<std::pair<int64_t, int64_t>, Mode>> {
};

TEST_P(Columnwise, EqualsRowwiseOfTranspose) {
  const auto [shape, m] = GetParam();
  const auto [R, C] = shape;
  const HostTensor x = test::random_matrix(m.dtype, R, C, 31 + R, test::Dist::kStudentT);
  const HostTensor xt = test::transpose(x);
  QuantizeConfig cfg;
  cfg.rule = m.rule;
  cfg.block = m.block;
  cfg.gradient = m.gradient;
  cfg.scale_bound = m.gradient ? 448.0f : 256.0f;
  cfg.rht_columnwise = m.rht;
  cfg.columnwise = true;
  const float a = m.rht ? test::amax_host(x, AmaxScope::kTensor, {}, true)[0]
                        : test::amax_host(x, AmaxScope::kTensor)[0];
  AmaxSpec spec = tensor_amax(test::amax_host(x, AmaxScope::kTensor)[0]);
  spec.amax_columnwise = {a};
  const auto q = test::quantize_host(x, spec, cfg);
  QuantizeConfig rcfg = cfg;
  rcfg.columnwise = false;
  rcfg.rht_columnwise = false;
  rcfg.rht_rowwise = m.rht;
  const auto t = test::quantize_host(xt, tensor_amax(a), rcfg);
  EXPECT_EQ(q.codes_t.bytes(), t.codes.bytes());
  EXPECT_EQ(q.scales_t.bytes(), t.scales.bytes());
  // The rowwise output of the same call is unaffected by the columnwise one.
  QuantizeConfig only_rows = cfg;
  only_rows.columnwise = false;
  const auto r = test::quantize_host(x, spec, only_rows);
  EXPECT_EQ(q.codes.bytes(), r.codes.bytes());
  EXPECT_EQ(q.scales.bytes(), r.scales.bytes());
}

INSTANTIATE_TEST_SUITE_P(
    ShapesModes, Columnwise,
    ::testing::Combine(
        ::testing::Values(std::pair<int64_t, int64_t>{16, 16}, std::pair<int64_t, int64_t>{48, 32},
                          std::pair<int64_t, int64_t>{128, 80}),
        ::testing::Values(Mode{Rule::kMAE, Block::k1x16, false, false, DType::kBFloat16},
                          Mode{Rule::kMSE, Block::k1x16, false, false, DType::kFloat16},
                          Mode{Rule::kAbsMax, Block::k1x16, false, false, DType::kFloat32},
                          Mode{Rule::kAll4, Block::k1x16, false, false, DType::kBFloat16},
                          Mode{Rule::kMAE, Block::k16x16, false, false, DType::kBFloat16},
                          Mode{Rule::kMSE, Block::k16x16, false, false, DType::kFloat32},
                          Mode{Rule::kAll6, Block::k1x16, true, false, DType::kBFloat16},
                          Mode{Rule::kAll6, Block::k1x16, true, true, DType::kBFloat16},
                          Mode{Rule::kMAE, Block::k1x16, false, true, DType::kFloat32})));

// A columnwise-only call needs R % 16 == 0 but any C (here 24 and 70).
TEST(ColumnwiseOnly, AnyColumnCount) {
  for (int64_t C : {24, 70}) {
    const HostTensor x = test::random_matrix(DType::kBFloat16, 48, C, 33, test::Dist::kStudentT);
    const float a = test::amax_host(x, AmaxScope::kTensor)[0];
    QuantizeConfig cfg;
    cfg.rowwise = false;
    cfg.columnwise = true;
    const auto q = test::quantize_host(x, tensor_amax(a), cfg);
    const auto t = test::quantize_host(test::transpose(x), tensor_amax(a), QuantizeConfig{});
    EXPECT_EQ(q.codes_t.bytes(), t.codes.bytes()) << C;
    EXPECT_EQ(q.scales_t.bytes(), t.scales.bytes()) << C;
  }
}

// ---- 16x16 tiles --------------------------------------------------------------------------
TEST(Tiles, OneScalePerTileOnAllRows) {
  const HostTensor x = test::random_matrix(DType::kBFloat16, 64, 64, 41, test::Dist::kStudentT);
  QuantizeConfig cfg;
  cfg.block = Block::k16x16;
  const auto q =
      test::quantize_host(x, tensor_amax(test::amax_host(x, AmaxScope::kTensor)[0]), cfg);
  for (int64_t r = 0; r < 64; ++r)
    for (int64_t b = 0; b < 4; ++b)
      EXPECT_EQ(q.scales.ptr<uint8_t>()[r * 4 + b], q.scales.ptr<uint8_t>()[(r / 16) * 64 + b]);
}

TEST(Tiles, WAndWTransposeDequantizeEqually) {
  for (Rule rule : {Rule::kMAE, Rule::kMSE, Rule::kAll6}) {
    const HostTensor w = test::random_matrix(DType::kBFloat16, 64, 96, 42, test::Dist::kGaussian);
    const HostTensor wt = test::transpose(w);
    const float a = test::amax_host(w, AmaxScope::kTensor)[0];
    QuantizeConfig cfg;
    cfg.rule = rule;
    cfg.block = Block::k16x16;
    const auto q = test::quantize_host(w, tensor_amax(a), cfg);
    const auto qt = test::quantize_host(wt, tensor_amax(a), cfg);
    const HostTensor d = test::dequantize_host(q.codes, q.scales, tensor_amax(a), 256.0f);
    const HostTensor dt = test::dequantize_host(qt.codes, qt.scales, tensor_amax(a), 256.0f);
    for (int64_t r = 0; r < 64; ++r)
      for (int64_t c = 0; c < 96; ++c)
        ASSERT_TRUE(test::same_bits(d.at(r, c), dt.at(c, r))) << rule_name(rule) << r << "," << c;
  }
}

// The tile error is a pairwise tree over row errors (N3.4), not a flat running sum. Search for
// a tile where the two orders pick different candidates, then check the library follows the tree.
float tree_sum(std::vector<float> e) {
  for (size_t w = 8; w >= 1; w /= 2)
    for (size_t i = 0; i < w; ++i) e[i] = e[i] + e[i + w];
  return e[0];
}
float flat_sum(const std::vector<float>& e) {
  float s = 0.0f;
  for (float v : e) s = s + v;
  return s;
}

TEST(Tiles, TreeNotFlatSum) {
  const float amax = 1536.0f, bound = 256.0f;  // S_enc = 1
  const float s_dec = 1.0f;
  int found = 0;
  const uint8_t s6 = num::scale_map6(6.0f, 1.0f), s4 = num::scale_map4(6.0f, 1.0f);
  for (uint64_t seed = 0; seed < 200 && found < 3; ++seed) {
    const std::vector<float> u = test::random_values(256, 1000 + seed, test::Dist::kUniform);
    std::vector<float> v(256);
    // v = alpha * u with v[0] = 6 (fixes the tile amax, so scale6 = 1.0 and scale4 = 1.5).
    // Small alpha favours map-to-6 (finer grid near 0), large alpha map-to-4.
    auto decide = [&](float alpha, bool tree) {
      for (int i = 0; i < 256; ++i) v[i] = alpha * u[i];
      v[0] = 6.0f;
      std::vector<float> e6(16), e4(16);
      for (int r = 0; r < 16; ++r) {
        e6[r] = num::row_error(v.data() + 16 * r, s6, s_dec, amax, bound, Rule::kMAE);
        e4[r] = num::row_error(v.data() + 16 * r, s4, s_dec, amax, bound, Rule::kMAE);
      }
      return tree ? tree_sum(e4) < tree_sum(e6) : flat_sum(e4) < flat_sum(e6);
    };
    float lo = 0.5f, hi = 5.9f;
    if (decide(lo, false) == decide(hi, false)) continue;
    const bool at_lo = decide(lo, false);
    for (int it = 0; it < 40; ++it) {
      const float mid = 0.5f * (lo + hi);
      (decide(mid, false) == at_lo ? lo : hi) = mid;
    }
    // Walk alpha one float at a time across the crossing; near it the rounding of the two
    // summation orders decides.
    float t = lo;
    for (int step = 0; step < 64; ++step) t = std::nextafter(t, 0.0f);
    for (int step = 0; step < 128 && found < 3; ++step, t = std::nextafter(t, 10.0f)) {
      const bool tree = decide(t, true), flat = decide(t, false);
      if (tree == flat) continue;
      ++found;
      const HostTensor x = test::make_matrix(DType::kFloat32, 16, 16, v);
      QuantizeConfig cfg;
      cfg.block = Block::k16x16;
      const auto q = test::quantize_host(x, tensor_amax(amax), cfg);
      EXPECT_EQ(q.scales.ptr<uint8_t>()[0], tree ? s4 : s6) << "seed " << seed << " alpha " << t;
    }
  }
  ASSERT_GT(found, 0) << "no tile found where the tree and the flat sum disagree";
}

// ---- RHT ----------------------------------------------------------------------------------
TEST(Rht, RowwiseEqualsQuantizingTheTransformedInput) {
  const int64_t R = 32, C = 64;
  const HostTensor x = test::random_matrix(DType::kBFloat16, R, C, 51, test::Dist::kStudentT);
  std::vector<float> y(static_cast<size_t>(R * C));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t b = 0; b < C / 16; ++b) {
      float in[16];
      for (int i = 0; i < 16; ++i) in[i] = x.at(r, b * 16 + i);
      num::rht16(in, y.data() + r * C + b * 16);
    }
  const HostTensor xy = test::make_matrix(DType::kFloat32, R, C, y);
  const float a = test::host_amax(y);  // amax after the transform
  QuantizeConfig cfg;
  cfg.rule = Rule::kAll6;
  cfg.gradient = true;
  cfg.scale_bound = 448.0f;
  cfg.rht_rowwise = true;
  const auto q = test::quantize_host(x, tensor_amax(a), cfg);
  cfg.rht_rowwise = false;
  const auto want = test::quantize_host(xy, tensor_amax(a), cfg);
  EXPECT_EQ(q.codes.bytes(), want.codes.bytes());
  EXPECT_EQ(q.scales.bytes(), want.scales.bytes());
  // Not a no-op.
  const auto plain = test::quantize_host(x, tensor_amax(a), cfg);
  EXPECT_NE(q.codes.bytes(), plain.codes.bytes());
}

TEST(Rht, ColumnAmaxIsAmaxAfterTransform) {
  const int64_t R = 48, C = 32;
  const HostTensor x = test::random_matrix(DType::kBFloat16, R, C, 52, test::Dist::kStudentT);
  const std::vector<int32_t> offs{16, 16, 48};
  std::vector<float> want_g(3, 0.0f);
  float want = 0.0f;
  for (int64_t t = 0; t < R; t += 16)
    for (int64_t c = 0; c < C; ++c) {
      float in[16], out[16];
      for (int i = 0; i < 16; ++i) in[i] = x.at(t + i, c);
      num::rht16(in, out);
      for (float o : out) {
        want = std::max(want, std::fabs(o));
        const size_t g = t < 16 ? 0 : 2;
        want_g[g] = std::max(want_g[g], std::fabs(o));
      }
    }
  EXPECT_EQ(test::amax_host(x, AmaxScope::kTensor, {}, true)[0], want);
  EXPECT_EQ(test::amax_host(x, AmaxScope::kGroup, offs, true), want_g);
  EXPECT_NE(want, test::amax_host(x, AmaxScope::kTensor)[0]);
}

// ---- stochastic rounding -------------------------------------------------------------------
QuantizeConfig sr_config(uint64_t seed, uint64_t offset = 0) {
  QuantizeConfig cfg;
  cfg.rule = Rule::kAll6;
  cfg.gradient = true;
  cfg.scale_bound = 448.0f;
  cfg.rounding = Rounding::kStochastic;
  cfg.seed = seed;
  cfg.offset = offset;
  return cfg;
}

TEST(Stochastic, ReproducibleAndSeedDependent) {
  const HostTensor x = test::random_matrix(DType::kBFloat16, 64, 64, 61);
  const float a = test::amax_host(x, AmaxScope::kTensor)[0];
  QuantizeConfig c1 = sr_config(7), c2 = sr_config(8), c3 = sr_config(7, 1);
  c1.columnwise = c2.columnwise = c3.columnwise = true;
  const auto q1 = test::quantize_host(x, tensor_amax(a), c1);
  const auto q1b = test::quantize_host(x, tensor_amax(a), c1);
  const auto q2 = test::quantize_host(x, tensor_amax(a), c2);
  const auto q3 = test::quantize_host(x, tensor_amax(a), c3);
  EXPECT_EQ(q1.codes.bytes(), q1b.codes.bytes());
  EXPECT_EQ(q1.codes_t.bytes(), q1b.codes_t.bytes());
  EXPECT_NE(q1.codes.bytes(), q2.codes.bytes());
  EXPECT_NE(q1.codes.bytes(), q3.codes.bytes());
  EXPECT_EQ(q1.scales.bytes(), q2.scales.bytes());  // SR changes codes only
  // Element (r, c) uses the random word of idx r*C + c (rowwise), R*C + c*R + r (columnwise).
  const float s_enc = num::encode_scale(a, 448.0f);
  for (int64_t r = 0; r < 64; r += 5)
    for (int64_t c = 0; c < 64; c += 3) {
      const uint8_t s = q1.scales.ptr<uint8_t>()[r * 4 + c / 16];
      const float v = num::clamp6(x.at(r, c) * num::inverse_scale(s, 1.0f / s_enc));
      EXPECT_EQ(code_at(q1.codes, r, c),
                num::e2m1_from_float_stochastic(v, num::random_bits(7, 0, r * 64 + c)));
      const uint8_t st = q1.scales_t.ptr<uint8_t>()[c * 4 + r / 16];
      const float vt = num::clamp6(x.at(r, c) * num::inverse_scale(st, 1.0f / s_enc));
      EXPECT_EQ(code_at(q1.codes_t, c, r),
                num::e2m1_from_float_stochastic(vt, num::random_bits(7, 0, 64 * 64 + c * 64 + r)));
    }
}

// Dequantized SR draws are unbiased: every column of N identical rows holds N independent draws
// of a value v between grid points lo < v < hi; their mean is within 5 sigma of the binomial,
// sigma = sqrt((hi - v)(v - lo) / N).
TEST(Stochastic, MeanConverges) {
  const int64_t N = 4096;
  const std::vector<float> row{6.0f, 0.3f, 0.8f,  1.1f,  1.7f,  2.2f,  2.9f,  3.3f,
                               4.1f, 5.5f, -0.1f, -1.3f, -2.6f, -3.9f, -5.9f, 0.05f};
  std::vector<float> v;
  for (int64_t i = 0; i < N; ++i) v.insert(v.end(), row.begin(), row.end());
  const HostTensor x = test::make_matrix(DType::kFloat32, N, 16, v);
  const float a = 2688.0f;  // S_enc = 1, every block scale 1.0: dequantized = grid value
  const auto q = test::quantize_host(x, tensor_amax(a), sr_config(123));
  const HostTensor d = test::dequantize_host(q.codes, q.scales, tensor_amax(a), 448.0f);
  const float grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int c = 1; c < 16; ++c) {
    const double t = std::fabs(row[c]);
    double lo = 0, hi = 6;
    for (int g = 0; g < 7; ++g)
      if (grid[g] <= t && t < grid[g + 1]) lo = grid[g], hi = grid[g + 1];
    double mean = 0;
    for (int64_t r = 0; r < N; ++r) {
      const double y = d.at(r, c);
      ASSERT_TRUE(std::fabs(std::fabs(y) - lo) < 1e-6 || std::fabs(std::fabs(y) - hi) < 1e-6);
      mean += y;
    }
    mean /= N;
    const double sigma = std::sqrt((hi - t) * (t - lo) / N);
    EXPECT_NEAR(mean, row[c], 5 * sigma + 1e-6) << "column " << c;
  }
}

}  // namespace
}  // namespace f46
