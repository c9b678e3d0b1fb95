// access_bytes (src/cuda/common/launch_utils.h), the word width the pad and SwiGLU launchers
// choose: a pure host function, run on the CPU. Every class 16, 8, 4, 2, 1 reached through a
// size and through an address; null addresses count as aligned (the forward SwiGLU has none).
#include <gtest/gtest.h>

#include <cstdint>

#include "cuda/common/launch_utils.h"

namespace f46::cuda {
namespace {

alignas(16) unsigned char kBuffer[64];

TEST(AccessBytes, EveryWidthThroughASize) {
  const void* base = kBuffer;
  EXPECT_EQ(access_bytes({4096, 64}, {base, base}), 16);
  EXPECT_EQ(access_bytes({4096, 8}, {base}), 8);
  EXPECT_EQ(access_bytes({4096, 4}, {base}), 4);
  EXPECT_EQ(access_bytes({6, 4096}, {base}), 2);
  EXPECT_EQ(access_bytes({4096, 3}, {base}), 1);
  EXPECT_EQ(access_bytes({0}, {base}), 16);  // an empty row moves nothing: any width
}

TEST(AccessBytes, EveryWidthThroughAnAddress) {
  for (int64_t offset : {0, 8, 4, 2, 1, 24, 12, 6}) {
    const int64_t want = offset == 0 ? 16 : offset & -offset;  // lowest set bit
    EXPECT_EQ(access_bytes({4096}, {kBuffer, kBuffer + offset}), want) << "offset " << offset;
  }
}

TEST(AccessBytes, NullAddressesAndTheNarrowestOperandDecide) {
  EXPECT_EQ(access_bytes({32}, {kBuffer, nullptr, nullptr}), 16);
  EXPECT_EQ(access_bytes({32, 16, 2}, {kBuffer}), 2);
  EXPECT_EQ(access_bytes({32}, {kBuffer + 16, kBuffer + 32, kBuffer + 4}), 4);
}

}  // namespace
}  // namespace f46::cuda
