// The global scales of every GEMM epilogue (docs/numerics.md N10), host + device: plan (a)'s
// CUTLASS alphas and epilogue kernel and plan (b)'s fused epilogue compute them here, so the
// plans agree by construction.
#pragma once

#include "common/numerics.h"
#include "cuda/gemm/grouped_bf16_gemm.h"
#include "f46/quantize.h"

namespace f46::cuda::gemm_detail {

// g = amax / (6 * bound): group g's amax (kGroup) or the tensor's.
F46_HD float gemm_global_scale(const float* amax, AmaxScope scope, int g, float bound) {
  const float am = scope == AmaxScope::kGroup ? amax[g] : amax[0];
  return num::div(am, num::mul(6.0f, bound));
}

// alpha[g] = gA * gB for tensor and group scopes (y = acc * alpha, one cast).
F46_HD float group_alpha_of(const GroupAlpha& al, int g) {
  return num::mul(gemm_global_scale(al.amax_a, al.scope_a, g, al.bound_a),
                  gemm_global_scale(al.amax_b, al.scope_b, g, al.bound_b));
}

}  // namespace f46::cuda::gemm_detail
