// The order of amax_quantize_experts' one pass (quantize_quad_amax.cuh): which chunk a ticket
// is. Host and device (tests/cpp/test_ticket_chunk.cpp checks the order on the CPU).
#pragma once

#include <cstdint>

#include "common/numerics.h"

namespace f46::cuda {

struct TicketChunk {
  bool amax;       // an amax chunk, else a quantize chunk
  uint32_t item;   // the expert
  uint32_t chunk;  // its index among the expert's chunks of that kind
};

// Ticket t of items x (na + nq): amax chunks of experts [0, ahead) first, then per expert k the
// amax chunks of expert k + ahead (while there is one) and the quantize chunks of expert k. So
// every expert's amax chunks precede its quantize chunks.
F46_HD TicketChunk ticket_chunk(uint32_t t, uint32_t items, uint32_t na, uint32_t nq,
                                uint32_t ahead) {
  ahead = ahead < items ? ahead : items;
  const uint32_t pre = ahead * na;
  if (t < pre) return TicketChunk{true, t / na, t % na};
  t -= pre;
  const uint32_t per = na + nq, full = items - ahead;
  if (t < full * per) {
    const uint32_t k = t / per, r = t % per;
    return r < na ? TicketChunk{true, k + ahead, r} : TicketChunk{false, k, r - na};
  }
  t -= full * per;
  return TicketChunk{false, full + t / nq, t % nq};
}

}  // namespace f46::cuda
