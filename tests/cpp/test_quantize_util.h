// Helpers for the quantize tests: run f46::quantize/dequantize/amax on host tensors with
// freshly allocated outputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "f46/f46.h"
#include "test_helpers.h"

namespace f46::test {

struct Quantized {
  HostTensor codes, scales, codes_t, scales_t;  // (R, C/2), (R, C/16), (C, R/2), (C, R/16)
};

// Amax values and optional offsets for a GlobalAmax of the given scope.
struct AmaxSpec {
  AmaxScope scope = AmaxScope::kTensor;
  std::vector<float> amax;             // (1), (R) or (E)
  std::vector<int32_t> offsets;        // (E) for kGroup
  std::vector<float> amax_columnwise;  // optional
};

inline AmaxSpec tensor_amax(float a) { return AmaxSpec{AmaxScope::kTensor, {a}, {}, {}}; }

class GlobalAmaxOwner {
 public:
  explicit GlobalAmaxOwner(const AmaxSpec& s)
      : amax_(float_tensor(s.amax)),
        offs_(s.offsets.empty() ? HostTensor() : int_tensor(s.offsets)),
        col_(s.amax_columnwise.empty() ? HostTensor() : float_tensor(s.amax_columnwise)) {
    g_.scope = s.scope;
    g_.amax = amax_.view();
    if (!s.offsets.empty()) g_.offsets = offs_.view();
    if (!s.amax_columnwise.empty()) g_.amax_columnwise = col_.view();
  }
  const GlobalAmax& get() const { return g_; }

