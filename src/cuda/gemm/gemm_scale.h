// The global scales of every GEMM epilogue (docs/numerics.md N10), host + device: plan (a)'s
// CUTLASS alphas and epilogue kernel and plan (b)'s fused epilogue compute them here, so the
// plans agree by construction.
#pragma once

#include "common/numerics.h"
#include "cuda/gemm/grouped_bf16_gemm.h"
#include "f46/gemm.h"
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

// The amaxes, scopes and bounds of A and B that alpha[g] is computed from (host).
inline GroupAlpha group_alpha(const QuantizedOperand& a, const QuantizedOperand& b) {
  GroupAlpha al;
  al.amax_a = a.amax.ptr<const float>();
  al.scope_a = a.scope;
  al.bound_a = a.scale_bound;
  al.amax_b = b.amax.ptr<const float>();
  al.scope_b = b.scope;
  al.bound_b = b.scale_bound;
  return al;
}

// The fields the fused kernels' arguments share (plans (b), (c)): the 4-bit B operand (b_codes,
// b_scales, b_code_ld, b_scale_ld, b_code_gs, b_scale_gs; byte strides; (N, K) or (E, N, K)
// codes), the groups, the problem (m, n, k), the output row stride ld_d and alpha[g]'s inputs.
// A and the output pointer are each kernel's own.
template <class Args>
void set_fused_problem(Args& p, const QuantizedOperand& a, const QuantizedOperand& b,
                       const int32_t* offs, int groups, const TensorView& out) {
  p.offs = offs;
  p.groups = groups;
  p.m = static_cast<int>(a.codes.size(0));
  p.n = static_cast<int>(b.codes.size(-2));
  p.k = static_cast<int>(a.codes.size(1) * 2);
  p.ld_d = out.strides[0];
  p.alpha = group_alpha(a, b);
  const int nb = b.codes.ndim;
  p.b_codes = b.codes.ptr<const uint8_t>();
  p.b_scales = b.scales.ptr<const uint8_t>();
  p.b_code_ld = b.codes.strides[nb - 2];
  p.b_scale_ld = b.scales.strides[nb - 2];
  p.b_code_gs = nb == 3 ? b.codes.strides[0] : 0;
  p.b_scale_gs = nb == 3 ? b.scales.strides[0] : 0;
}

}  // namespace f46::cuda::gemm_detail
