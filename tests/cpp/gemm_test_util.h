// Test utilities for the GEMM tests: random quantized operands built directly from bytes (no
// dependence on the quantizer), an independent FP64 dequantization, and an FP64 reference GEMM.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "f46/f46.h"
#include "test_helpers.h"

namespace f46::test {

// E2M1 value of a 4-bit code, written independently of src/common/numerics.h.
inline double e2m1_ref(int code) {
  static const double kMag[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  return (code & 8) ? -kMag[code & 7] : kMag[code & 7];
}
// E4M3 value of a finite byte: bias 7, sub-normals m * 2^-9.
inline double e4m3_ref(int byte) {
  const int e = (byte >> 3) & 15, m = byte & 7;
  const double v = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
  return (byte & 0x80) ? -v : v;
}

// A quantized matrix (rows, k) or a stack (lead, rows, k) of them.
struct QMatrix {
  HostTensor codes;   // (..., rows, k/2) uint8
  HostTensor scales;  // (..., rows, k/16) uint8
  int64_t rows = 0, k = 0, lead = 0;

  // Dequantized element (matrix `l` of the stack, row r, column c), exact in double.
  double deq(int64_t l, int64_t r, int64_t c) const {
    const uint8_t byte = codes.ptr<uint8_t>()[(l * rows + r) * (k / 2) + c / 2];
    const int code = (c % 2) ? byte >> 4 : byte & 15;
    return e2m1_ref(code) * e4m3_ref(scales.ptr<uint8_t>()[(l * rows + r) * (k / 16) + c / 16]);
  }
};

// Random codes (every nibble 0..15) and non-negative finite scale bytes in [lo, hi]
// (never 0x7F). lead = 0 gives a 2-D matrix.
inline QMatrix random_qmatrix(int64_t rows, int64_t k, uint64_t seed, int64_t lead = 0,
                              int scale_lo = 0x30, int scale_hi = 0x58) {
  QMatrix q;
  q.rows = rows;
  q.k = k;
  q.lead = lead;
  const int64_t l = lead > 0 ? lead : 1;
  if (lead > 0) {
    q.codes = HostTensor(DType::kUInt8, {lead, rows, k / 2});
    q.scales = HostTensor(DType::kUInt8, {lead, rows, k / 16});
  } else {
    q.codes = HostTensor(DType::kUInt8, {rows, k / 2});
    q.scales = HostTensor(DType::kUInt8, {rows, k / 16});
  }
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> byte(0, 255), sc(scale_lo, scale_hi);
  for (int64_t i = 0; i < l * rows * (k / 2); ++i)
    q.codes.ptr<uint8_t>()[i] = static_cast<uint8_t>(byte(gen));
  for (int64_t i = 0; i < l * rows * (k / 16); ++i) {
    int s = sc(gen);
    if (s == 0x7F) s = 0x7E;
    q.scales.ptr<uint8_t>()[i] = static_cast<uint8_t>(s);
  }
  return q;
}

// Rows [r0, r1) of a 2-D quantized matrix (or of matrix `l` of a stack) as a new 2-D matrix.
inline QMatrix slice_rows(const QMatrix& q, int64_t r0, int64_t r1, int64_t l = 0) {
  QMatrix s;
  s.rows = r1 - r0;
  s.k = q.k;
  s.codes = HostTensor(DType::kUInt8, {s.rows, q.k / 2});
  s.scales = HostTensor(DType::kUInt8, {s.rows, q.k / 16});
  const int64_t base = l * q.rows;
  for (int64_t r = 0; r < s.rows; ++r) {
    for (int64_t j = 0; j < q.k / 2; ++j)
      s.codes.ptr<uint8_t>()[r * (q.k / 2) + j] =
          q.codes.ptr<uint8_t>()[(base + r0 + r) * (q.k / 2) + j];
    for (int64_t j = 0; j < q.k / 16; ++j)
      s.scales.ptr<uint8_t>()[r * (q.k / 16) + j] =
          q.scales.ptr<uint8_t>()[(base + r0 + r) * (q.k / 16) + j];
  }
  return s;
}

// Columns [c0, c1) (multiples of 16) of a 2-D quantized matrix as a new matrix.
inline QMatrix slice_cols(const QMatrix& q, int64_t c0, int64_t c1) {
  QMatrix s;
  s.rows = q.rows;
  s.k = c1 - c0;
  s.codes = HostTensor(DType::kUInt8, {s.rows, s.k / 2});
  s.scales = HostTensor(DType::kUInt8, {s.rows, s.k / 16});
  for (int64_t r = 0; r < s.rows; ++r) {
    for (int64_t j = 0; j < s.k / 2; ++j)
      s.codes.ptr<uint8_t>()[r * (s.k / 2) + j] =
          q.codes.ptr<uint8_t>()[r * (q.k / 2) + c0 / 2 + j];
    for (int64_t j = 0; j < s.k / 16; ++j)
      s.scales.ptr<uint8_t>()[r * (s.k / 16) + j] =
          q.scales.ptr<uint8_t>()[r * (q.k / 16) + c0 / 16 + j];
  }
  return s;
}

inline QuantizedOperand operand(QMatrix& q, HostTensor& amax, AmaxScope scope, float bound) {
  QuantizedOperand op;
  op.codes = q.codes.view();
  op.scales = q.scales.view();
  op.amax = amax.view();
  op.scope = scope;
  op.scale_bound = bound;
  return op;
}

// Random positive amaxes.
inline std::vector<float> random_amax(int64_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> u(0.5f, 20.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(gen);
  return v;
}

// sum_k deq_a[la, m, k] * deq_b[lb, n, k] in double, over columns [k0, k1).
inline double dot_ref(const QMatrix& a, int64_t la, int64_t m, const QMatrix& b, int64_t lb,
                      int64_t n, int64_t k0, int64_t k1) {
  double s = 0.0;
  for (int64_t k = k0; k < k1; ++k) s += a.deq(la, m, k) * b.deq(lb, n, k);
  return s;
}

// Relative Frobenius error ||got - want|| / ||want||.
inline double rel_frobenius(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  return den == 0.0 ? std::sqrt(num) : std::sqrt(num / den);
}

// Output values of a bf16 or fp32 tensor as floats (row-major).
inline std::vector<float> values(const HostTensor& t) { return t.to_floats(); }

// Expects fn() to throw f46::Error whose message contains every string in `parts`.
inline void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an f46::Error mentioning '" << parts.front() << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "message lacks '" << p << "': " << msg;
  }
}

}  // namespace f46::test
