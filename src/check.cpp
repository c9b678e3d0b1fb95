#include "check.h"

#include <algorithm>
#include <vector>

namespace f46::check {

void dtype(const TensorView& v, const char* name, DType t) {
  F46_CHECK(v.defined(), name, " is required but undefined");
  F46_CHECK(v.dtype == t, name, " must be ", dtype_name(t), ", got ", v.describe());
}

void dtype_in(const TensorView& v, const char* name, std::initializer_list<DType> ts) {
  F46_CHECK(v.defined(), name, " is required but undefined");
  const bool ok = std::find(ts.begin(), ts.end(), v.dtype) != ts.end();
  std::string allowed;
  for (DType t : ts) allowed += std::string(allowed.empty() ? "" : "|") + dtype_name(t);
  F46_CHECK(ok, name, " must be ", allowed, ", got ", v.describe());
}

void shape(const TensorView& v, const char* name, std::initializer_list<int64_t> sizes) {
  std::string want = "[";
  for (int64_t s : sizes) want += (want.size() > 1 ? ", " : "") + (s < 0 ? "*" : std::to_string(s));
  want += "]";
  F46_CHECK(v.ndim == static_cast<int>(sizes.size()), name, " must have shape ", want, ", got ",
            v.describe());
  int d = 0;
  for (int64_t s : sizes) {
    F46_CHECK(s < 0 || v.shape[d] == s, name, " must have shape ", want, ", got ", v.describe());
    ++d;
  }
}

void contiguous(const TensorView& v, const char* name) {
  F46_CHECK(v.is_contiguous(), name, " must be contiguous, got ", v.describe());
}

void rows_contiguous(const TensorView& v, const char* name) {
  F46_CHECK(v.ndim == 2, name, " must be 2-D, got ", v.describe());
  F46_CHECK(v.shape[1] <= 1 || v.strides[1] == 1, name, " must have a contiguous last dim, got ",
            "stride ", v.strides[1]);
  F46_CHECK(v.shape[0] <= 1 || v.strides[0] >= v.shape[1], name,
            " rows overlap: stride ", v.strides[0], " < row length ", v.shape[1]);
}

void same_device(const TensorView& ref, const char* ref_name, const TensorView& v,
                 const char* name) {
  if (!v.defined()) return;
  F46_CHECK(v.device == ref.device && v.device_index == ref.device_index, name,
            " must be on the device of ", ref_name, ": ", ref.describe(), " vs ", v.describe());
}

namespace {
struct Range {
  uintptr_t lo, hi;
};
Range byte_range(const TensorView& v) {
  int64_t last = 0;
  for (int d = 0; d < v.ndim; ++d)
    if (v.shape[d] > 0) last += (v.shape[d] - 1) * v.strides[d];
  const auto base = reinterpret_cast<uintptr_t>(v.data);
  return {base, base + static_cast<uintptr_t>((last + 1) * dtype_size(v.dtype))};
}
}  // namespace

void no_alias(const TensorView& a, const char* a_name, const TensorView& b, const char* b_name) {
  if (!a.defined() || !b.defined() || a.numel() == 0 || b.numel() == 0) return;
  if (a.device != b.device) return;
  const Range ra = byte_range(a), rb = byte_range(b);
  F46_CHECK(ra.hi <= rb.lo || rb.hi <= ra.lo, a_name, " and ", b_name,
            " must not overlap in memory");
}

void offsets_host(const TensorView& offs, const char* name, int64_t limit) {
  dtype(offs, name, DType::kInt32);
  F46_CHECK(offs.ndim == 1, name, " must be 1-D (E), got ", offs.describe());
  F46_CHECK(offs.size(0) >= 1, name, " must have at least one group, got ", offs.describe());
  const int32_t* p = offs.ptr<int32_t>();
  int32_t prev = 0;
  for (int64_t g = 0; g < offs.size(0); ++g) {
    const int32_t o = p[g * offs.strides[0]];
    F46_CHECK(o >= prev, name, " must be non-decreasing and >= 0: ", name, "[", g, "] = ", o,
              " after ", prev);
    prev = o;
  }
  F46_CHECK(prev <= limit, name, "[-1] = ", prev, " exceeds the row count ", limit);
}

}  // namespace f46::check
