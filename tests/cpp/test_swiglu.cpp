// f46::swiglu / swiglu_backward on the CPU (docs/numerics.md N13): the FP32 formulas against an
// FP64 evaluation with the same roundings to the storage dtype, the outputs' per-group amaxes
// against the N9 amax of the written rows (bitwise), and argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "f46/f46.h"
#include "gemm_test_util.h"
#include "test_helpers.h"

namespace f46::test {
namespace {

double silu64(double x) { return x / (1.0 + std::exp(-x)); }
double silu_grad64(double dy, double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  return dy * s * (1.0 + x * (1.0 - s));
}

// One unit in the last place of `t` at |v| (normal range; the smallest normal's below it).
double ulp(DType t, double v) {
  const int mant = t == DType::kBFloat16 ? 7 : (t == DType::kFloat16 ? 10 : 23);
  const int emin = t == DType::kFloat16 ? -14 : -126;
  const int e = v == 0.0 ? emin : std::max(emin, static_cast<int>(std::floor(std::log2(std::fabs(v)))));
  return std::ldexp(1.0, e - mant);
}

// N9 amax of rows [r0, r1) of y.
float rows_amax(const HostTensor& y, int64_t r0, int64_t r1) {
  uint32_t m = 0;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = 0; c < y.size(1); ++c) m = std::max(m, float_bits(y.at(r, c)) & 0x7FFFFFFFu);
  return bits_float(m);
}

void expect_group_amax(const HostTensor& y, const std::vector<int32_t>& offs,
                       const HostTensor& amax, const char* what) {
  int64_t prev = 0;
  for (size_t g = 0; g < offs.size(); ++g) {
    const float want = rows_amax(y, prev, offs[g]);
    EXPECT_TRUE(same_bits(amax.get(static_cast<int64_t>(g)), want))
        << what << " group " << g << ": " << amax.get(static_cast<int64_t>(g)) << " vs " << want;
    prev = offs[g];
  }
}

constexpr DType kTypes[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};

TEST(SwiGLU, ForwardMatchesFp64WithTheSameRoundings) {
  for (DType t : kTypes) {
    const int64_t m = 37, f = 48;
    const HostTensor a = random_matrix(t, m, f, 1, Dist::kGaussian, 4.0f);
    const HostTensor b = random_matrix(t, m, f, 2, Dist::kGaussian, 2.0f);
    HostTensor out(t, {m, f}), none;
    swiglu(a, b, out, none, none);
    int64_t exact = 0;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < f; ++c) {
        const double s = round_to(t, static_cast<float>(silu64(a.at(r, c))));
        const double want = round_to(t, static_cast<float>(s * b.at(r, c)));
        const double got = out.at(r, c);
        exact += got == want;
        // float exp against double exp: s may land one unit of t away at a rounding boundary.
        EXPECT_LE(std::fabs(got - want), ulp(t, want) + 2.0 * std::fabs(b.at(r, c)) * ulp(t, s))
            << dtype_name(t) << " (" << r << ", " << c << ") a " << a.at(r, c) << " b " << b.at(r, c);
      }
    // 16-bit outputs: the FP32 arithmetic's rounding errors mostly vanish in the storage rounding.
    if (t != DType::kFloat32) EXPECT_GE(exact, m * f * 98 / 100) << dtype_name(t);
  }
}

TEST(SwiGLU, BackwardMatchesFp64WithTheSameRoundings) {
  for (DType t : kTypes) {
    const int64_t m = 29, f = 32;
    const HostTensor a = random_matrix(t, m, f, 3, Dist::kGaussian, 4.0f);
    const HostTensor b = random_matrix(t, m, f, 4, Dist::kGaussian, 2.0f);
    const HostTensor dy = random_matrix(t, m, f, 5);
    HostTensor da(t, {m, f}), db(t, {m, f}), none;
    swiglu_backward(dy, a, b, da, db, none, none, none);
    int64_t exact = 0;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < f; ++c) {
        const double x = a.at(r, c), g = dy.at(r, c);
        const double s = round_to(t, static_cast<float>(silu64(x)));
        const double ds = round_to(t, static_cast<float>(g * b.at(r, c)));
        const double want_db = round_to(t, static_cast<float>(g * s));
        const double want_da = round_to(t, static_cast<float>(silu_grad64(ds, x)));
        exact += da.at(r, c) == want_da && db.at(r, c) == want_db;
        EXPECT_LE(std::fabs(db.at(r, c) - want_db), ulp(t, want_db) + 2.0 * std::fabs(g) * ulp(t, s))
            << dtype_name(t) << " db (" << r << ", " << c << ")";
        // FP32 sigmoid and the fused multiply-add: a few FP32 units of |ds| besides t's rounding.
        EXPECT_LE(std::fabs(da.at(r, c) - want_da), ulp(t, want_da) + 1e-6 * std::fabs(ds))
            << dtype_name(t) << " da (" << r << ", " << c << ") x " << x << " ds " << ds;
      }
    if (t != DType::kFloat32) EXPECT_GE(exact, m * f * 95 / 100) << dtype_name(t);
  }
}

