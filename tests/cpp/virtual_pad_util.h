// Shared by the CPU and CUDA tests of virtual token-group padding (GlobalAmax::source_offsets,
// docs/numerics.md N12): the padded copy's quantization, the reference the virtual form must
// equal bitwise.
#pragma once

#include <cstdint>
#include <vector>

#include "f46/f46.h"
#include "test_helpers.h"
#include "test_quantize_util.h"

namespace f46::test {

struct VirtualPadCase {
  HostTensor x;                         // (M, C) unpadded rows
  std::vector<int32_t> offs, poffs;     // source ends, padded ends (alignment 16)
  std::vector<float> amax;              // (E) per-group amax of x
  HostTensor padded;                    // pad_token_groups(x, offs, 16): (P, C)
};

inline VirtualPadCase virtual_pad_case(DType t, int64_t c, const std::vector<int32_t>& sizes,
                                       int64_t rows_past, uint64_t seed) {
  VirtualPadCase v;
  int64_t m = 0;
  for (int32_t s : sizes) v.offs.push_back(static_cast<int32_t>(m += s));
  m += rows_past;
  v.x = random_matrix(t, m, c, seed, Dist::kStudentT);
  const int64_t e = static_cast<int64_t>(sizes.size());
  const int64_t p = padded_rows(m, e, 16);
  v.padded = HostTensor(t, {p, c});
  HostTensor poffs(DType::kInt32, {e});
  pad_token_groups(v.x, int_tensor(v.offs), 16, v.padded, poffs);
  for (int64_t g = 0; g < e; ++g) v.poffs.push_back(static_cast<int32_t>(poffs.get(g)));
  v.amax = amax_host(v.x, AmaxScope::kGroup, v.offs);
  return v;
}

// The columnwise config of the wgrad operands: 4/6 MAE activations, or N4 gradients with SR.
inline QuantizeConfig virtual_pad_config(bool gradient) {
  QuantizeConfig cfg;
  cfg.rowwise = false;
  cfg.columnwise = true;
  if (gradient) {
    cfg.gradient = true;
    cfg.rule = Rule::kAll6;
    cfg.scale_bound = 448.0f;
    cfg.rounding = Rounding::kStochastic;
    cfg.seed = 11;
    cfg.offset = 3;
  }
  return cfg;
}

}  // namespace f46::test
