// Kernels of the f46 torch ops, written once over an environment `Env` that is CpuEnv,
// MetaEnv (shapes only) or CudaEnv (device guard + current stream, ops_cuda.cpp):
//   Env env(ref);            // ref: the op's first tensor argument
//   Env::kRun                // false: allocate outputs, call nothing (Meta)
//   env.ctx(bytes)           // the f46::Context of the call; on CUDA with `bytes` of device
//                            // workspace from torch's caching allocator (f46/gemm.h sizes)
// Shapes are computed with SymInt so the Meta kernels serve torch.compile's fake tensors.
// Everything else (argument checks, numbers) is the f46 core's job.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <tuple>

#include "convert.h"

namespace f46::torch_ext {

struct CpuEnv {
  static constexpr bool kRun = true;
  explicit CpuEnv(const at::Tensor&) {}
  Context ctx(int64_t /*workspace_bytes*/ = 0) { return {}; }
};

struct MetaEnv {
  static constexpr bool kRun = false;
  explicit MetaEnv(const at::Tensor&) {}
  Context ctx(int64_t /*workspace_bytes*/ = 0) { return {}; }
};

inline at::Tensor empty_bytes(const at::Tensor& ref) {
  return at::empty({0}, ref.options().dtype(at::kByte));
}

inline void check_dim(const at::Tensor& t, int64_t dim, const char* op, const char* name,
                      const char* shape) {
  TORCH_CHECK(t.dim() == dim, "f46::", op, ": `", name, "` must be ", dim, "-D ", shape, ", got ",
              t.dim(), "-D");
}

// The quantizer's output views: the rowwise pair and/or the columnwise pair.
inline QuantizedOutputs output_views(bool rowwise, bool columnwise, const at::Tensor& codes,
                                     const at::Tensor& scales, const at::Tensor& codes_t,
                                     const at::Tensor& scales_t) {
  QuantizedOutputs out;
  if (rowwise) {
    out.codes = to_view(codes, "codes");
    out.scales = to_view(scales, "scales");
  }
  if (columnwise) {
    out.codes_t = to_view(codes_t, "codes_t");
    out.scales_t = to_view(scales_t, "scales_t");
  }
  return out;
}

template <class Env>
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> quantize_op(
    const at::Tensor& x, const at::Tensor& amax, const std::optional<at::Tensor>& offsets,
    c10::string_view scope, c10::string_view rule, double scale_bound, int64_t block, bool gradient,
    bool stochastic, int64_t seed, int64_t offset, bool rht_rowwise, bool rht_columnwise,
    bool rowwise, bool columnwise, const std::optional<at::Tensor>& amax_columnwise,
    const std::optional<at::Tensor>& source_offsets) {
  check_dim(x, 2, "quantize", "x", "(R, C)");
  GlobalAmax ga;
  ga.scope = parse_scope(std::string(scope), "quantize", "scope");
  QuantizeConfig cfg;
  cfg.rule = parse_rule(std::string(rule), "quantize");
  cfg.scale_bound = static_cast<float>(scale_bound);
  cfg.block = parse_block(block, "quantize");
  cfg.gradient = gradient;
  cfg.rounding = stochastic ? Rounding::kStochastic : Rounding::kNearestEven;
  cfg.seed = static_cast<uint64_t>(seed);
  cfg.offset = static_cast<uint64_t>(offset);
  cfg.rht_rowwise = rht_rowwise;
  cfg.rht_columnwise = rht_columnwise;
  cfg.rowwise = rowwise;
  cfg.columnwise = columnwise;

  // Virtual padding (N12): R = padded_rows(M, E, 16), as f46::padded_rows.
  c10::SymInt r = x.sym_size(0);
  if (source_offsets.has_value()) {
    check_dim(*source_offsets, 1, "quantize", "source_offsets", "(E)");
    r = (r + source_offsets->sym_size(0) * 15 + 15) / 16 * 16;
  }
  const c10::SymInt c = x.sym_size(1);
  const auto u8 = x.options().dtype(at::kByte);
  at::Tensor codes = rowwise ? at::empty_symint({r, c / 2}, u8) : empty_bytes(x);    // (R, C/2)
  at::Tensor scales = rowwise ? at::empty_symint({r, c / 16}, u8) : empty_bytes(x);  // (R, C/16)
  at::Tensor codes_t = columnwise ? at::empty_symint({c, r / 2}, u8) : empty_bytes(x);
  at::Tensor scales_t = columnwise ? at::empty_symint({c, r / 16}, u8) : empty_bytes(x);
  if constexpr (Env::kRun) {
    Env env(x);
    const TensorView xv = to_view(x, "x");
    ga.amax = to_view(amax, "amax");
    ga.amax_columnwise = to_view(amax_columnwise, "amax_columnwise");
    ga.offsets = to_view(offsets, "offsets");
    ga.source_offsets = to_view(source_offsets, "source_offsets");
    QuantizedOutputs out = output_views(rowwise, columnwise, codes, scales, codes_t, scales_t);
    call_f46([&] { f46::quantize(xv, ga, cfg, out, env.ctx()); });
  }
  return {codes, scales, codes_t, scales_t};
}

// Grouped weights w (E, N, K), each expert with its amax[g] as a per-tensor amax (N2: bitwise
// the group scope; f46::quantize_experts), written into the (E, ...) outputs: codes
// (E, N, K/2), scales (E, N, K/16) and, when columnwise, codes_t (E, K, N/2), scales_t
// (E, K, N/16). One op instead of E quantize calls and a stack copy of their outputs.
// amax undefined: amax_quantize_experts, the amaxes (E) computed too (f46::amax_quantize_experts).
template <class Env>
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> experts_op(
    const at::Tensor& w, at::Tensor amax, c10::string_view rule, double scale_bound, int64_t block,
    bool columnwise, const char* op) {
  check_dim(w, 3, op, "w", "(E, N, K)");
  const bool compute_amax = !amax.defined();
  if (compute_amax) {
    amax = at::empty_symint({w.sym_size(0)}, w.options().dtype(at::kFloat));
  } else {
    check_dim(amax, 1, op, "amax", "(E)");
    TORCH_CHECK(amax.sym_size(0) == w.sym_size(0), "f46::", op,
                ": `amax` must have E = ", w.sym_size(0), " elements (one per expert), got ",
                amax.sym_size(0));
  }
  QuantizeConfig cfg;
  cfg.rule = parse_rule(std::string(rule), op);
  cfg.scale_bound = static_cast<float>(scale_bound);
  cfg.block = parse_block(block, op);
  cfg.columnwise = columnwise;

  const c10::SymInt e = w.sym_size(0), n = w.sym_size(1), k = w.sym_size(2);
  const auto u8 = w.options().dtype(at::kByte);
  at::Tensor codes = at::empty_symint({e, n, k / 2}, u8);
  at::Tensor scales = at::empty_symint({e, n, k / 16}, u8);
  at::Tensor codes_t = columnwise ? at::empty_symint({e, k, n / 2}, u8) : empty_bytes(w);
  at::Tensor scales_t = columnwise ? at::empty_symint({e, k, n / 16}, u8) : empty_bytes(w);
  if constexpr (Env::kRun) {
    Env env(w);
    const TensorView wv = to_view(w, "w");
    TensorView av = to_view(amax, "amax");
    QuantizedOutputs out = output_views(true, columnwise, codes, scales, codes_t, scales_t);
    if (compute_amax)
      call_f46([&] { f46::amax_quantize_experts(wv, av, cfg, out, env.ctx()); });
    else
      call_f46([&] { f46::quantize_experts(wv, av, cfg, out, env.ctx()); });
  }
  return {amax, codes, scales, codes_t, scales_t};
}

template <class Env>
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> quantize_experts_op(
    const at::Tensor& w, const at::Tensor& amax, c10::string_view rule, double scale_bound,
    int64_t block, bool columnwise) {
  auto [a, codes, scales, codes_t, scales_t] =
      experts_op<Env>(w, amax, rule, scale_bound, block, columnwise, "quantize_experts");
  return {codes, scales, codes_t, scales_t};
}

// quantize_experts with the experts' amaxes computed too: (amax (E), codes, scales, codes_t,
// scales_t).
template <class Env>
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> amax_quantize_experts_op(
    const at::Tensor& w, c10::string_view rule, double scale_bound, int64_t block,
    bool columnwise) {
  return experts_op<Env>(w, at::Tensor(), rule, scale_bound, block, columnwise,
                         "amax_quantize_experts");
}

template <class Env>
at::Tensor dequantize_op(const at::Tensor& codes, const at::Tensor& scales, const at::Tensor& amax,
                         const std::optional<at::Tensor>& offsets, c10::string_view scope,
                         double scale_bound, at::ScalarType dtype) {
  check_dim(codes, 2, "dequantize", "codes", "(R, C/2)");
  GlobalAmax ga;
  ga.scope = parse_scope(std::string(scope), "dequantize", "scope");
  // (R, C) in `dtype`
  at::Tensor out =
      at::empty_symint({codes.sym_size(0), codes.sym_size(1) * 2}, codes.options().dtype(dtype));
  if constexpr (Env::kRun) {
    Env env(codes);
    ga.amax = to_view(amax, "amax");
    ga.offsets = to_view(offsets, "offsets");
    const TensorView cv = to_view(codes, "codes");
    const TensorView sv = to_view(scales, "scales");
    TensorView ov = to_view(out, "out");
    call_f46([&] { f46::dequantize(cv, sv, ga, static_cast<float>(scale_bound), ov, env.ctx()); });
  }
  return out;
}

template <class Env>
at::Tensor amax_op(const at::Tensor& x, c10::string_view scope,
                   const std::optional<at::Tensor>& offsets, bool rht_columns) {
  check_dim(x, 2, "amax", "x", "(R, C)");
  AmaxConfig cfg;
  cfg.scope = parse_scope(std::string(scope), "amax", "scope");
  cfg.rht_columns = rht_columns;
  c10::SymInt n = 1;
  if (cfg.scope == AmaxScope::kRow) n = x.sym_size(0);
  if (cfg.scope == AmaxScope::kGroup) {
    TORCH_CHECK(offsets.has_value(), "f46::amax: scope 'group' needs `offsets` (E) int32");
    check_dim(*offsets, 1, "amax", "offsets", "(E)");
    n = offsets->sym_size(0);
  }
  at::Tensor out = at::empty_symint({n}, x.options().dtype(at::kFloat));  // (1) | (R) | (E)
  if constexpr (Env::kRun) {
    Env env(x);
    cfg.offsets = to_view(offsets, "offsets");
    const TensorView xv = to_view(x, "x");
    TensorView ov = to_view(out, "out");
    call_f46([&] { f46::amax(xv, cfg, ov, env.ctx()); });
  }
  return out;
}

inline QuantizedOperand operand(const at::Tensor& codes, const at::Tensor& scales,
                                const at::Tensor& amax, AmaxScope scope, double bound,
                                const char* prefix) {
  const std::string p(prefix);
  QuantizedOperand q;
  q.codes = to_view(codes, (p + "_codes").c_str());
  q.scales = to_view(scales, (p + "_scales").c_str());
  q.amax = to_view(amax, (p + "_amax").c_str());
  q.scope = scope;
  q.scale_bound = static_cast<float>(bound);
  return q;
}

template <class Env>
at::Tensor gemm_op(const at::Tensor& a_codes, const at::Tensor& a_scales, const at::Tensor& a_amax,
                   c10::string_view a_scope, double a_bound, const at::Tensor& b_codes,
                   const at::Tensor& b_scales, const at::Tensor& b_amax, double b_bound,
                   const std::optional<at::Tensor>& bias, at::ScalarType out_dtype,
                   c10::string_view plan, int64_t max_swizzle, c10::string_view raster) {
  check_dim(a_codes, 2, "gemm", "a_codes", "(M, K/2)");
  check_dim(b_codes, 2, "gemm", "b_codes", "(N, K/2)");
  const AmaxScope sa = parse_scope(std::string(a_scope), "gemm", "a_scope");
  const GemmTuning tuning =
      parse_tuning(std::string(plan), max_swizzle, std::string(raster), "gemm");
  // (M, N)
  at::Tensor out = at::empty_symint({a_codes.sym_size(0), b_codes.sym_size(0)},
                                    a_codes.options().dtype(out_dtype));
  if constexpr (Env::kRun) {
    Env env(a_codes);
    const QuantizedOperand a = operand(a_codes, a_scales, a_amax, sa, a_bound, "a");
    const QuantizedOperand b = operand(b_codes, b_scales, b_amax, AmaxScope::kTensor, b_bound, "b");
    const TensorView bv = to_view(bias, "bias");
    TensorView ov = to_view(out, "out");
    const int64_t ws = gemm_workspace_bytes(a_codes.size(0), b_codes.size(0), a_codes.size(1) * 2);
    Context ctx = env.ctx(ws);
    ctx.gemm = tuning;
    call_f46([&] { f46::gemm(a, b, bv, ov, ctx); });
  }
  return out;
}

template <class Env>
at::Tensor grouped_gemm_m_op(const at::Tensor& a_codes, const at::Tensor& a_scales,
                             const at::Tensor& a_amax, c10::string_view a_scope, double a_bound,
                             const at::Tensor& b_codes, const at::Tensor& b_scales,
                             const at::Tensor& b_amax, c10::string_view b_scope, double b_bound,
                             const at::Tensor& offs, const std::optional<at::Tensor>& bias,
                             at::ScalarType out_dtype, c10::string_view plan, int64_t max_swizzle,
                             c10::string_view raster) {
  check_dim(a_codes, 2, "grouped_gemm_m", "a_codes", "(M, K/2)");
  check_dim(b_codes, 3, "grouped_gemm_m", "b_codes", "(E, N, K/2)");
  const AmaxScope sa = parse_scope(std::string(a_scope), "grouped_gemm_m", "a_scope");
  const AmaxScope sb = parse_scope(std::string(b_scope), "grouped_gemm_m", "b_scope");
  const GemmTuning tuning =
      parse_tuning(std::string(plan), max_swizzle, std::string(raster), "grouped_gemm_m");
  // (M, N)
  at::Tensor out = at::empty_symint({a_codes.sym_size(0), b_codes.sym_size(1)},
                                    a_codes.options().dtype(out_dtype));
  if constexpr (Env::kRun) {
    Env env(a_codes);
    const QuantizedOperand a = operand(a_codes, a_scales, a_amax, sa, a_bound, "a");
    const QuantizedOperand b = operand(b_codes, b_scales, b_amax, sb, b_bound, "b");
    const TensorView offv = to_view(offs, "offs");
    const TensorView bv = to_view(bias, "bias");
    TensorView ov = to_view(out, "out");
    const int64_t ws = grouped_gemm_m_workspace_bytes(a_codes.size(0), b_codes.size(1),
                                                      a_codes.size(1) * 2, b_codes.size(0));
    Context ctx = env.ctx(ws);
    ctx.gemm = tuning;
    call_f46([&] { f46::grouped_gemm_m(a, b, offv, bv, ov, ctx); });
  }
  return out;
}

template <class Env>
at::Tensor grouped_gemm_k_op(const at::Tensor& a_codes, const at::Tensor& a_scales,
                             const at::Tensor& a_amax, c10::string_view a_scope, double a_bound,
                             const at::Tensor& b_codes, const at::Tensor& b_scales,
                             const at::Tensor& b_amax, c10::string_view b_scope, double b_bound,
                             const at::Tensor& offs, at::ScalarType out_dtype,
                             c10::string_view plan, int64_t max_swizzle, c10::string_view raster) {
  check_dim(a_codes, 2, "grouped_gemm_k", "a_codes", "(N, T/2)");
  check_dim(b_codes, 2, "grouped_gemm_k", "b_codes", "(K, T/2)");
  check_dim(offs, 1, "grouped_gemm_k", "offs", "(E)");
  const AmaxScope sa = parse_scope(std::string(a_scope), "grouped_gemm_k", "a_scope");
  const AmaxScope sb = parse_scope(std::string(b_scope), "grouped_gemm_k", "b_scope");
  const GemmTuning tuning =
      parse_tuning(std::string(plan), max_swizzle, std::string(raster), "grouped_gemm_k");
  // (E, N, K)
  at::Tensor out = at::empty_symint({offs.sym_size(0), a_codes.sym_size(0), b_codes.sym_size(0)},
                                    a_codes.options().dtype(out_dtype));
  if constexpr (Env::kRun) {
    Env env(a_codes);
    const QuantizedOperand a = operand(a_codes, a_scales, a_amax, sa, a_bound, "a");
    const QuantizedOperand b = operand(b_codes, b_scales, b_amax, sb, b_bound, "b");
    const TensorView offv = to_view(offs, "offs");
    TensorView ov = to_view(out, "out");
    const int64_t ws = grouped_gemm_k_workspace_bytes(a_codes.size(0), b_codes.size(0),
                                                      a_codes.size(1) * 2, offs.size(0));
    Context ctx = env.ctx(ws);
    ctx.gemm = tuning;
    call_f46([&] { f46::grouped_gemm_k(a, b, offv, ov, ctx); });
  }
  return out;
}

template <class Env>
std::tuple<at::Tensor, at::Tensor> pad_token_groups_op(const at::Tensor& x, const at::Tensor& offs,
                                                       int64_t alignment) {
  check_dim(x, 2, "pad_token_groups", "x", "(M, C)");
  check_dim(offs, 1, "pad_token_groups", "offs", "(E)");
  TORCH_CHECK(alignment >= 1, "f46::pad_token_groups: `alignment` must be >= 1, got ", alignment);
  const c10::SymInt e = offs.sym_size(0);
  // (E) int32, written by the op
  at::Tensor padded_offs = at::empty_symint({e}, offs.options().dtype(at::kInt));
  if constexpr (Env::kRun) {
    Env env(x);
    int64_t rows = 0;
    call_f46([&] { rows = f46::padded_rows(x.size(0), offs.size(0), alignment); });  // N12
    at::Tensor out = at::empty({rows, x.size(1)}, x.options());                      // (P, C)
    const TensorView xv = to_view(x, "x");
    const TensorView offv = to_view(offs, "offs");
    TensorView ov = to_view(out, "out");
    TensorView pv = to_view(padded_offs, "padded_offs");
    call_f46([&] { f46::pad_token_groups(xv, offv, alignment, ov, pv, env.ctx()); });
    return {out, padded_offs};
  } else {
    // N12: round_up(M + E * (alignment - 1), alignment), as f46::padded_rows.
    const c10::SymInt p =
        (x.sym_size(0) + e * (alignment - 1) + (alignment - 1)) / alignment * alignment;
    return {at::empty_symint({p, x.sym_size(1)}, x.options()), padded_offs};
  }
}

template <class Env>
at::Tensor unpad_token_groups_op(const at::Tensor& y, const at::Tensor& offs,
                                 const at::Tensor& padded_offs, int64_t num_rows) {
  check_dim(y, 2, "unpad_token_groups", "y", "(P, C)");
  TORCH_CHECK(num_rows >= 0, "f46::unpad_token_groups: `num_rows` must be >= 0, got ", num_rows);
  at::Tensor out = at::empty_symint({c10::SymInt(num_rows), y.sym_size(1)}, y.options());
  if constexpr (Env::kRun) {
    Env env(y);
    const TensorView yv = to_view(y, "y");
    const TensorView offv = to_view(offs, "offs");
    const TensorView pv = to_view(padded_offs, "padded_offs");
    TensorView ov = to_view(out, "out");
    call_f46([&] { f46::unpad_token_groups(yv, offv, pv, ov, env.ctx()); });
  }
  return out;
}

template <class Env>
void zero_rows_past_groups_op(const at::Tensor& x, const at::Tensor& offs) {
  check_dim(x, 2, "zero_rows_past_groups_", "x", "(M, C)");
  check_dim(offs, 1, "zero_rows_past_groups_", "offs", "(E)");
  if constexpr (Env::kRun) {
    Env env(x);
    TensorView xv = to_view(x, "x");
    const TensorView offv = to_view(offs, "offs");
    call_f46([&] { f46::zero_rows_past_groups(xv, offv, env.ctx()); });
  }
}

// SwiGLU (N13): (out, amax) with amax (E) of out's groups when offsets are given, else (0,).
template <class Env>
std::tuple<at::Tensor, at::Tensor> swiglu_op(const at::Tensor& a, const at::Tensor& b,
                                             const std::optional<at::Tensor>& offsets) {
  check_dim(a, 2, "swiglu", "a", "(M, F)");
  at::Tensor out = at::empty_like(a, at::MemoryFormat::Contiguous);
  c10::SymInt e = 0;
  if (offsets.has_value()) {
    check_dim(*offsets, 1, "swiglu", "offsets", "(E)");
    e = offsets->sym_size(0);
  }
  at::Tensor amax = at::empty_symint({e}, a.options().dtype(at::kFloat));
  if constexpr (Env::kRun) {
    Env env(a);
    const TensorView av = to_view(a, "a"), bv = to_view(b, "b");
    const TensorView offv = to_view(offsets, "offsets");
    TensorView ov = to_view(out, "out");
    TensorView mv = offsets.has_value() ? to_view(amax, "amax") : TensorView{};
    call_f46([&] { f46::swiglu(av, bv, ov, offv, mv, env.ctx()); });
  }
  return {out, amax};
}

// SwiGLU backward (N13): (da, db, amax_da, amax_db); an amax not asked for is (0,).
template <class Env>
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> swiglu_backward_op(
    const at::Tensor& dout, const at::Tensor& a, const at::Tensor& b,
    const std::optional<at::Tensor>& offsets, bool amax_da, bool amax_db) {
  check_dim(a, 2, "swiglu_backward", "a", "(M, F)");
  TORCH_CHECK(offsets.has_value() || !(amax_da || amax_db),
              "f46::swiglu_backward: `amax_da` / `amax_db` need `offsets` (E) int32");
  at::Tensor da = at::empty_like(a, at::MemoryFormat::Contiguous);
  at::Tensor db = at::empty_like(a, at::MemoryFormat::Contiguous);
  c10::SymInt e = 0;
  if (offsets.has_value()) {
    check_dim(*offsets, 1, "swiglu_backward", "offsets", "(E)");
    e = offsets->sym_size(0);
  }
  const auto fopt = a.options().dtype(at::kFloat);
  at::Tensor ma = at::empty_symint({amax_da ? e : c10::SymInt(0)}, fopt);
  at::Tensor mb = at::empty_symint({amax_db ? e : c10::SymInt(0)}, fopt);
  if constexpr (Env::kRun) {
    Env env(a);
    const TensorView dv = to_view(dout, "dout"), av = to_view(a, "a"), bv = to_view(b, "b");
    const TensorView offv = to_view(offsets, "offsets");
    TensorView dav = to_view(da, "da"), dbv = to_view(db, "db");
    TensorView mav = amax_da ? to_view(ma, "amax_da") : TensorView{};
    TensorView mbv = amax_db ? to_view(mb, "amax_db") : TensorView{};
    call_f46([&] { f46::swiglu_backward(dv, av, bv, dav, dbv, offv, mav, mbv, env.ctx()); });
  }
  return {da, db, ma, mb};
}

}  // namespace f46::torch_ext

