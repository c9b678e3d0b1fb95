// Public NVFP4 GEMMs (include/f46/gemm.h): argument validation, then dispatch to the backend
// of the tensors' device. Semantics: docs/numerics.md N10 (dense), N11 (grouped).
#include "f46/gemm.h"

#include <string>
#include <utility>

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

void check_out(const TensorView& out, std::initializer_list<int64_t> shape,
               const char* name = "out") {
  check::dtype_in(out, name, {DType::kBFloat16, DType::kFloat32});
  check::shape(out, name, shape);
  check::contiguous(out, name);
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

namespace {

// grouped_gemm_m's checks; returns M (the rows of a).
// bn, on: the names of b and out in the call (the pair's b1 / b2, out1 / out2).
int64_t check_grouped_m(const QuantizedOperand& a, const QuantizedOperand& b,
                        const TensorView& offs, const TensorView& bias, const TensorView& out,
                        const char* fn, const char* bn = "b", const char* on = "out") {
  const int64_t k = check_codes_scales(a, "a", 2);
  const int64_t kb = check_codes_scales(b, bn, 3);
  F46_CHECK(kb == k, fn, ": ", bn, ".codes has K = ", kb, " but a.codes has K = ", k,
            " (a (M, K/2) = ", a.codes.describe(), ", ", bn, " (E, N, K/2) = ", b.codes.describe(),
            ")");
  check_offsets(offs, "offs");
  const int64_t m = a.codes.size(0), e = b.codes.size(0), n = b.codes.size(1);
  F46_CHECK(offs.size(0) == e, fn, ": offs has ", offs.size(0), " groups but ", bn,
            ".codes has E = ", e, " experts");
  check_amax(a, "a", fn, {AmaxScope::kTensor, AmaxScope::kRow, AmaxScope::kGroup}, m, e);
  check_amax(b, bn, fn, {AmaxScope::kTensor, AmaxScope::kGroup}, n, e);
  if (bias.defined()) {
    check::dtype_in(bias, "bias", {DType::kFloat32, DType::kBFloat16});
    check::shape(bias, "bias", {e, n});
    check::contiguous(bias, "bias");
  }
  check_out(out, {m, n}, on);
  check_devices(a, b, {{&offs, "offs"}, {&bias, "bias"}, {&out, on}});
  check_out_alias(out, a, b, {{&offs, "offs"}, {&bias, "bias"}});
  return m;
}

// grouped_gemm_k's checks; returns T (the tokens).
// an, on: the names of a and out in the call (the pair's a1 / a2, out1 / out2).
int64_t check_grouped_k(const QuantizedOperand& a, const QuantizedOperand& b,
                        const TensorView& offs, const TensorView& out, const char* fn,
                        const char* an = "a", const char* on = "out") {
  const int64_t t = check_codes_scales(a, an, 2);
  const int64_t tb = check_codes_scales(b, "b", 2);
  F46_CHECK(tb == t, fn, ": b.codes has T = ", tb, " tokens but ", an, ".codes has T = ", t, " (",
            an, " (N, T/2) = ", a.codes.describe(), ", b (K, T/2) = ", b.codes.describe(), ")");
  check_offsets(offs, "offs");
  const int64_t n = a.codes.size(0), k = b.codes.size(0), e = offs.size(0);
  check_amax(a, an, fn, {AmaxScope::kTensor, AmaxScope::kGroup}, n, e);
  check_amax(b, "b", fn, {AmaxScope::kTensor, AmaxScope::kGroup}, k, e);
  check_out(out, {e, n, k}, on);
  check_devices(a, b, {{&offs, "offs"}, {&out, on}});
  check_out_alias(out, a, b, {{&offs, "offs"}});
  return t;
}

// The CPU's K-grouped offsets: multiples of 16 (the CUDA backend reads them on the device).
void check_offsets_k_host(const TensorView& offs, int64_t t) {
  check::offsets_host(offs, "offs", t);
  const int32_t* p = offs.ptr<int32_t>();
  for (int64_t g = 0; g < offs.size(0); ++g)
    F46_CHECK(p[g] % 16 == 0, "offs[", g, "] = ", p[g],
              " must be a multiple of 16 (quantization blocks must not straddle token groups)");
}

// The pairs: the second operand of one shape with the first, neither output overlapping the
// other output or either operand.
void check_pair(const QuantizedOperand& x1, const QuantizedOperand& x2, const char* name1,
                const char* name2, const TensorView& out1, const TensorView& out2, const char* fn) {
  bool same = x1.codes.ndim == x2.codes.ndim;
  for (int d = 0; same && d < x1.codes.ndim; ++d) same = x1.codes.size(d) == x2.codes.size(d);
  F46_CHECK(same, fn, ": ", name1, ".codes ", x1.codes.describe(), " and ", name2, ".codes ",
            x2.codes.describe(), " must have one shape");
  check::no_alias(out1, "out1", out2, "out2");
  for (const auto& [o, on] : {std::pair{&out1, "out1"}, std::pair{&out2, "out2"}})
    for (const auto& [x, xn] : {std::pair{&x1, name1}, std::pair{&x2, name2}}) {
      const std::string n(xn);
      check::no_alias(*o, on, x->codes, (n + ".codes").c_str());
      check::no_alias(*o, on, x->scales, (n + ".scales").c_str());
      check::no_alias(*o, on, x->amax, (n + ".amax").c_str());
    }
}

}  // namespace

void grouped_gemm_m(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& offs,
                    const TensorView& bias, TensorView& out, const Context& ctx) {
  const int64_t m = check_grouped_m(a, b, offs, bias, out, "grouped_gemm_m");
  check_tuning(ctx.gemm);
  if (on_cpu(out)) {
    check::offsets_host(offs, "offs", m);
    cpu::grouped_gemm_m(a, b, offs, bias, out, ctx);
  } else {
    cuda::grouped_gemm_m(a, b, offs, bias, out, ctx);
  }
}

void grouped_gemm_m_pair(const QuantizedOperand& a, const QuantizedOperand& b1,
                         const QuantizedOperand& b2, const TensorView& offs, TensorView& out1,
                         TensorView& out2, const Context& ctx) {
  const char* fn = "grouped_gemm_m_pair";
  const int64_t m = check_grouped_m(a, b1, offs, TensorView{}, out1, fn, "b1", "out1");
  check_grouped_m(a, b2, offs, TensorView{}, out2, fn, "b2", "out2");
  check_pair(b1, b2, "b1", "b2", out1, out2, fn);
  check_tuning(ctx.gemm);
  if (on_cpu(out1)) {
    check::offsets_host(offs, "offs", m);
    cpu::grouped_gemm_m(a, b1, offs, TensorView{}, out1, ctx);
    cpu::grouped_gemm_m(a, b2, offs, TensorView{}, out2, ctx);
  } else {
    cuda::grouped_gemm_m_pair(a, b1, b2, offs, out1, out2, ctx);
  }
}

void grouped_gemm_k(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& offs,
                    TensorView& out, const Context& ctx) {
  const int64_t t = check_grouped_k(a, b, offs, out, "grouped_gemm_k");
  check_tuning(ctx.gemm);
  if (on_cpu(out)) {
    check_offsets_k_host(offs, t);
    cpu::grouped_gemm_k(a, b, offs, out, ctx);
  } else {
    cuda::grouped_gemm_k(a, b, offs, out, ctx);
  }
}

void grouped_gemm_k_pair(const QuantizedOperand& a1, const QuantizedOperand& a2,
                         const QuantizedOperand& b, const TensorView& offs, TensorView& out1,
                         TensorView& out2, const Context& ctx) {
  const char* fn = "grouped_gemm_k_pair";
  const int64_t t = check_grouped_k(a1, b, offs, out1, fn, "a1", "out1");
  check_grouped_k(a2, b, offs, out2, fn, "a2", "out2");
  check_pair(a1, a2, "a1", "a2", out1, out2, fn);
  check_tuning(ctx.gemm);
  if (on_cpu(out1)) {
    check_offsets_k_host(offs, t);
    cpu::grouped_gemm_k(a1, b, offs, out1, ctx);
    cpu::grouped_gemm_k(a2, b, offs, out2, ctx);
  } else {
    cuda::grouped_gemm_k_pair(a1, a2, b, offs, out1, out2, ctx);
  }
}

}  // namespace f46
