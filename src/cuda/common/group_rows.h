// Token-group row arithmetic on staged (clamped) offsets (N11, N12), host and device: the
// group of a row, and the source rows of a virtually padded operand, one row or a 16-row band at
// a time. The CPU tests check the band form against the row form (test_group_rows.cpp).
#pragma once

#include <cstdint>

#include "common/numerics.h"

namespace f46::cuda {

// The group whose rows [s_offs[g-1], s_offs[g]) contain `row`, or num_groups when the row is
// past the last offset (outside every group).
F46_HD int group_of_row(const int32_t* s_offs, int num_groups, int64_t row) {
  int lo = 0, hi = num_groups;  // first g with s_offs[g] > row
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (static_cast<int64_t>(s_offs[mid]) > row)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

// Virtual token-group padding (N12): the source row of padded row `row`, or -1 for a zero
// row. s_pad: the padded groups' clamped ends, s_src: the source groups' (each clamped on its
// own, so the source row stays below the source row count for any offsets).
F46_HD int64_t source_row(const int32_t* s_pad, const int32_t* s_src, int num_groups, int64_t row) {
  const int g = group_of_row(s_pad, num_groups, row);
  if (g >= num_groups) return -1;
  const int64_t pad_start = g > 0 ? s_pad[g - 1] : 0, src_start = g > 0 ? s_src[g - 1] : 0;
  const int64_t within = row - pad_start;
  return within < s_src[g] - src_start ? src_start + within : -1;
}

// A band's 16 rows (from row 16 b): rows src .. src + real - 1 of the source, then zero rows.
struct BandRows {
  int64_t src = 0;
  int real = 16;
};

// The rows of band b of a virtually padded operand whose padded group ends are multiples of 16
// (a band lies in one group): what source_row gives for each of its rows, with one group search.
F46_HD BandRows padded_band_rows(const int32_t* s_pad, const int32_t* s_src, int num_groups,
                                 int64_t band) {
  const int64_t row = 16 * band;
  const int g = group_of_row(s_pad, num_groups, row);
  if (g >= num_groups) return BandRows{0, 0};
  const int64_t pad_start = g > 0 ? s_pad[g - 1] : 0, src_start = g > 0 ? s_src[g - 1] : 0;
  const int64_t within = row - pad_start, left = (s_src[g] - src_start) - within;
  return BandRows{src_start + within, left <= 0 ? 0 : (left >= 16 ? 16 : static_cast<int>(left))};
}

}  // namespace f46::cuda