#include "ops_pair.h"  // the pair GEMMs (they use the helpers above)

namespace f46::torch_ext {

// m.impl(...) of every op for one dispatch key.
#define F46_TORCH_IMPL_ALL(m, Env)                                                      \
  do {                                                                                  \
    m.impl("quantize", &::f46::torch_ext::quantize_op<Env>);                            \
    m.impl("quantize_experts", &::f46::torch_ext::quantize_experts_op<Env>);            \
    m.impl("amax_quantize_experts", &::f46::torch_ext::amax_quantize_experts_op<Env>);  \
    m.impl("dequantize", &::f46::torch_ext::dequantize_op<Env>);                        \
    m.impl("amax", &::f46::torch_ext::amax_op<Env>);                                    \
    m.impl("gemm", &::f46::torch_ext::gemm_op<Env>);                                    \
    m.impl("grouped_gemm_m", &::f46::torch_ext::grouped_gemm_m_op<Env>);                \
    m.impl("grouped_gemm_k", &::f46::torch_ext::grouped_gemm_k_op<Env>);                \
    m.impl("grouped_gemm_m_pair", &::f46::torch_ext::grouped_gemm_m_pair_op<Env>);      \
    m.impl("grouped_gemm_k_pair", &::f46::torch_ext::grouped_gemm_k_pair_op<Env>);      \
    m.impl("pad_token_groups", &::f46::torch_ext::pad_token_groups_op<Env>);            \
    m.impl("unpad_token_groups", &::f46::torch_ext::unpad_token_groups_op<Env>);        \
    m.impl("zero_rows_past_groups_", &::f46::torch_ext::zero_rows_past_groups_op<Env>); \
    m.impl("swiglu", &::f46::torch_ext::swiglu_op<Env>);                                \
    m.impl("swiglu_backward", &::f46::torch_ext::swiglu_backward_op<Env>);              \
  } while (0)

}  // namespace f46::torch_ext
