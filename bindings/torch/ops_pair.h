// The pair GEMMs (f46::grouped_gemm_m_pair / grouped_gemm_k_pair): two GEMMs sharing one
// operand, each output bitwise the single op's. Included by ops_impl.h after its helpers.
#pragma once

namespace f46::torch_ext {

template <class Env>
std::tuple<at::Tensor, at::Tensor> grouped_gemm_m_pair_op(
    const at::Tensor& a_codes, const at::Tensor& a_scales, const at::Tensor& a_amax,
    c10::string_view a_scope, double a_bound, const at::Tensor& b1_codes,
    const at::Tensor& b1_scales, const at::Tensor& b1_amax, const at::Tensor& b2_codes,
    const at::Tensor& b2_scales, const at::Tensor& b2_amax, c10::string_view b_scope,
    double b_bound, const at::Tensor& offs, at::ScalarType out_dtype, c10::string_view plan,
    int64_t max_swizzle, c10::string_view raster) {
  const char* fn = "grouped_gemm_m_pair";
  check_dim(a_codes, 2, fn, "a_codes", "(M, K/2)");
  check_dim(b1_codes, 3, fn, "b1_codes", "(E, N, K/2)");
  check_dim(b2_codes, 3, fn, "b2_codes", "(E, N, K/2)");
  const AmaxScope sa = parse_scope(std::string(a_scope), fn, "a_scope");
  const AmaxScope sb = parse_scope(std::string(b_scope), fn, "b_scope");
  const GemmTuning tuning = parse_tuning(std::string(plan), max_swizzle, std::string(raster), fn);
  const auto opts = a_codes.options().dtype(out_dtype);
  at::Tensor out1 = at::empty_symint({a_codes.sym_size(0), b1_codes.sym_size(1)}, opts);  // (M, N)
  at::Tensor out2 = at::empty_symint({a_codes.sym_size(0), b2_codes.sym_size(1)}, opts);
  if constexpr (Env::kRun) {
    Env env(a_codes);
    const QuantizedOperand a = operand(a_codes, a_scales, a_amax, sa, a_bound, "a");
    const QuantizedOperand b1 = operand(b1_codes, b1_scales, b1_amax, sb, b_bound, "b1");
    const QuantizedOperand b2 = operand(b2_codes, b2_scales, b2_amax, sb, b_bound, "b2");
    const TensorView offv = to_view(offs, "offs");
    TensorView o1 = to_view(out1, "out1"), o2 = to_view(out2, "out2");
    const int64_t ws = grouped_gemm_m_workspace_bytes(a_codes.size(0), b1_codes.size(1),
                                                      a_codes.size(1) * 2, b1_codes.size(0));
    Context ctx = env.ctx(ws);
    ctx.gemm = tuning;
    call_f46([&] { f46::grouped_gemm_m_pair(a, b1, b2, offv, o1, o2, ctx); });
  }
  return {out1, out2};
}

template <class Env>
std::tuple<at::Tensor, at::Tensor> grouped_gemm_k_pair_op(
    const at::Tensor& a1_codes, const at::Tensor& a1_scales, const at::Tensor& a1_amax,
    const at::Tensor& a2_codes, const at::Tensor& a2_scales, const at::Tensor& a2_amax,
    c10::string_view a_scope, double a_bound, const at::Tensor& b_codes, const at::Tensor& b_scales,
    const at::Tensor& b_amax, c10::string_view b_scope, double b_bound, const at::Tensor& offs,
    at::ScalarType out_dtype, c10::string_view plan, int64_t max_swizzle, c10::string_view raster) {
  const char* fn = "grouped_gemm_k_pair";
  check_dim(a1_codes, 2, fn, "a1_codes", "(N, T/2)");
  check_dim(a2_codes, 2, fn, "a2_codes", "(N, T/2)");
  check_dim(b_codes, 2, fn, "b_codes", "(K, T/2)");
  check_dim(offs, 1, fn, "offs", "(E)");
  const AmaxScope sa = parse_scope(std::string(a_scope), fn, "a_scope");
  const AmaxScope sb = parse_scope(std::string(b_scope), fn, "b_scope");
  const GemmTuning tuning = parse_tuning(std::string(plan), max_swizzle, std::string(raster), fn);
  const auto opts = a1_codes.options().dtype(out_dtype);
  at::Tensor out1 =  // (E, N, K)
      at::empty_symint({offs.sym_size(0), a1_codes.sym_size(0), b_codes.sym_size(0)}, opts);
  at::Tensor out2 =
      at::empty_symint({offs.sym_size(0), a2_codes.sym_size(0), b_codes.sym_size(0)}, opts);
  if constexpr (Env::kRun) {
    Env env(a1_codes);
    const QuantizedOperand a1 = operand(a1_codes, a1_scales, a1_amax, sa, a_bound, "a1");
    const QuantizedOperand a2 = operand(a2_codes, a2_scales, a2_amax, sa, a_bound, "a2");
    const QuantizedOperand b = operand(b_codes, b_scales, b_amax, sb, b_bound, "b");
    const TensorView offv = to_view(offs, "offs");
    TensorView o1 = to_view(out1, "out1"), o2 = to_view(out2, "out2");
    const int64_t ws = grouped_gemm_k_workspace_bytes(a1_codes.size(0), b_codes.size(0),
                                                      a1_codes.size(1) * 2, offs.size(0));
    Context ctx = env.ctx(ws);
    ctx.gemm = tuning;
    call_f46([&] { f46::grouped_gemm_k_pair(a1, a2, b, offv, o1, o2, ctx); });
  }
  return {out1, out2};
}

}  // namespace f46::torch_ext
