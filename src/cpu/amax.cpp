// CPU reference of f46::amax: NaN-propagating max |x| (docs/numerics.md N9), optionally of the
// random Hadamard transform of every 16-row block of each column (N7).
#include <algorithm>
#include <vector>

#include "backend.h"
#include "common/numerics.h"
#include "cpu/quantize_io.h"

namespace f46::cpu {
namespace {

// Integer max of |x| bit patterns of rows [r0, r1) (N9).
uint32_t rows_amax_bits(const TensorView& x, int64_t r0, int64_t r1) {
  uint32_t m = 0;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = 0; c < x.size(1); ++c) m = std::max(m, num::abs_bits(detail::load(x, r, c)));
  return m;
}

// Same, of the RHT of each column's 16-row blocks within rows [r0, r1) (r0, r1 multiples of 16).
uint32_t rows_amax_bits_rht(const TensorView& x, int64_t r0, int64_t r1) {
  uint32_t m = 0;
  float v[16], y[16];
  for (int64_t t = r0; t < r1; t += 16)
    for (int64_t c = 0; c < x.size(1); ++c) {
      for (int i = 0; i < 16; ++i) v[i] = detail::load(x, t + i, c);
      num::rht16(v, y);
      for (int i = 0; i < 16; ++i) m = std::max(m, num::abs_bits(y[i]));
    }
  return m;
}

// Amax of rows [r0, r1), split over threads by row blocks; the integer max is order-free.
float range_amax(const TensorView& x, int64_t r0, int64_t r1, bool rht) {
  const int64_t unit = rht ? 16 : 1;
  const int64_t units = (r1 - r0) / unit;
  if (units <= 0) return 0.0f;
  std::vector<uint32_t> partial(static_cast<size_t>(units), 0u);  // one slot per chunk start
  detail::parallel_for(units, 64 / unit + 1, [&](int64_t u0, int64_t u1) {
    const int64_t a = r0 + u0 * unit, b = r0 + u1 * unit;
    partial[static_cast<size_t>(u0)] = rht ? rows_amax_bits_rht(x, a, b) : rows_amax_bits(x, a, b);
  });
  uint32_t result = 0;
  for (uint32_t p : partial) result = std::max(result, p);
  return num::from_bits(result);
}

}  // namespace

void amax(const TensorView& x, const AmaxConfig& cfg, TensorView& out, const Context& /*ctx*/) {
  const int64_t R = x.size(0);
  float* o = out.ptr<float>();
  const int64_t os = out.strides[0];
  if (cfg.scope == AmaxScope::kTensor) {
    o[0] = range_amax(x, 0, R, cfg.rht_columns);
  } else if (cfg.scope == AmaxScope::kRow) {
    detail::parallel_for(R, 64, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) o[r * os] = num::from_bits(rows_amax_bits(x, r, r + 1));
    });
  } else {
    const int32_t* offs = cfg.offsets.ptr<const int32_t>();
    int64_t prev = 0;
    for (int64_t g = 0; g < cfg.offsets.size(0); ++g) {
      const int64_t end = offs[g * cfg.offsets.strides[0]];
      o[g * os] = range_amax(x, prev, end, cfg.rht_columns);
      prev = end;
    }
  }
}

}  // namespace f46::cpu
