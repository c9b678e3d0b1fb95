// Token-group padding for grouped GEMMs (docs/numerics.md N12). No host synchronisation:
// the padded size is a static bound and the offsets stay on the device.
#pragma once

#include <cstdint>

#include "f46/tensor.h"

namespace f46 {

// Rows of the padded buffer for M tokens in E groups padded to `alignment`:
// M + E * (alignment - 1), rounded up to a multiple of alignment.
int64_t padded_rows(int64_t m, int64_t num_groups, int64_t alignment);

// x (M, C) split by offs (E) int32 -> out (padded_rows, C) with group g starting at
// padded_offs[g-1] (0 for g = 0) and padded to a multiple of `alignment` with zero rows;
// rows past padded_offs[E-1] are zero. padded_offs (E) int32 is written.
void pad_token_groups(const TensorView& x, const TensorView& offs, int64_t alignment,
                      TensorView& out, TensorView& padded_offs, const Context& ctx = {});

// Inverse: y (P, C) laid out as pad_token_groups produced -> out (M, C), where
// M = out.size(0); rows past offs[E-1] of out are zero.
void unpad_token_groups(const TensorView& y, const TensorView& offs, const TensorView& padded_offs,
                        TensorView& out, const Context& ctx = {});

// In place: rows of x (M, C) at and past offs[E-1] (the rows outside every group, N11) set to
// zero; the other rows untouched. On CUDA offs[E-1] is read on the device only (clamped to
// [0, M]), so the call costs a few microseconds when the groups cover every row.
void zero_rows_past_groups(TensorView& x, const TensorView& offs, const Context& ctx = {});

}  // namespace f46
