// Token-group row arithmetic of the CUDA kernels (src/cuda/common/group_rows.h), run on the CPU:
// a band's rows from one group search (padded_band_rows, the columnwise group quantizer) are
// the rows that source_row gives one by one (the tile kernel's per-row mapping, N12), for valid
// and invalid source offsets, empty groups and rows past the last group.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cuda/common/group_rows.h"

namespace f46::cuda {
namespace {

// What stage_clamped_offsets stages: s[g] = min(max(0, offs[0..g]), limit).
std::vector<int32_t> clamped(const std::vector<int32_t>& offs, int64_t limit) {
  std::vector<int32_t> s(offs.size());
  int32_t carry = 0;
  for (size_t g = 0; g < offs.size(); ++g) {
    carry = std::max(carry, offs[g]);
    s[g] = static_cast<int32_t>(std::min<int64_t>(carry, limit));
  }
  return s;
}

void expect_bands_match_rows(const std::vector<int32_t>& pad, const std::vector<int32_t>& src,
                             int64_t rows, const std::string& what) {
  const int groups = static_cast<int>(pad.size());
  for (int64_t b = 0; b < rows / 16; ++b) {
    const BandRows band = padded_band_rows(pad.data(), src.data(), groups, b);
    ASSERT_GE(band.real, 0) << what;
    ASSERT_LE(band.real, 16) << what;
    for (int i = 0; i < 16; ++i) {
      const int64_t want = source_row(pad.data(), src.data(), groups, 16 * b + i);
      const int64_t got = i < band.real ? band.src + i : -1;
      ASSERT_EQ(got, want) << what << " band " << b << " row " << i;
    }
  }
}

TEST(GroupRows, BandsAreTheRowsOfSourceRow) {
  // Source group sizes (tokens per expert) -> padded ends (multiples of 16) and source ends.
  const std::vector<std::vector<int32_t>> size_sets = {
      {16, 16}, {13, 0, 30, 9}, {1, 77, 0, 0, 150, 3}, {300, 1000, 724}, {0, 0, 0}, {5}};
  for (const auto& sizes : size_sets)
    for (int64_t past : {0, 32}) {  // padded rows past the last group
      std::vector<int32_t> offs, poffs;
      int32_t m = 0, p = 0;
      for (int32_t n : sizes) {
        m += n;
        p += (n + 15) / 16 * 16;
        offs.push_back(m);
        poffs.push_back(p);
      }
      const int64_t rows = p + past;
      expect_bands_match_rows(
          clamped(poffs, rows), clamped(offs, m), rows,
          "sizes " + std::to_string(sizes.size()) + " past " + std::to_string(past));
    }
  // Invalid source offsets (decreasing, negative, past the rows): the clamped values still map
  // every band to in-range source rows, as source_row does.
  std::mt19937 rng(7);
  for (int t = 0; t < 200; ++t) {
    const int groups = 1 + static_cast<int>(rng() % 9);
    std::vector<int32_t> offs(groups), poffs(groups);
    int32_t p = 0;
    for (int g = 0; g < groups; ++g) {
      offs[g] = static_cast<int32_t>(rng() % 400) - 50;
      p += 16 * static_cast<int32_t>(rng() % 6);
      poffs[g] = p;
    }
    const int64_t src_rows = 1 + rng() % 300, rows = p + 16 * (rng() % 3);
    const std::vector<int32_t> src = clamped(offs, src_rows);
    expect_bands_match_rows(clamped(poffs, rows), src, rows, "random " + std::to_string(t));
    for (int64_t b = 0; b < rows / 16; ++b) {
      const BandRows band = padded_band_rows(clamped(poffs, rows).data(), src.data(), groups, b);
      if (band.real > 0) {
        EXPECT_GE(band.src, 0);
        EXPECT_LE(band.src + band.real, src_rows);
      }
    }
  }
}

TEST(GroupRows, GroupOfRow) {
  const std::vector<int32_t> ends = {0, 16, 16, 48};
  EXPECT_EQ(group_of_row(ends.data(), 4, 0), 1);  // group 0 is empty
  EXPECT_EQ(group_of_row(ends.data(), 4, 15), 1);
  EXPECT_EQ(group_of_row(ends.data(), 4, 16), 3);  // group 2 is empty
  EXPECT_EQ(group_of_row(ends.data(), 4, 47), 3);
  EXPECT_EQ(group_of_row(ends.data(), 4, 48), 4);  // past the last group
}

}  // namespace
}  // namespace f46::cuda
