// CPU reference of f46::dequantize (docs/numerics.md N8).
#include <vector>

#include "backend.h"
#include "common/numerics.h"
#include "cpu/quantize_io.h"

namespace f46::cpu {

void dequantize(const TensorView& codes, const TensorView& scales, const GlobalAmax& amax,
                float scale_bound, TensorView& out, const Context& /*ctx*/) {
  const int64_t rows = out.size(0), cols = out.size(1);
  const std::vector<float> row_amax = detail::row_amaxes(amax.scope, amax.amax, amax.offsets, rows);
  detail::parallel_for(rows, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* cr = codes.ptr<const uint8_t>() + r * codes.strides[0];    // (rows, cols/2)
      const uint8_t* sr = scales.ptr<const uint8_t>() + r * scales.strides[0];  // (rows, cols/16)
      for (int64_t b = 0; b < cols / 16; ++b) {
        const float decode = num::decode_factor(sr[b], row_amax[r], scale_bound);  // N8
        for (int64_t c = b * 16; c < b * 16 + 16; ++c) {
          const uint8_t code = static_cast<uint8_t>((cr[c / 2] >> ((c & 1) * 4)) & 15u);  // N1.2
          detail::store(out, r * out.strides[0] + c, num::mul(num::e2m1_value(code), decode));
        }
      }
    }
  });
}

}  // namespace f46::cpu