// Special values: silu(+Inf) * 1 = +Inf (exp(-Inf) = 0); a NaN
// propagates to the output and to its group's amax; the amaxes are those of the written rows,
// rows past offs[E-1] count in no group and an empty group has amax 0.
TEST(SwiGLU, GroupAmaxesAreTheN9AmaxesOfTheWrittenRows) {
  const float inf = std::numeric_limits<float>::infinity();
  for (DType t : kTypes) {
    const int64_t m = 12, f = 16;
    HostTensor a = random_matrix(t, m, f, 6, Dist::kGaussian, 3.0f);
    HostTensor b = random_matrix(t, m, f, 7);
    const HostTensor dy = random_matrix(t, m, f, 8);
    a.set_at(11, 3, 1000.0f);  // past the last group: largest output, must not count
    b.set_at(11, 3, 1000.0f);
    a.set_at(5, 2, std::nanf(""));  // group 2 (rows 4..8): NaN
    a.set_at(1, 7, inf);            // group 0: +Inf * b
    b.set_at(1, 7, 1.0f);
    const std::vector<int32_t> o = {4, 4, 9, 10};  // group 1 empty; rows 10, 11 outside
    const HostTensor offs = int_tensor(o);
    HostTensor out(t, {m, f}), amax(DType::kFloat32, {4});
    swiglu(a, b, out, offs, amax);
    EXPECT_EQ(out.at(1, 7), inf) << dtype_name(t);
    EXPECT_TRUE(std::isnan(out.at(5, 2))) << dtype_name(t);
    EXPECT_EQ(amax.get(0), inf) << dtype_name(t);
    EXPECT_EQ(amax.get(1), 0.0f) << dtype_name(t);
    EXPECT_TRUE(std::isnan(amax.get(2))) << dtype_name(t);
    EXPECT_LT(amax.get(3), 1000.0f) << dtype_name(t);
    expect_group_amax(out, o, amax, "out");

    HostTensor da(t, {m, f}), db(t, {m, f}), amax_da(DType::kFloat32, {4}),
        amax_db(DType::kFloat32, {4}), none;
    swiglu_backward(dy, a, b, da, db, offs, amax_da, amax_db);
    expect_group_amax(da, o, amax_da, "da");
    expect_group_amax(db, o, amax_db, "db");
    EXPECT_TRUE(std::isnan(amax_da.get(2)) && std::isnan(amax_db.get(2))) << dtype_name(t);
    // Without amaxes the outputs are the same.
    HostTensor da2(t, {m, f}), db2(t, {m, f});
    swiglu_backward(dy, a, b, da2, db2, none, none, none);
    EXPECT_EQ(da2.bytes(), da.bytes());
    EXPECT_EQ(db2.bytes(), db.bytes());
  }
}

TEST(SwiGLU, ErrorsNameTheArgument) {
  HostTensor a(DType::kBFloat16, {8, 16}), b(DType::kBFloat16, {8, 16}), out(DType::kBFloat16, {8, 16});
  HostTensor none, amax(DType::kFloat32, {2});
  HostTensor b_short(DType::kBFloat16, {7, 16}), b_f32(DType::kFloat32, {8, 16});
  HostTensor i8(DType::kUInt8, {8, 16}), a3(DType::kBFloat16, {2, 4, 16});
  expect_error([&] { swiglu(a, b_short, out, none, none); }, {"b", "shape", "[7, 16]"});
  expect_error([&] { swiglu(a, b_f32, out, none, none); }, {"b", "dtype"});
  expect_error([&] { swiglu(i8, i8, i8, none, none); }, {"a", "uint8"});
  expect_error([&] { swiglu(a3, a3, a3, none, none); }, {"a", "2-D"});
  expect_error([&] { swiglu(a, b, a, none, none); }, {"out", "a"});
  expect_error([&] { swiglu(a, b, out, none, amax); }, {"offs", "undefined"});
  expect_error([&] { swiglu(a, b, out, int_tensor({3, 9}), amax); }, {"offs", "exceeds"});
  expect_error([&] { swiglu(a, b, out, int_tensor({5, 3}), amax); }, {"offs", "non-decreasing"});
  HostTensor amax3(DType::kFloat32, {3});
  expect_error([&] { swiglu(a, b, out, int_tensor({3, 8}), amax3); }, {"amax", "[2]"});
  HostTensor da(DType::kBFloat16, {8, 16}), db(DType::kBFloat16, {8, 16});
  expect_error([&] { swiglu_backward(b_short, a, b, da, db, none, none, none); }, {"dout", "shape"});
  expect_error([&] { swiglu_backward(out, a, b, da, da, none, none, none); }, {"da", "db"});
  expect_error([&] { swiglu_backward(out, a, b, da, db, int_tensor({3, 8}), amax3, none); },
               {"amax_da", "[2]"});
  expect_error([&] { swiglu_backward(out, a, b, da, db, int_tensor({3, 8}), none, amax3); },
               {"amax_db", "[2]"});
}

}  // namespace
}  // namespace f46::test