 private:
  HostTensor amax_, offs_, col_;
  GlobalAmax g_;
};

inline Quantized quantize_host(const HostTensor& x, const AmaxSpec& a, const QuantizeConfig& cfg) {
  const int64_t R = x.size(0), C = x.size(1);
  Quantized q;
  QuantizedOutputs out;
  if (cfg.rowwise) {
    q.codes = HostTensor(DType::kUInt8, {R, C / 2});
    q.scales = HostTensor(DType::kUInt8, {R, C / 16});
    q.codes.fill_bytes(0xAB);  // every byte must be written
    q.scales.fill_bytes(0xAB);
    out.codes = q.codes.view();
    out.scales = q.scales.view();
  }
  if (cfg.columnwise) {
    q.codes_t = HostTensor(DType::kUInt8, {C, R / 2});
    q.scales_t = HostTensor(DType::kUInt8, {C, R / 16});
    q.codes_t.fill_bytes(0xAB);
    q.scales_t.fill_bytes(0xAB);
    out.codes_t = q.codes_t.view();
    out.scales_t = q.scales_t.view();
  }
  GlobalAmaxOwner g(a);
  quantize(x.view(), g.get(), cfg, out);
  return q;
}

inline HostTensor dequantize_host(const HostTensor& codes, const HostTensor& scales,
                                  const AmaxSpec& a, float bound,
                                  DType out_dtype = DType::kFloat32) {
  HostTensor out(out_dtype, {codes.size(0), codes.size(1) * 2});
  GlobalAmaxOwner g(a);
  dequantize(codes.view(), scales.view(), g.get(), bound, out.view());
  return out;
}

inline std::vector<float> amax_host(const HostTensor& x, AmaxScope scope,
                                    const std::vector<int32_t>& offsets = {},
                                    bool rht_columns = false) {
  const int64_t n = scope == AmaxScope::kTensor ? 1
                    : scope == AmaxScope::kRow  ? x.size(0)
                                                : static_cast<int64_t>(offsets.size());
  HostTensor out(DType::kFloat32, std::vector<int64_t>{n});
  HostTensor offs = offsets.empty() ? HostTensor() : int_tensor(offsets);
  AmaxConfig cfg;
  cfg.scope = scope;
  if (!offsets.empty()) cfg.offsets = offs.view();
  cfg.rht_columns = rht_columns;
  amax(x.view(), cfg, out.view());
  return out.to_floats();
}

// Rows [r0, r1) of a 2-D host tensor as a (non-owning) view.
inline TensorView row_slice(const HostTensor& x, int64_t r0, int64_t r1) {
  TensorView v = x.view();
  v.data = static_cast<uint8_t*>(v.data) + r0 * v.strides[0] * dtype_size(v.dtype);
  v.shape[0] = r1 - r0;
  return v;
}

// The transpose of a 2-D host tensor, contiguous, same dtype (values copied exactly).
inline HostTensor transpose(const HostTensor& x) {
  HostTensor t(x.dtype(), {x.size(1), x.size(0)});
  for (int64_t r = 0; r < x.size(0); ++r)
    for (int64_t c = 0; c < x.size(1); ++c) t.set_at(c, r, x.at(r, c));
  return t;
}

// Code of element (r, c) of a packed (R, C/2) codes tensor (N1.2).
inline uint8_t code_at(const HostTensor& codes, int64_t r, int64_t c) {
  const uint8_t b = codes.ptr<uint8_t>()[r * codes.size(1) + c / 2];
  return static_cast<uint8_t>((b >> ((c & 1) * 4)) & 15u);
}

// quantize_experts' inputs and outputs: w (E, N, K) with very different per-expert magnitudes
// (expert 1 all zero when E > 1), amax (E) the experts' amaxes, outputs pre-filled with 0xAB.
struct ExpertsCase {
  int64_t e, n, k;
  HostTensor w, amax, codes, scales, codes_t, scales_t;
  ExpertsCase(int64_t e_, int64_t n_, int64_t k_, uint64_t seed) : e(e_), n(n_), k(k_) {
    w = HostTensor(DType::kBFloat16, {e, n, k});
    std::vector<float> am(static_cast<size_t>(e), 0.0f);
    for (int64_t g = 0; g < e; ++g) {
      const float scale = g == 1 ? 0.0f : std::ldexp(1.0f, static_cast<int>(g % 9) * 3 - 12);
      const std::vector<float> v =
          random_values(n * k, seed + g, Dist::kGaussian, scale, DType::kBFloat16);
      for (int64_t i = 0; i < n * k; ++i) {
        w.set(g * n * k + i, v[i]);
        am[g] = std::max(am[g], std::fabs(v[i]));
      }
    }
    amax = float_tensor(am);
    codes = HostTensor(DType::kUInt8, {e, n, k / 2});
    scales = HostTensor(DType::kUInt8, {e, n, k / 16});
    codes_t = HostTensor(DType::kUInt8, {e, k, n / 2});
    scales_t = HostTensor(DType::kUInt8, {e, k, n / 16});
    for (HostTensor* t : {&codes, &scales, &codes_t, &scales_t}) t->fill_bytes(0xAB);
  }
  // Expert g of w as its own (N, K) tensor.
  HostTensor expert(int64_t g) const {
    HostTensor x(DType::kBFloat16, {n, k});
    for (int64_t i = 0; i < n * k; ++i) x.set(i, w.get(g * n * k + i));
    return x;
  }
};

// The config of an experts case: block, rule and outputs.
inline QuantizeConfig experts_config(Block block, Rule rule, bool rowwise, bool columnwise) {
  QuantizeConfig cfg;
  cfg.block = block;
  cfg.rule = rule;
  cfg.rowwise = rowwise;
  cfg.columnwise = columnwise;
  return cfg;
}

// The outputs a call with cfg writes, among (codes, scales, codes_t, scales_t).
inline QuantizedOutputs outputs_of(const QuantizeConfig& cfg, const TensorView& c,
                                   const TensorView& s, const TensorView& ct,
                                   const TensorView& st) {
  QuantizedOutputs o;
  if (cfg.rowwise) o.codes = c, o.scales = s;
  if (cfg.columnwise) o.codes_t = ct, o.scales_t = st;
  return o;
}
// ... an ExpertsCase's host outputs.
inline QuantizedOutputs expert_outputs(ExpertsCase& c, const QuantizeConfig& cfg) {
  return outputs_of(cfg, c.codes.view(), c.scales.view(), c.codes_t.view(), c.scales_t.view());
}

// Bytes [g * size, (g + 1) * size) of a (E, ...) output equal the whole of `want`.
inline bool expert_bytes_equal(const HostTensor& all, int64_t g, const HostTensor& want) {
  const size_t size = want.bytes().size();
  return std::memcmp(all.bytes().data() + g * size, want.bytes().data(), size) == 0;
}

}  // namespace f46::test
