// Shared test utilities: 16-bit float conversions, seeded random data, and an owning host
// tensor that hands out f46::TensorView. Header-only, used by every C++ test file.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "f46/f46.h"

namespace f46::test {

// ---- 16-bit float conversions ---------------------------------------------------------------
inline uint32_t float_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
// float -> bf16, round to nearest even; NaN stays a (quiet) NaN.
inline uint16_t float_to_bf16(float x) {
  const uint32_t u = float_bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }
// Round a float to the nearest bf16 value and back.
inline float round_bf16(float x) { return bf16_to_float(float_to_bf16(x)); }

// float -> IEEE fp16, round to nearest even, overflow to Inf, sub-normals kept.
inline uint16_t float_to_fp16(float x) {
  const uint32_t u = float_bits(x);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);   // NaN
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds past 65504
  if (a < 0x38800000u) {  // below 2^-14: sub-normal grid of 2^-24, nearest-even via rint
    const float m = std::nearbyint(bits_float(a) * 16777216.0f);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(m));
  }
  const uint32_t r = a + 0xFFFu + ((a >> 13) & 1u);
  return static_cast<uint16_t>(sign | (((r >> 13) - (112u << 10)) & 0x7FFFu));
}
inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 31u, m = h & 1023u;
  float v;
  if (e == 0)
    v = static_cast<float>(m) * 5.9604644775390625e-08f;  // m * 2^-24
  else if (e == 31)
    v = m ? NAN : INFINITY;
  else
    v = bits_float(((e + 112u) << 23) | (m << 13));
  return bits_float(float_bits(v) | sign);
}
inline float round_fp16(float x) { return fp16_to_float(float_to_fp16(x)); }

// Round a float to what storing it in `t` keeps (identity for float32).
inline float round_to(DType t, float x) {
  if (t == DType::kBFloat16) return round_bf16(x);
  if (t == DType::kFloat16) return round_fp16(x);
  return x;
}

