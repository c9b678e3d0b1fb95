// CPU reference of f46::swiglu / swiglu_backward (docs/numerics.md N13): the shared FP32
// arithmetic of common/swiglu_math.h with 1 + std::exp(-x), one nearest-even store per output, and the
// outputs' per-group N9 amaxes by the amax reference.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend.h"
#include "common/swiglu_math.h"
#include "cpu/quantize_io.h"

namespace f46::cpu {
namespace {

// Value `x` as stored in `v`'s dtype (one nearest-even rounding), back as FP32.
float rounded(const TensorView& v, float x) {
  switch (v.dtype) {
    case DType::kBFloat16:
      return detail::bf16_to_float(detail::float_to_bf16(x));
    case DType::kFloat16:
      return detail::fp16_to_float(detail::float_to_fp16(x));
    default:
      return x;
  }
}

// amax[g] = N9 amax of the rows of group g of the written output `y` (the amax reference).
void group_amax(const TensorView& y, const TensorView& offs, TensorView& amax, const Context& ctx) {
  AmaxConfig cfg;
  cfg.scope = AmaxScope::kGroup;
  cfg.offsets = offs;
  cpu::amax(y, cfg, amax, ctx);
}

}  // namespace

void swiglu(const TensorView& a, const TensorView& b, TensorView& out, const TensorView& offs,
            TensorView& amax, const Context& ctx) {
  const int64_t f = a.size(1);
  detail::parallel_for(a.size(0), 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < f; ++c) {
        const float x = detail::load(a, r, c);
        const float s = rounded(a, swiglu_math::silu(x, num::add(1.0f, std::exp(-x))));
        detail::store(out, r * f + c, num::mul(s, detail::load(b, r, c)));
      }
  });
  if (amax.defined()) group_amax(out, offs, amax, ctx);
}

void swiglu_backward(const TensorView& dout, const TensorView& a, const TensorView& b,
                     TensorView& da, TensorView& db, const TensorView& offs, TensorView& amax_da,
                     TensorView& amax_db, const Context& ctx) {
  const int64_t f = a.size(1);
  detail::parallel_for(a.size(0), 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < f; ++c) {
        const float x = detail::load(a, r, c), dy = detail::load(dout, r, c);
        const float d = num::add(1.0f, std::exp(-x));
        const float s = rounded(a, swiglu_math::silu(x, d));
        const float ds = rounded(a, num::mul(dy, detail::load(b, r, c)));
        detail::store(db, r * f + c, num::mul(dy, s));
        detail::store(da, r * f + c, swiglu_math::silu_grad(ds, x, d));
      }
  });
  if (amax_da.defined()) group_amax(da, offs, amax_da, ctx);
  if (amax_db.defined()) group_amax(db, offs, amax_db, ctx);
}

}  // namespace f46::cpu
