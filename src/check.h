// Argument checks shared by every public entry point. Each names the argument and its value.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "f46/tensor.h"

namespace f46::check {

// `name` must be a defined tensor of dtype `t`.
void dtype(const TensorView& v, const char* name, DType t);
// `name` must be one of `ts`.
void dtype_in(const TensorView& v, const char* name, std::initializer_list<DType> ts);
// `name` must have exactly these sizes (-1 = any).
void shape(const TensorView& v, const char* name, std::initializer_list<int64_t> sizes);
void contiguous(const TensorView& v, const char* name);
// last dim contiguous (stride 1), 2-D, other strides >= the row length.
void rows_contiguous(const TensorView& v, const char* name);
// Every defined view in `views` lives on `ref`'s device; names are listed in order.
void same_device(const TensorView& ref, const char* ref_name, const TensorView& v,
                 const char* name);
// The memory ranges of two views must not overlap.
void no_alias(const TensorView& a, const char* a_name, const TensorView& b, const char* b_name);
// CPU only: offsets (E) int32 non-decreasing with last <= limit.
void offsets_host(const TensorView& offs, const char* name, int64_t limit);

}  // namespace f46::check
