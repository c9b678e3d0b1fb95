// CPU token-group padding (docs/numerics.md N12): group g of x moves to padded rows
// [P[g-1], P[g-1] + size_g) with P[g] = P[g-1] + round_up(size_g, alignment); every other row
// of the padded buffer is zero. Rows are copied as bytes, so any row dtype works.
#include <cstring>

#include "backend.h"

namespace f46::cpu {
namespace {

char* row_ptr(const TensorView& v, int64_t r) {
  return static_cast<char*>(v.data) + r * v.strides[0] * dtype_size(v.dtype);
}

size_t row_bytes(const TensorView& v) {
  return static_cast<size_t>(v.shape[1] * dtype_size(v.dtype));
}

void zero_rows(const TensorView& v, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) std::memset(row_ptr(v, r), 0, row_bytes(v));
}

}  // namespace

void pad_token_groups(const TensorView& x, const TensorView& offs, int64_t alignment,
                      TensorView& out, TensorView& padded_offs, const Context&) {
  const int64_t e = offs.size(0), p_rows = out.size(0);
  const int32_t* off = offs.ptr<int32_t>();  // (E) validated: non-decreasing, <= M
  int32_t* poff = padded_offs.ptr<int32_t>();
  int64_t src = 0, dst = 0;
  for (int64_t g = 0; g < e; ++g) {
    const int64_t size = off[g] - src;
    const int64_t padded = (size + alignment - 1) / alignment * alignment;  // N12
    for (int64_t r = 0; r < size; ++r)
      std::memcpy(row_ptr(out, dst + r), row_ptr(x, src + r), row_bytes(x));
    zero_rows(out, dst + size, dst + padded);
    src = off[g];
    dst += padded;
    poff[g * padded_offs.strides[0]] = static_cast<int32_t>(dst);
  }
  zero_rows(out, dst, p_rows);  // rows past padded_offs[E-1]
}

void unpad_token_groups(const TensorView& y, const TensorView& offs, const TensorView& padded_offs,
                        TensorView& out, const Context&) {
  const int64_t e = offs.size(0), m = out.size(0);
  const int32_t* off = offs.ptr<int32_t>();          // (E) validated, <= M
  const int32_t* poff = padded_offs.ptr<int32_t>();  // (E) validated, groups fit in y
  int64_t src = 0, dst = 0;
  for (int64_t g = 0; g < e; ++g) {
    const int64_t size = off[g] - dst;
    for (int64_t r = 0; r < size; ++r)
      std::memcpy(row_ptr(out, dst + r), row_ptr(y, src + r), row_bytes(out));
    dst = off[g];
    src = poff[g * padded_offs.strides[0]];
  }
  zero_rows(out, dst, m);  // rows past offs[E-1]
}

void zero_rows_past_groups(TensorView& x, const TensorView& offs, const Context&) {
  const int64_t e = offs.size(0);
  zero_rows(x, offs.ptr<int32_t>()[(e - 1) * offs.strides[0]], x.size(0));  // validated <= M
}

}  // namespace f46::cpu
