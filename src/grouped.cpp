// Public token-group padding (include/f46/grouped.h, docs/numerics.md N12): validation, then
// dispatch to the backend of the tensors' device.
#include "f46/grouped.h"

#include <limits>

#include "backend.h"
#include "check.h"

namespace f46 {
namespace {

void check_group_offsets(const TensorView& offs, const char* name) {
  check::dtype(offs, name, DType::kInt32);
  F46_CHECK(offs.ndim == 1 && offs.size(0) >= 1, name, " must be 1-D (E) with E >= 1, got ",
            offs.describe());
  check::contiguous(offs, name);
}

void check_rows(const TensorView& v, const char* name) {
  F46_CHECK(v.defined(), name, " is required but undefined");
  F46_CHECK(v.ndim == 2, name, " must be 2-D (rows, C), got ", v.describe());
  check::contiguous(v, name);
}

}  // namespace

int64_t padded_rows(int64_t m, int64_t num_groups, int64_t alignment) {
  F46_CHECK(m >= 0, "padded_rows: m must be >= 0, got ", m);
  F46_CHECK(num_groups >= 1, "padded_rows: num_groups must be >= 1, got ", num_groups);
  F46_CHECK(alignment >= 1, "padded_rows: alignment must be >= 1, got ", alignment);
  const int64_t rows = m + num_groups * (alignment - 1);  // N12
  return (rows + alignment - 1) / alignment * alignment;
}

void pad_token_groups(const TensorView& x, const TensorView& offs, int64_t alignment,
                      TensorView& out, TensorView& padded_offs, const Context& ctx) {
  check_rows(x, "x");
  check_group_offsets(offs, "offs");
  F46_CHECK(alignment >= 1, "alignment must be >= 1, got ", alignment);
  const int64_t m = x.size(0), c = x.size(1), e = offs.size(0);
  const int64_t p = padded_rows(m, e, alignment);
  F46_CHECK(p <= std::numeric_limits<int32_t>::max(), "padded_rows(", m, ", ", e, ", ", alignment,
            ") = ", p, " does not fit the int32 padded_offs");
  check_rows(out, "out");
  F46_CHECK(out.dtype == x.dtype, "out must have the dtype of x (", dtype_name(x.dtype), "), got ",
            out.describe());
  F46_CHECK(out.size(1) == c && out.size(0) >= p, "out must have shape [>= ", p, ", ", c,
            "] (padded_rows(M=", m, ", E=", e, ", alignment=", alignment, ")), got ",
            out.describe());
  check::dtype(padded_offs, "padded_offs", DType::kInt32);
  check::shape(padded_offs, "padded_offs", {e});
  check::contiguous(padded_offs, "padded_offs");
  check::same_device(x, "x", offs, "offs");
  check::same_device(x, "x", out, "out");
  check::same_device(x, "x", padded_offs, "padded_offs");
  check::no_alias(out, "out", x, "x");
  check::no_alias(out, "out", offs, "offs");
  check::no_alias(out, "out", padded_offs, "padded_offs");
  check::no_alias(padded_offs, "padded_offs", x, "x");
  check::no_alias(padded_offs, "padded_offs", offs, "offs");
  if (x.device == Device::kCPU) {
    check::offsets_host(offs, "offs", m);
    cpu::pad_token_groups(x, offs, alignment, out, padded_offs, ctx);
  } else {
    cuda::pad_token_groups(x, offs, alignment, out, padded_offs, ctx);
  }
}

void unpad_token_groups(const TensorView& y, const TensorView& offs, const TensorView& padded_offs,
                        TensorView& out, const Context& ctx) {
  check_rows(y, "y");
  check_group_offsets(offs, "offs");
  check_group_offsets(padded_offs, "padded_offs");
  const int64_t e = offs.size(0);
  F46_CHECK(padded_offs.size(0) == e, "padded_offs has ", padded_offs.size(0),
            " groups but offs has ", e);
  check_rows(out, "out");
  F46_CHECK(out.dtype == y.dtype, "out must have the dtype of y (", dtype_name(y.dtype), "), got ",
            out.describe());
  F46_CHECK(out.size(1) == y.size(1), "out must have ", y.size(1), " columns like y, got ",
            out.describe());
  check::same_device(y, "y", offs, "offs");
  check::same_device(y, "y", padded_offs, "padded_offs");
  check::same_device(y, "y", out, "out");
  check::no_alias(out, "out", y, "y");
  check::no_alias(out, "out", offs, "offs");
  check::no_alias(out, "out", padded_offs, "padded_offs");
  if (y.device == Device::kCPU) {
    check::offsets_host(offs, "offs", out.size(0));
    check::offsets_host(padded_offs, "padded_offs", y.size(0));
    const int32_t* o = offs.ptr<int32_t>();
    const int32_t* po = padded_offs.ptr<int32_t>();
    for (int64_t g = 0; g < e; ++g) {
      const int64_t size = o[g] - (g ? o[g - 1] : 0), room = po[g] - (g ? po[g - 1] : 0);
      F46_CHECK(room >= size, "padded_offs: group ", g, " has ", room,
                " padded rows but offs gives it ", size, " rows");
    }
    cpu::unpad_token_groups(y, offs, padded_offs, out, ctx);
  } else {
    cuda::unpad_token_groups(y, offs, padded_offs, out, ctx);
  }
}

void zero_rows_past_groups(TensorView& x, const TensorView& offs, const Context& ctx) {
  F46_CHECK(x.defined(), "x is required but undefined");
  F46_CHECK(x.ndim == 2 && x.strides[1] == 1, "x must be 2-D (M, C) with unit column stride, got ",
            x.describe());
  F46_CHECK(x.strides[0] >= x.shape[1], "x rows must not overlap, got ", x.describe());
  check_group_offsets(offs, "offs");
  check::same_device(x, "x", offs, "offs");
  check::no_alias(x, "x", offs, "offs");
  if (x.size(0) == 0 || x.size(1) == 0) return;
  if (x.device == Device::kCPU) {
    check::offsets_host(offs, "offs", x.size(0));
    cpu::zero_rows_past_groups(x, offs, ctx);
  } else {
    cuda::zero_rows_past_groups(x, offs, ctx);
  }
}

}  // namespace f46
