// CPU reference helpers shared by quantize, dequantize and amax: exact loads of bf16/fp16/fp32
// elements as FP32, nearest-even stores, and a deterministic row-block thread split.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "common/numerics.h"
#include "f46/tensor.h"

namespace f46::cpu::detail {

// ---- 16-bit floats ---------------------------------------------------------------------------
inline float bf16_to_float(uint16_t h) { return num::from_bits(static_cast<uint32_t>(h) << 16); }
inline uint16_t float_to_bf16(float x) {  // nearest-even; NaN stays a quiet NaN
  const uint32_t u = num::bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 31u, m = h & 1023u;
  uint32_t u;
  if (e == 0) {
    u = num::bits(static_cast<float>(m) * 5.9604644775390625e-08f);  // m * 2^-24, exact
  } else if (e == 31) {
    u = m ? 0x7FC00000u | (m << 13) : 0x7F800000u;
  } else {
    u = ((e + 112u) << 23) | (m << 13);
  }
  return num::from_bits(u | sign);
}
inline uint16_t float_to_fp16(float x) {  // nearest-even, overflow to Inf, sub-normals kept
  const uint32_t u = num::bits(x);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520: Inf
  if (a < 0x38800000u) {  // below 2^-14: multiples of 2^-24
    const float m = __builtin_rintf(num::from_bits(a) * 16777216.0f);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(m));
  }
  const uint32_t r = a + 0xFFFu + ((a >> 13) & 1u);
  return static_cast<uint16_t>(sign | (((r >> 13) - (112u << 10)) & 0x7FFFu));
}

// Element (r, c) of a 2-D float view (bf16/fp16/fp32), exactly as FP32.
inline float load(const TensorView& v, int64_t r, int64_t c) {
  const int64_t off = r * v.strides[0] + c * v.strides[1];
  switch (v.dtype) {
    case DType::kFloat32:
      return v.ptr<const float>()[off];
    case DType::kBFloat16:
      return bf16_to_float(v.ptr<const uint16_t>()[off]);
    case DType::kFloat16:
      return fp16_to_float(v.ptr<const uint16_t>()[off]);
    default:
      return 0.0f;
  }
}
// Row r, columns [c0, c0 + n) of a 2-D float view into dst.
inline void load_row(const TensorView& v, int64_t r, int64_t c0, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = load(v, r, c0 + i);
}
// Store `x` at element offset `off` of a float view, one nearest-even rounding.
inline void store(const TensorView& v, int64_t off, float x) {
  switch (v.dtype) {
    case DType::kFloat32:
      v.ptr<float>()[off] = x;
      break;
    case DType::kBFloat16:
      v.ptr<uint16_t>()[off] = float_to_bf16(x);
      break;
    case DType::kFloat16:
      v.ptr<uint16_t>()[off] = float_to_fp16(x);
      break;
    default:
      break;
  }
}

// ---- threading ---------------------------------------------------------------------------------
// Runs fn(begin, end) over [0, n) split into contiguous chunks on up to hardware_concurrency
// threads. Every index is computed by exactly one call with the same arithmetic, so results do
// not depend on the thread count.
template <typename Fn>
void parallel_for(int64_t n, int64_t min_per_thread, Fn&& fn) {
  const int64_t hw =
      std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()));
  const int64_t threads =
      std::min<int64_t>(hw, std::max<int64_t>(1, n / std::max<int64_t>(1, min_per_thread)));
  if (threads <= 1) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t chunk = (n + threads - 1) / threads;
  for (int64_t t = 1; t < threads; ++t) {
    const int64_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) pool.emplace_back([&fn, b, e] { fn(b, e); });
  }
  fn(int64_t{0}, std::min(n, chunk));
  for (auto& th : pool) th.join();
}

// Exceptions must not escape a worker thread; backends only run on validated input, so the
// workers never throw (they only do arithmetic).

// Group of row r for cumulative ends offs (E): the g with offs[g-1] <= r < offs[g], or -1.
inline int64_t group_of(const int32_t* offs, int64_t stride, int64_t num_groups, int64_t r) {
  // Offsets are non-decreasing: the first g with offs[g] > r.
  int64_t lo = 0, hi = num_groups;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (offs[mid * stride] > r)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo < num_groups ? lo : -1;
}

// Global amax of each row (N2): tensor, per row, or per group (rows outside every group: 0).
inline std::vector<float> row_amaxes(AmaxScope scope, const TensorView& amax,
                                     const TensorView& offsets, int64_t rows) {
  std::vector<float> out(static_cast<size_t>(rows), 0.0f);
  const float* a = amax.ptr<const float>();
  const int64_t as = amax.strides[0];
  for (int64_t r = 0; r < rows; ++r) {
    float v = 0.0f;
    if (scope == AmaxScope::kTensor) {
      v = a[0];
    } else if (scope == AmaxScope::kRow) {
      v = a[r * as];
    } else {
      const int64_t g =
          group_of(offsets.ptr<const int32_t>(), offsets.strides[0], offsets.size(0), r);
      v = g < 0 ? 0.0f : a[g * as];
    }
    out[static_cast<size_t>(r)] = v;
  }
  return out;
}

}  // namespace f46::cpu::detail
