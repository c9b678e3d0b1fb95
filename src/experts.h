// Views of one expert of a grouped weight for quantize_experts (include/f46/quantize.h): its
// (N, K) slice, its amax as a per-tensor (1) amax, its slices of the (E, ...) outputs.
#pragma once

#include "f46/quantize.h"

namespace f46 {

struct ExpertViews {
  TensorView x;
  GlobalAmax amax;
  QuantizedOutputs out;
};

inline ExpertViews expert_views(const TensorView& w, const TensorView& amax,
                                const QuantizedOutputs& out, const QuantizeConfig& cfg, int64_t g) {
  ExpertViews v;
  v.x = select0(w, g);
  v.amax.scope = AmaxScope::kTensor;
  v.amax.amax = narrow0(amax, g, 1);
  if (cfg.rowwise) {
    v.out.codes = select0(out.codes, g);
    v.out.scales = select0(out.scales, g);
  }
  if (cfg.columnwise) {
    v.out.codes_t = select0(out.codes_t, g);
    v.out.scales_t = select0(out.scales_t, g);
  }
  return v;
}

}  // namespace f46
