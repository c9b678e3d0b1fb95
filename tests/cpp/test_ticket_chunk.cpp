// amax_quantize_experts' ticket order (src/cuda/quantize/ticket_chunk.h): every chunk of every
// expert exactly once, and each expert's amax chunks before its first quantize chunk (the
// kernel's waits rely on it: a quantize chunk waits only for smaller tickets).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda/quantize/ticket_chunk.h"

namespace f46::cuda {
namespace {

TEST(TicketChunk, EveryChunkOnceAmaxBeforeQuantize) {
  for (uint32_t items : {1u, 2u, 5u, 17u}) {
    for (uint32_t na : {1u, 3u, 8u}) {
      for (uint32_t nq : {1u, 4u, 9u}) {
        for (uint32_t ahead : {1u, 2u, 4u, 40u}) {
          std::vector<int> seen_a(items * na, 0), seen_q(items * nq, 0);
          std::vector<uint32_t> amax_done(items, 0);
          std::vector<uint32_t> last_amax(items, 0);
          for (uint32_t t = 0; t < items * (na + nq); ++t) {
            const TicketChunk c = ticket_chunk(t, items, na, nq, ahead);
            ASSERT_LT(c.item, items) << "ticket " << t;
            if (c.amax) {
              ASSERT_LT(c.chunk, na);
              ++seen_a[c.item * na + c.chunk];
              ++amax_done[c.item];
            } else {
              ASSERT_LT(c.chunk, nq);
              ++seen_q[c.item * nq + c.chunk];
              ASSERT_EQ(amax_done[c.item], na)
                  << "quantize chunk of expert " << c.item << " at ticket " << t
                  << " before its amax (items " << items << ", ahead " << ahead << ")";
            }
          }
          for (int v : seen_a) EXPECT_EQ(v, 1);
          for (int v : seen_q) EXPECT_EQ(v, 1);
        }
      }
    }
  }
}

// The amaxes run `ahead` experts before the tiles: expert k's quantize chunks come right after
// expert k + ahead's amax chunks (so at most ahead + 1 experts are between their two reads).
TEST(TicketChunk, AmaxRunsAheadByTheGivenExperts) {
  const uint32_t items = 6, na = 2, nq = 3, ahead = 2;
  EXPECT_EQ(ticket_chunk(0, items, na, nq, ahead).item, 0u);
  EXPECT_TRUE(ticket_chunk(3, items, na, nq, ahead).amax);
  EXPECT_EQ(ticket_chunk(3, items, na, nq, ahead).item, 1u);
  const TicketChunk a = ticket_chunk(4, items, na, nq, ahead),
                    q = ticket_chunk(6, items, na, nq, ahead);
  EXPECT_TRUE(a.amax);
  EXPECT_EQ(a.item, 2u);
  EXPECT_FALSE(q.amax);
  EXPECT_EQ(q.item, 0u);
  EXPECT_EQ(q.chunk, 0u);
}

}  // namespace
}  // namespace f46::cuda
