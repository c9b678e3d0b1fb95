// Public NVFP4 GEMMs (include/f46/gemm.h): argument validation, then dispatch to the backend
// of the tensors' device. Semantics: docs/numerics.md N10 (dense), N11 (grouped).
#include "f46/gemm.h"

#include <string>

#include "backend.h"
#include "check.h"

namespace f46 {
namespace {

std::string field(const char* op, const char* f) { return std::string(op) + "." + f; }

// codes (lead..., rows, k/2) and scales (lead..., rows, k/16) uint8, contiguous, same device as
// ref; returns k (the contraction length) and checks k % 16 == 0 (N1.4).
int64_t check_codes_scales(const QuantizedOperand& op, const char* name, int expect_ndim) {
  const std::string codes = field(name, "codes"), scales = field(name, "scales");
  check::dtype(op.codes, codes.c_str(), DType::kUInt8);
  check::dtype(op.scales, scales.c_str(), DType::kUInt8);
  F46_CHECK(op.codes.ndim == expect_ndim, codes, " must be ", expect_ndim, "-D, got ",
            op.codes.describe());
  check::contiguous(op.codes, codes.c_str());
  check::contiguous(op.scales, scales.c_str());
  const int64_t k = op.codes.size(-1) * 2;
  F46_CHECK(k % 16 == 0, codes, ": the contraction length K = 2 * ", op.codes.size(-1), " = ", k,
            " must be a multiple of 16");
  if (expect_ndim == 2) {
    check::shape(op.scales, scales.c_str(), {op.codes.size(0), k / 16});
  } else {
    check::shape(op.scales, scales.c_str(), {op.codes.size(0), op.codes.size(1), k / 16});
  }
  F46_CHECK(op.scale_bound == 256.0f || op.scale_bound == 448.0f, name,
            ".scale_bound must be 256 or 448, got ", op.scale_bound);
  return k;
}

// amax float32 (1) kTensor, (rows) kRow, (groups) kGroup; `allowed` lists the legal scopes.
void check_amax(const QuantizedOperand& op, const char* name, const char* fn,
                std::initializer_list<AmaxScope> allowed, int64_t rows, int64_t groups) {
  bool ok = false;
  std::string legal;
  for (AmaxScope s : allowed) {
    ok = ok || s == op.scope;
    legal += std::string(legal.empty() ? "" : "|") + scope_name(s);
  }
  F46_CHECK(ok, name, ".scope = ", scope_name(op.scope), " is not allowed in ", fn,
            " (allowed: ", legal, ")");
  const std::string amax = field(name, "amax");
  check::dtype(op.amax, amax.c_str(), DType::kFloat32);
  check::contiguous(op.amax, amax.c_str());
  const int64_t n =
      op.scope == AmaxScope::kTensor ? 1 : (op.scope == AmaxScope::kRow ? rows : groups);
  F46_CHECK(op.amax.ndim == 1 && op.amax.size(0) == n, amax, " must have shape [", n, "] for ",
            scope_name(op.scope), " scope, got ", op.amax.describe());
}

void check_devices(const QuantizedOperand& a, const QuantizedOperand& b,
                   std::initializer_list<std::pair<const TensorView*, const char*>> others) {
  const TensorView& ref = a.codes;
  check::same_device(ref, "a.codes", a.scales, "a.scales");
  check::same_device(ref, "a.codes", a.amax, "a.amax");
  check::same_device(ref, "a.codes", b.codes, "b.codes");
  check::same_device(ref, "a.codes", b.scales, "b.scales");
  check::same_device(ref, "a.codes", b.amax, "b.amax");
  for (const auto& [v, name] : others) check::same_device(ref, "a.codes", *v, name);
}

// out must not overlap any input.
void check_out_alias(const TensorView& out, const QuantizedOperand& a, const QuantizedOperand& b,
                     std::initializer_list<std::pair<const TensorView*, const char*>> others) {
  check::no_alias(out, "out", a.codes, "a.codes");
  check::no_alias(out, "out", a.scales, "a.scales");
  check::no_alias(out, "out", a.amax, "a.amax");
  check::no_alias(out, "out", b.codes, "b.codes");
  check::no_alias(out, "out", b.scales, "b.scales");
  check::no_alias(out, "out", b.amax, "b.amax");
  for (const auto& [v, name] : others) check::no_alias(out, "out", *v, name);
}

void check_out(const TensorView& out, std::initializer_list<int64_t> shape) {
  check::dtype_in(out, "out", {DType::kBFloat16, DType::kFloat32});
  check::shape(out, "out", shape);
  check::contiguous(out, "out");
}

void check_offsets(const TensorView& offs, const char* name) {
  check::dtype(offs, name, DType::kInt32);
  F46_CHECK(offs.ndim == 1 && offs.size(0) >= 1, name, " must be 1-D (E) with E >= 1, got ",
            offs.describe());
  check::contiguous(offs, name);
}

bool on_cpu(const TensorView& v) { return v.device == Device::kCPU; }

// Context::gemm: a known plan and a swizzle the CUTLASS scheduler takes (0: the default).
void check_tuning(const GemmTuning& t) {
  const int p = static_cast<int>(t.plan);
  F46_CHECK(p >= 0 && p <= 3,
            "ctx.gemm.plan must be kAuto, kDequantBf16, kFusedFp4 or kWeight4, got ", p);
  const int s = t.max_swizzle;
  F46_CHECK(s == 0 || s == 1 || s == 2 || s == 4 || s == 8,
            "ctx.gemm.max_swizzle must be 0 (default), 1, 2, 4 or 8, got ", s);
}

}  // namespace

void gemm(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& bias,
          TensorView& out, const Context& ctx) {
  const int64_t k = check_codes_scales(a, "a", 2);
  const int64_t kb = check_codes_scales(b, "b", 2);
  F46_CHECK(kb == k, "b.codes has K = ", kb, " but a.codes has K = ", k,
            " (a (M, K/2) = ", a.codes.describe(), ", b (N, K/2) = ", b.codes.describe(), ")");
  const int64_t m = a.codes.size(0), n = b.codes.size(0);
  check_amax(a, "a", "gemm", {AmaxScope::kTensor, AmaxScope::kRow}, m, 0);
  check_amax(b, "b", "gemm", {AmaxScope::kTensor}, n, 0);
  if (bias.defined()) {
    check::dtype_in(bias, "bias", {DType::kFloat32, DType::kBFloat16});
    check::shape(bias, "bias", {n});
    check::contiguous(bias, "bias");
  }
  check_out(out, {m, n});
  check_devices(a, b, {{&bias, "bias"}, {&out, "out"}});
  check_out_alias(out, a, b, {{&bias, "bias"}});
  check_tuning(ctx.gemm);
  if (on_cpu(out))
    cpu::gemm(a, b, bias, out, ctx);
  else
    cuda::gemm(a, b, bias, out, ctx);
}

void grouped_gemm_m(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& offs,
                    const TensorView& bias, TensorView& out, const Context& ctx) {
  const int64_t k = check_codes_scales(a, "a", 2);
  const int64_t kb = check_codes_scales(b, "b", 3);
  F46_CHECK(kb == k, "b.codes has K = ", kb, " but a.codes has K = ", k,
            " (a (M, K/2) = ", a.codes.describe(), ", b (E, N, K/2) = ", b.codes.describe(), ")");
  check_offsets(offs, "offs");
  const int64_t m = a.codes.size(0), e = b.codes.size(0), n = b.codes.size(1);
  F46_CHECK(offs.size(0) == e, "offs has ", offs.size(0), " groups but b.codes has E = ", e,
            " experts");
  check_amax(a, "a", "grouped_gemm_m", {AmaxScope::kTensor, AmaxScope::kRow, AmaxScope::kGroup}, m,
             e);
  check_amax(b, "b", "grouped_gemm_m", {AmaxScope::kTensor, AmaxScope::kGroup}, n, e);
  if (bias.defined()) {
    check::dtype_in(bias, "bias", {DType::kFloat32, DType::kBFloat16});
    check::shape(bias, "bias", {e, n});
    check::contiguous(bias, "bias");
  }
  check_out(out, {m, n});
  check_devices(a, b, {{&offs, "offs"}, {&bias, "bias"}, {&out, "out"}});
  check_out_alias(out, a, b, {{&offs, "offs"}, {&bias, "bias"}});
  check_tuning(ctx.gemm);
  if (on_cpu(out)) {
    check::offsets_host(offs, "offs", m);
    cpu::grouped_gemm_m(a, b, offs, bias, out, ctx);
  } else {
    cuda::grouped_gemm_m(a, b, offs, bias, out, ctx);
  }
}

void grouped_gemm_k(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& offs,
                    TensorView& out, const Context& ctx) {
  const int64_t t = check_codes_scales(a, "a", 2);
  const int64_t tb = check_codes_scales(b, "b", 2);
  F46_CHECK(tb == t, "b.codes has T = ", tb, " tokens but a.codes has T = ", t,
            " (a (N, T/2) = ", a.codes.describe(), ", b (K, T/2) = ", b.codes.describe(), ")");
  check_offsets(offs, "offs");
  const int64_t n = a.codes.size(0), k = b.codes.size(0), e = offs.size(0);
  check_amax(a, "a", "grouped_gemm_k", {AmaxScope::kTensor, AmaxScope::kGroup}, n, e);
  check_amax(b, "b", "grouped_gemm_k", {AmaxScope::kTensor, AmaxScope::kGroup}, k, e);
  check_out(out, {e, n, k});
  check_devices(a, b, {{&offs, "offs"}, {&out, "out"}});
  check_out_alias(out, a, b, {{&offs, "offs"}});
  check_tuning(ctx.gemm);
  if (on_cpu(out)) {
    check::offsets_host(offs, "offs", t);
    const int32_t* p = offs.ptr<int32_t>();
    for (int64_t g = 0; g < e; ++g)
      F46_CHECK(p[g] % 16 == 0, "offs[", g, "] = ", p[g],
                " must be a multiple of 16 (quantization blocks must not straddle token groups)");
    cpu::grouped_gemm_k(a, b, offs, out, ctx);
  } else {
    cuda::grouped_gemm_k(a, b, offs, out, ctx);
  }
}

}  // namespace f46
