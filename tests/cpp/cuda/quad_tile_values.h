// Test values for the 16x16 and row+col kernels: tiles that tie exactly between the 4/6
// candidates, NaN, Inf, zeros and saturating tiles (test_cuda_quantize_edge.cpp,
// test_cuda_quantize_experts.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "cuda/cuda_test_util.h"

namespace f46::test {

// The tiles of Tile16QuadTiles on an R x C bf16 matrix.
inline std::vector<float> quad_tile_values(int64_t rows, int64_t cols) {
  const int64_t tiles_per_row = cols / 16;
  std::vector<float> v = random_values(rows * cols, 17, Dist::kStudentT, 3.0f, DType::kBFloat16);
  std::mt19937 gen(5);
  const float grid[] = {0.0f, 1.5f, -1.5f, 3.0f, -3.0f, 6.0f, -6.0f};
  auto at = [&](int64_t tile, int64_t r, int64_t c) -> float& {
    const int64_t tr = tile / tiles_per_row, tc = tile % tiles_per_row;
    return v[static_cast<size_t>((16 * tr + r) * cols + 16 * tc + c)];
  };
  const int64_t tiles = rows / 16 * tiles_per_row;
  for (int64_t tile = 0; tile < tiles; ++tile) {
    if (gen() % 3 != 0) continue;
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t c = 0; c < 16; ++c) at(tile, r, c) = grid[gen() % 7];
    at(tile, gen() % 16, gen() % 16) = gen() % 2 ? 6.0f : -6.0f;
  }
  at(7, 3, 4) = std::numeric_limits<float>::quiet_NaN();
  at(2 * tiles_per_row - 1, 15, 15) = -std::numeric_limits<float>::infinity();  // last of a row
  for (int64_t r = 0; r < 16; ++r)
    for (int64_t c = 0; c < 16; ++c) at(100, r, c) = 0.0f, at(101, r, c) = -0.0f;
  at(tiles - 3, 0, 9) = 3.0e38f;
  return v;
}

}  // namespace f46::test
