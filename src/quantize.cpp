// Public quantize / dequantize / amax: validate every argument (messages name the argument and
// its value), then dispatch to the backend of the input's device. Semantics: docs/numerics.md.
#include "f46/quantize.h"

#include <cstdint>

#include "backend.h"
#include "check.h"
#include "experts.h"
#include "f46/grouped.h"

namespace f46 {

const char* rule_name(Rule r) {
  switch (r) {
    case Rule::kMAE:
      return "mae";
    case Rule::kMSE:
      return "mse";
    case Rule::kAbsMax:
      return "abs_max";
    case Rule::kAll6:
      return "all6";
    case Rule::kAll4:
      return "all4";
  }
  return "?";
}

const char* scope_name(AmaxScope s) {
  switch (s) {
    case AmaxScope::kTensor:
      return "tensor";
    case AmaxScope::kRow:
      return "row";
    case AmaxScope::kGroup:
      return "group";
  }
  return "?";
}

namespace {

void check_float_matrix(const TensorView& v, const char* name) {
  check::dtype_in(v, name, {DType::kBFloat16, DType::kFloat16, DType::kFloat32});
  check::rows_contiguous(v, name);
}

void check_bound(float bound, const char* name) {
  F46_CHECK(bound == 256.0f || bound == 448.0f, name, " must be 256 or 448, got ", bound);
}

// On the CPU every offset must be a multiple of 16 (a quantization block may not straddle two
// groups, N11). On CUDA offsets are never read by the host; kernels clamp them.
void check_offsets_aligned(const TensorView& offs, const char* name, const char* why) {
  if (offs.device != Device::kCPU) return;
  const int32_t* p = offs.ptr<const int32_t>();
  for (int64_t g = 0; g < offs.size(0); ++g) {
    const int32_t o = p[g * offs.strides[0]];
    F46_CHECK(o % 16 == 0, name, "[", g, "] = ", o, " must be a multiple of 16 (", why, ")");
  }
}

// The amax tensor(s) and offsets of a GlobalAmax over `rows` rows (N2).
void check_global_amax(const GlobalAmax& a, const char* name, int64_t rows, const TensorView& ref,
                       const char* ref_name) {
  const std::string amax_name = std::string(name) + ".amax";
  const std::string offs_name = std::string(name) + ".offsets";
  const std::string col_name = std::string(name) + ".amax_columnwise";
  int64_t want = 1;
  if (a.scope == AmaxScope::kRow) want = rows;
  if (a.scope == AmaxScope::kGroup) {
    F46_CHECK(a.offsets.defined(), offs_name, " is required for scope group but undefined");
    check::dtype(a.offsets, offs_name.c_str(), DType::kInt32);
    F46_CHECK(a.offsets.ndim == 1, offs_name, " must be 1-D (E), got ", a.offsets.describe());
    check::same_device(ref, ref_name, a.offsets, offs_name.c_str());
    if (a.offsets.device == Device::kCPU) check::offsets_host(a.offsets, offs_name.c_str(), rows);
    want = a.offsets.size(0);
  }
  check::dtype(a.amax, amax_name.c_str(), DType::kFloat32);
  check::shape(a.amax, amax_name.c_str(), {want});
  check::same_device(ref, ref_name, a.amax, amax_name.c_str());
  if (a.amax_columnwise.defined()) {
    check::dtype(a.amax_columnwise, col_name.c_str(), DType::kFloat32);
    check::shape(a.amax_columnwise, col_name.c_str(), {want});
    check::same_device(ref, ref_name, a.amax_columnwise, col_name.c_str());
  }
}

void check_output(const TensorView& v, const char* name, int64_t rows, int64_t cols,
                  const TensorView& x) {
  check::dtype(v, name, DType::kUInt8);
  check::shape(v, name, {rows, cols});
  check::contiguous(v, name);
  check::same_device(x, "x", v, name);
  check::no_alias(v, name, x, "x");
}

// Virtual token-group padding (GlobalAmax::source_offsets, N12): the restrictions, and on the
// CPU the padded ends `offsets` must equal. Returns the padded row count R.
int64_t check_source_offsets(const TensorView& x, const GlobalAmax& amax,
                             const QuantizeConfig& cfg) {
  const TensorView& src = amax.source_offsets;
  F46_CHECK(amax.scope == AmaxScope::kGroup, "amax.source_offsets needs amax.scope group, got ",
            scope_name(amax.scope));
  F46_CHECK(cfg.columnwise && !cfg.rowwise,
            "amax.source_offsets needs cfg.columnwise without cfg.rowwise");
  F46_CHECK(cfg.block == Block::k1x16, "amax.source_offsets needs cfg.block 1x16");
  F46_CHECK(!cfg.rht_rowwise && !cfg.rht_columnwise, "amax.source_offsets excludes the RHT");
  check::dtype(src, "amax.source_offsets", DType::kInt32);
  F46_CHECK(amax.offsets.defined(), "amax.offsets is required for scope group but undefined");
  check::shape(src, "amax.source_offsets", {amax.offsets.size(0)});
  check::contiguous(src, "amax.source_offsets");
  check::same_device(x, "x", src, "amax.source_offsets");
  const int64_t m = x.size(0), e = src.size(0);
  F46_CHECK(e >= 1, "amax.source_offsets must have E >= 1 entries, got ", src.describe());
  const int64_t r = padded_rows(m, e, 16);
  if (src.device == Device::kCPU) {
    check::offsets_host(src, "amax.source_offsets", m);
    check::offsets_host(amax.offsets, "amax.offsets", r);
    const int32_t* o = src.ptr<const int32_t>();
    const int32_t* po = amax.offsets.ptr<const int32_t>();
    int64_t want = 0;
    for (int64_t g = 0; g < e; ++g) {
      want += (o[g] - (g ? o[g - 1] : 0) + 15) / 16 * 16;
      const int64_t got = po[g * amax.offsets.strides[0]];
      F46_CHECK(got == want, "amax.offsets[", g, "] = ", got, " must be the padded end ", want,
                " of amax.source_offsets (pad_token_groups, alignment 16)");
    }
  }
  return r;
}

void check_quantize(const TensorView& x, const GlobalAmax& amax, const QuantizeConfig& cfg,
                    const QuantizedOutputs& out) {
  check_float_matrix(x, "x");
  const bool virtual_pad = amax.source_offsets.defined();
  const int64_t R = virtual_pad ? check_source_offsets(x, amax, cfg) : x.size(0), C = x.size(1);
  // The rowwise output and 16x16 tiles block along C; a columnwise-only call blocks along R.
  if (cfg.rowwise || cfg.block == Block::k16x16) {
    F46_CHECK(C % 16 == 0, "x columns must be a multiple of 16 (1x16 blocks), got x ",
              x.describe());
  }
  check_bound(cfg.scale_bound, "cfg.scale_bound");
  F46_CHECK(cfg.rowwise || cfg.columnwise,
            "cfg.rowwise and cfg.columnwise are both false: nothing to quantize");
  if (cfg.gradient) {
    F46_CHECK(cfg.scale_bound == 448.0f, "cfg.gradient needs cfg.scale_bound 448, got ",
              cfg.scale_bound);
    F46_CHECK(cfg.rule == Rule::kAll6, "cfg.gradient needs cfg.rule all6, got ",
              rule_name(cfg.rule));
  }
  if (cfg.rounding == Rounding::kStochastic) {
    F46_CHECK(cfg.gradient || cfg.rule == Rule::kAll6 || cfg.rule == Rule::kAll4,
              "cfg.rounding stochastic needs cfg.rule all6 or all4 (or cfg.gradient), got rule ",
              rule_name(cfg.rule));
  }
  if (cfg.block == Block::k16x16) {
    F46_CHECK(R % 16 == 0, "cfg.block 16x16 needs x rows % 16 == 0, got x ", x.describe());
  }
  if (cfg.columnwise) {
    F46_CHECK(R % 16 == 0, "cfg.columnwise needs x rows % 16 == 0, got x ", x.describe());
  }
  if (amax.scope == AmaxScope::kRow) {
    F46_CHECK(!cfg.columnwise,
              "amax.scope row cannot be combined with cfg.columnwise "
              "(per-row scales do not transpose)");
    F46_CHECK(cfg.block == Block::k1x16, "amax.scope row needs cfg.block 1x16, got 16x16");
  }
  F46_CHECK(amax.scope == AmaxScope::kTensor || amax.scope == AmaxScope::kRow ||
                amax.scope == AmaxScope::kGroup,
            "amax.scope is invalid: ", static_cast<int>(amax.scope));
  check_global_amax(amax, "amax", R, x, "x");
  if (amax.scope == AmaxScope::kGroup) {
    if (cfg.columnwise) check_offsets_aligned(amax.offsets, "amax.offsets", "cfg.columnwise");
    if (cfg.block == Block::k16x16)
      check_offsets_aligned(amax.offsets, "amax.offsets", "cfg.block 16x16");
  }
  if (cfg.rowwise) {
    check_output(out.codes, "out.codes", R, C / 2, x);
    check_output(out.scales, "out.scales", R, C / 16, x);
    check::no_alias(out.codes, "out.codes", out.scales, "out.scales");
  }
  if (cfg.columnwise) {
    check_output(out.codes_t, "out.codes_t", C, R / 2, x);
    check_output(out.scales_t, "out.scales_t", C, R / 16, x);
    check::no_alias(out.codes_t, "out.codes_t", out.scales_t, "out.scales_t");
    if (cfg.rowwise) {
      check::no_alias(out.codes, "out.codes", out.codes_t, "out.codes_t");
      check::no_alias(out.codes, "out.codes", out.scales_t, "out.scales_t");
      check::no_alias(out.scales, "out.scales", out.codes_t, "out.codes_t");
      check::no_alias(out.scales, "out.scales", out.scales_t, "out.scales_t");
    }
  }
}

void check_expert_output(const TensorView& v, const char* name, int64_t e, int64_t rows,
                         int64_t cols) {
  F46_CHECK(v.defined() && v.ndim == 3, name, " must be 3-D (E, ", rows, ", ", cols, "), got ",
            v.describe());
  check::shape(v, name, {e, rows, cols});
  check::contiguous(v, name);
}

}  // namespace

void quantize(const TensorView& x, const GlobalAmax& amax, const QuantizeConfig& cfg,
              QuantizedOutputs& out, const Context& ctx) {
  check_quantize(x, amax, cfg, out);
  if (x.device == Device::kCPU)
    cpu::quantize(x, amax, cfg, out, ctx);
  else
    cuda::quantize(x, amax, cfg, out, ctx);
}

namespace {

// quantize_experts' arguments: w (E, N, K), amax (E) float32, the outputs of cfg; each expert a
// valid quantize call of its own.
void check_experts(const TensorView& w, const TensorView& amax, const QuantizeConfig& cfg,
                   const QuantizedOutputs& out) {
  F46_CHECK(w.defined() && w.ndim == 3, "w must be 3-D (E, N, K), got ", w.describe());
  const int64_t e = w.size(0), n = w.size(1), k = w.size(2);
  check::dtype(amax, "amax", DType::kFloat32);
  check::shape(amax, "amax", {e});
  check::same_device(w, "w", amax, "amax");
  if (cfg.rowwise) {
    check_expert_output(out.codes, "out.codes", e, n, k / 2);
    check_expert_output(out.scales, "out.scales", e, n, k / 16);
  }
  if (cfg.columnwise) {
    check_expert_output(out.codes_t, "out.codes_t", e, k, n / 2);
    check_expert_output(out.scales_t, "out.scales_t", e, k, n / 16);
  }
  for (int64_t g = 0; g < e; ++g) {  // each expert as a quantize call of its own
    const ExpertViews v = expert_views(w, amax, out, cfg, g);
    check_quantize(v.x, v.amax, cfg, v.out);
  }
}

void cpu_quantize_experts(const TensorView& w, const TensorView& amax, const QuantizeConfig& cfg,
                          QuantizedOutputs& out, const Context& ctx) {
  for (int64_t g = 0; g < w.size(0); ++g) {
    ExpertViews v = expert_views(w, amax, out, cfg, g);
    cpu::quantize(v.x, v.amax, cfg, v.out, ctx);
  }
}

}  // namespace

void quantize_experts(const TensorView& w, const TensorView& amax, const QuantizeConfig& cfg,
                      QuantizedOutputs& out, const Context& ctx) {
  check_experts(w, amax, cfg, out);
  if (w.size(0) == 0) return;
  if (w.device == Device::kCPU)
    cpu_quantize_experts(w, amax, cfg, out, ctx);
  else
    cuda::quantize_experts(w, amax, cfg, out, ctx);
}

void amax_quantize_experts(const TensorView& w, TensorView& amax, const QuantizeConfig& cfg,
                           QuantizedOutputs& out, const Context& ctx) {
  check_experts(w, amax, cfg, out);
  check::contiguous(amax, "amax");
  if (w.size(0) == 0) return;
  if (w.device == Device::kCPU) {
    for (int64_t g = 0; g < w.size(0); ++g) {  // each expert's N9 amax (tensor scope)
      TensorView a = narrow0(amax, g, 1);
      cpu::amax(select0(w, g), AmaxConfig{}, a, ctx);
    }
    cpu_quantize_experts(w, amax, cfg, out, ctx);
  } else {
    cuda::amax_quantize_experts(w, amax, cfg, out, ctx);
  }
}

void dequantize(const TensorView& codes, const TensorView& scales, const GlobalAmax& amax,
                float scale_bound, TensorView& out, const Context& ctx) {
  check_float_matrix(out, "out");
  const int64_t rows = out.size(0), cols = out.size(1);
  F46_CHECK(cols % 16 == 0, "out columns must be a multiple of 16, got out ", out.describe());
  check::dtype(codes, "codes", DType::kUInt8);
  check::shape(codes, "codes", {rows, cols / 2});
  check::rows_contiguous(codes, "codes");
  check::dtype(scales, "scales", DType::kUInt8);
  check::shape(scales, "scales", {rows, cols / 16});
  check::rows_contiguous(scales, "scales");
  check_bound(scale_bound, "scale_bound");
  check::same_device(codes, "codes", scales, "scales");
  check::same_device(codes, "codes", out, "out");
  check_global_amax(amax, "amax", rows, codes, "codes");
  check::no_alias(out, "out", codes, "codes");
  check::no_alias(out, "out", scales, "scales");
  if (codes.device == Device::kCPU)
    cpu::dequantize(codes, scales, amax, scale_bound, out, ctx);
  else
    cuda::dequantize(codes, scales, amax, scale_bound, out, ctx);
}

void amax(const TensorView& x, const AmaxConfig& cfg, TensorView& out, const Context& ctx) {
  check_float_matrix(x, "x");
  const int64_t R = x.size(0);
  int64_t want = 1;
  if (cfg.scope == AmaxScope::kRow) {
    F46_CHECK(!cfg.rht_columns, "cfg.rht_columns cannot be combined with cfg.scope row");
    want = R;
  } else if (cfg.scope == AmaxScope::kGroup) {
    F46_CHECK(cfg.offsets.defined(), "cfg.offsets is required for cfg.scope group but undefined");
    check::dtype(cfg.offsets, "cfg.offsets", DType::kInt32);
    F46_CHECK(cfg.offsets.ndim == 1, "cfg.offsets must be 1-D (E), got ", cfg.offsets.describe());
    check::same_device(x, "x", cfg.offsets, "cfg.offsets");
    if (cfg.offsets.device == Device::kCPU) check::offsets_host(cfg.offsets, "cfg.offsets", R);
    if (cfg.rht_columns) check_offsets_aligned(cfg.offsets, "cfg.offsets", "cfg.rht_columns");
    want = cfg.offsets.size(0);
  } else {
    F46_CHECK(cfg.scope == AmaxScope::kTensor,
              "cfg.scope is invalid: ", static_cast<int>(cfg.scope), " (", scope_name(cfg.scope),
              ")");
  }
  if (cfg.rht_columns) {
    F46_CHECK(R % 16 == 0, "cfg.rht_columns needs x rows % 16 == 0, got x ", x.describe());
  }
  check::dtype(out, "out", DType::kFloat32);
  check::shape(out, "out", {want});
  check::same_device(x, "x", out, "out");
  check::no_alias(out, "out", x, "x");
  if (x.device == Device::kCPU)
    cpu::amax(x, cfg, out, ctx);
  else
    cuda::amax(x, cfg, out, ctx);
}

}  // namespace f46
