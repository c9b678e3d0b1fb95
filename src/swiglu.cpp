// Public SwiGLU (include/f46/swiglu.h, docs/numerics.md N13): validation, then dispatch to the
// backend of the tensors' device.
#include "f46/swiglu.h"

#include "backend.h"
#include "check.h"

namespace f46 {
namespace {

// `v` (M, F) contiguous with the dtype and shape of `ref` (bf16 | fp16 | fp32).
void check_like(const TensorView& ref, const char* ref_name, const TensorView& v,
                const char* name) {
  F46_CHECK(v.defined(), name, " is required but undefined");
  F46_CHECK(v.ndim == 2, name, " must be 2-D (M, F), got ", v.describe());
  check::contiguous(v, name);
  F46_CHECK(v.dtype == ref.dtype && v.shape[0] == ref.shape[0] && v.shape[1] == ref.shape[1], name,
            " must have the dtype and shape of ", ref_name, " (", ref.describe(), "), got ",
            v.describe());
  check::same_device(ref, ref_name, v, name);
}

// Optional per-group amax output `amax` (E) float32 with offs (E) int32; false if undefined.
bool check_amax(const TensorView& ref, const TensorView& offs, const TensorView& amax,
                const char* name) {
  if (!amax.defined()) return false;
  check::dtype(offs, "offs", DType::kInt32);
  F46_CHECK(offs.ndim == 1 && offs.size(0) >= 1, "offs must be 1-D (E) with E >= 1, got ",
            offs.describe());
  check::contiguous(offs, "offs");
  check::same_device(ref, "a", offs, "offs");
  check::dtype(amax, name, DType::kFloat32);
  check::shape(amax, name, {offs.size(0)});
  check::contiguous(amax, name);
  check::same_device(ref, "a", amax, name);
  check::no_alias(amax, name, ref, "a");
  if (ref.device == Device::kCPU) check::offsets_host(offs, "offs", ref.size(0));
  return true;
}

void check_input(const TensorView& a) {
  F46_CHECK(a.defined(), "a is required but undefined");
  check::dtype_in(a, "a", {DType::kBFloat16, DType::kFloat16, DType::kFloat32});
  F46_CHECK(a.ndim == 2, "a must be 2-D (M, F), got ", a.describe());
  check::contiguous(a, "a");
}

}  // namespace

void swiglu(const TensorView& a, const TensorView& b, TensorView& out, const TensorView& offs,
            TensorView& amax, const Context& ctx) {
  check_input(a);
  check_like(a, "a", b, "b");
  check_like(a, "a", out, "out");
  check::no_alias(out, "out", a, "a");
  check::no_alias(out, "out", b, "b");
  if (check_amax(a, offs, amax, "amax")) check::no_alias(amax, "amax", out, "out");
  if (a.device == Device::kCPU)
    cpu::swiglu(a, b, out, offs, amax, ctx);
  else
    cuda::swiglu(a, b, out, offs, amax, ctx);
}

void swiglu_backward(const TensorView& dout, const TensorView& a, const TensorView& b,
                     TensorView& da, TensorView& db, const TensorView& offs, TensorView& amax_da,
                     TensorView& amax_db, const Context& ctx) {
  check_input(a);
  check_like(a, "a", b, "b");
  check_like(a, "a", dout, "dout");
  check_like(a, "a", da, "da");
  check_like(a, "a", db, "db");
  for (const auto& [v, n] : {std::pair<const TensorView*, const char*>{&da, "da"}, {&db, "db"}}) {
    check::no_alias(*v, n, a, "a");
    check::no_alias(*v, n, b, "b");
    check::no_alias(*v, n, dout, "dout");
  }
  check::no_alias(da, "da", db, "db");
  if (check_amax(a, offs, amax_da, "amax_da")) {
    check::no_alias(amax_da, "amax_da", da, "da");
    check::no_alias(amax_da, "amax_da", db, "db");
  }
  if (check_amax(a, offs, amax_db, "amax_db")) {
    check::no_alias(amax_db, "amax_db", da, "da");
    check::no_alias(amax_db, "amax_db", db, "db");
    if (amax_da.defined()) check::no_alias(amax_da, "amax_da", amax_db, "amax_db");
  }
  if (a.device == Device::kCPU)
    cpu::swiglu_backward(dout, a, b, da, db, offs, amax_da, amax_db, ctx);
  else
    cuda::swiglu_backward(dout, a, b, da, db, offs, amax_da, amax_db, ctx);
}

}  // namespace f46