// ---- an owning host tensor ------------------------------------------------------------------
// Contiguous by default; `row_stride` > cols gives a 2-D tensor with padded rows.
class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(DType t, std::initializer_list<int64_t> shape) {
    init(t, std::vector<int64_t>(shape), 0);
  }
  HostTensor(DType t, const std::vector<int64_t>& shape, int64_t row_stride = 0) {
    init(t, shape, row_stride);
  }
  // Copies own their storage (the view points into it); moves keep the buffer.
  HostTensor(const HostTensor& o) : storage_(o.storage_), view_(o.view_) { repoint(o); }
  HostTensor& operator=(const HostTensor& o) {
    if (this != &o) {
      storage_ = o.storage_;
      view_ = o.view_;
      repoint(o);
    }
    return *this;
  }
  HostTensor(HostTensor&&) noexcept = default;
  HostTensor& operator=(HostTensor&&) noexcept = default;

  TensorView& view() { return view_; }
  const TensorView& view() const { return view_; }
  operator TensorView&() { return view_; }
  operator const TensorView&() const { return view_; }
  void* data() { return storage_.data(); }
  int64_t numel() const { return view_.numel(); }
  DType dtype() const { return view_.dtype; }
  int64_t size(int d) const { return view_.size(d); }

  template <typename T>
  T* ptr() {
    return reinterpret_cast<T*>(storage_.data());
  }
  template <typename T>
  const T* ptr() const {
    return reinterpret_cast<const T*>(storage_.data());
  }

  // Element offset (in elements) of a linear index over the logical shape.
  int64_t offset_of(int64_t linear) const {
    int64_t off = 0;
    for (int d = view_.ndim - 1; d >= 0; --d) {
      off += (linear % view_.shape[d]) * view_.strides[d];
      linear /= view_.shape[d];
    }
    return off;
  }
  // Read/write element `linear` (row-major logical order) as float (float dtypes and int32).
  float get(int64_t linear) const { return load(offset_of(linear)); }
  void set(int64_t linear, float v) { store(offset_of(linear), v); }
  float at(int64_t r, int64_t c) const { return load(r * view_.strides[0] + c * view_.strides[1]); }
  void set_at(int64_t r, int64_t c, float v) {
    store(r * view_.strides[0] + c * view_.strides[1], v);
  }
  // All logical elements in row-major order, as floats.
  std::vector<float> to_floats() const {
    std::vector<float> out(static_cast<size_t>(numel()));
    for (int64_t i = 0; i < numel(); ++i) out[static_cast<size_t>(i)] = get(i);
    return out;
  }
  // Raw bytes of the storage (includes row padding).
  const std::vector<uint8_t>& bytes() const { return storage_; }
  void fill_bytes(uint8_t b) { std::memset(storage_.data(), b, storage_.size()); }

 private:
  void init(DType t, const std::vector<int64_t>& shape, int64_t row_stride) {
    view_ = TensorView{};
    view_.dtype = t;
    view_.ndim = static_cast<int>(shape.size());
    for (int d = 0; d < view_.ndim; ++d) view_.shape[d] = shape[static_cast<size_t>(d)];
    int64_t stride = 1;
    for (int d = view_.ndim - 1; d >= 0; --d) {
      view_.strides[d] = stride;
      stride *= view_.shape[d];
    }
    int64_t elems = stride;
    if (view_.ndim == 2 && row_stride > view_.shape[1]) {
      view_.strides[0] = row_stride;
      elems = view_.shape[0] * row_stride;
    }
    storage_.assign(static_cast<size_t>(std::max<int64_t>(elems, 1) * dtype_size(t)), 0);
    view_.data = storage_.data();
  }
  float load(int64_t off) const {
    const uint8_t* p = storage_.data() + off * dtype_size(view_.dtype);
    switch (view_.dtype) {
      case DType::kFloat32: {
        float v;
        std::memcpy(&v, p, 4);
        return v;
      }
      case DType::kBFloat16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return bf16_to_float(h);
      }
      case DType::kFloat16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return fp16_to_float(h);
      }
      case DType::kInt32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        return static_cast<float>(v);
      }
      case DType::kUInt8:
        return static_cast<float>(*p);
    }
    return 0.0f;
  }
  void store(int64_t off, float v) {
    uint8_t* p = storage_.data() + off * dtype_size(view_.dtype);
    switch (view_.dtype) {
      case DType::kFloat32:
        std::memcpy(p, &v, 4);
        break;
      case DType::kBFloat16: {
        const uint16_t h = float_to_bf16(v);
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::kFloat16: {
        const uint16_t h = float_to_fp16(v);
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::kInt32: {
        const int32_t i = static_cast<int32_t>(v);
        std::memcpy(p, &i, 4);
        break;
      }
      case DType::kUInt8:
        *p = static_cast<uint8_t>(v);
        break;
    }
  }

  void repoint(const HostTensor& o) {
    if (o.view_.data != nullptr) view_.data = storage_.data();
  }

  std::vector<uint8_t> storage_;
  TensorView view_;
};

// A float32 (n) tensor holding `values`.
inline HostTensor float_tensor(const std::vector<float>& values) {
  HostTensor t(DType::kFloat32, std::vector<int64_t>{static_cast<int64_t>(values.size())});
  std::memcpy(t.data(), values.data(), values.size() * 4);
  return t;
}
// An int32 (n) tensor holding `values` (group offsets).
inline HostTensor int_tensor(const std::vector<int32_t>& values) {
  HostTensor t(DType::kInt32, std::vector<int64_t>{static_cast<int64_t>(values.size())});
  std::memcpy(t.data(), values.data(), values.size() * 4);
  return t;
}

// ---- seeded random data ---------------------------------------------------------------------
enum class Dist { kGaussian, kStudentT, kUniform };

// `n` values from `dist` (scaled by `scale`), rounded to dtype `t` so they are exact there.
inline std::vector<float> random_values(int64_t n, uint64_t seed, Dist dist = Dist::kGaussian,
                                        float scale = 1.0f, DType t = DType::kFloat32,
                                        double student_dof = 3.0) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::student_t_distribution<double> student(student_dof);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) {
    double d = dist == Dist::kGaussian   ? normal(gen)
               : dist == Dist::kStudentT ? student(gen)
                                         : uniform(gen);
    x = round_to(t, static_cast<float>(d * scale));
  }
  return v;
}

// A (rows, cols) tensor of dtype `t` (row stride `row_stride` when > cols) filled with `values`
// (row-major, rounded to `t`).
inline HostTensor make_matrix(DType t, int64_t rows, int64_t cols, const std::vector<float>& values,
                              int64_t row_stride = 0) {
  HostTensor m(t, std::vector<int64_t>{rows, cols}, row_stride);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) m.set_at(r, c, values[static_cast<size_t>(r * cols + c)]);
  return m;
}
inline HostTensor random_matrix(DType t, int64_t rows, int64_t cols, uint64_t seed,
                                Dist dist = Dist::kGaussian, float scale = 1.0f,
                                int64_t row_stride = 0) {
  return make_matrix(t, rows, cols, random_values(rows * cols, seed, dist, scale, t), row_stride);
}

// ---- small numeric helpers ------------------------------------------------------------------
// Two floats are bitwise equal (NaN == NaN of the same pattern, +0 != -0).
inline bool same_bits(float a, float b) { return float_bits(a) == float_bits(b); }

inline double mse(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    s += d * d;
  }
  return a.empty() ? 0.0 : s / static_cast<double>(a.size());
}

// Max |x| over `v` (NaN-propagating, as f46::amax).
inline float host_amax(const std::vector<float>& v) {
  float m = 0.0f;
  for (float x : v) {
    if (std::isnan(x)) return x;
    m = std::max(m, std::fabs(x));
  }
  return m;
}

}  // namespace f46::test
