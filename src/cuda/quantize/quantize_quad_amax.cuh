// amax_quantize_experts' kernel: the experts' N9 amaxes and their 16x16 quantization (the
// batched 16x16 weights kernel's walk, quantize_quad.cuh) in one launch, meant to read an
// expert's tiles again from L2 after its amax. Measured (docs/design.md, "16x16 weights"): 2-13 %
// below the amax pass + the 16x16 kernel, and the small experts it was meant for (Qwen3: 128 of
// 6 MB) gain least, so the second read mostly misses L2 yet.
//   - The work is a list of chunks taken in order from a ticket counter by persistent CTAs:
//     per expert `na` amax chunks (64 KB of x each) and `nq` quantize chunks (one run or a few
//     steps per warp), expert e's amax chunks `ahead` experts before its quantize chunks
//     (ticket_chunk), so that they are read again soon after.
//   - An amax chunk: the integer max of |x| bit patterns (N9, the largest NaN pattern as
//     f46::amax), one atomicMax per CTA into the expert's amax, then the expert's count of done
//     chunks raised (release).
//   - A quantize chunk waits (acquire) until its expert's amax chunks are all counted, then
//     fills the block-scale table for that amax and quantizes as the batched kernel does.
//     No wait can deadlock: a chunk waited for has a smaller ticket, so a running CTA holds it,
//     and amax chunks wait for nothing; a wait that outlives ~seconds traps instead of hanging.
// Host (quantize.cpp): amax_out and sched zeroed, x rows contiguous (x_stride == cols), bf16.
#pragma once

#include <cstdint>
#include <cuda/atomic>

#include "cuda/quantize/quantize_quad.cuh"
#include "cuda/quantize/ticket_chunk.h"

namespace f46::cuda {

// Runs (kCol) or steps per warp in a quantize chunk (64 KB of x, as an amax chunk,
// kAmaxChunkBytes).
inline constexpr uint32_t kAmaxQuantRuns = 1, kAmaxQuantSteps = 4;
// Resident CTAs per SM the rowwise form's registers are bounded for (5, the batched kernel's,
// spilled 40-48 bytes with the ticket loop's state).
inline constexpr int kAmaxRowMinCtas = 4;

// An item's quantize chunks.
template <bool kCol>
F46_HD uint32_t quant_chunks_of(int64_t rows, int64_t cols) {
  const uint32_t spr = static_cast<uint32_t>((cols + kQuadCols - 1) / kQuadCols);
  const uint32_t trows = static_cast<uint32_t>(rows / 16);
  return kCol ? (quad_run_slots<true, kQuadRun>(trows, spr) + kQuadWarps * kAmaxQuantRuns - 1) /
                    (kQuadWarps * kAmaxQuantRuns)
              : (trows * spr + kQuadWarps * kAmaxQuantSteps - 1) / (kQuadWarps * kAmaxQuantSteps);
}

// |x| bit patterns of 8 bf16 values, max per 16-bit half into m (N9 on the bf16 patterns).
__device__ __forceinline__ uint32_t absmax_halves(uint32_t m, const uint4& v) {
  m = __vmaxu2(m, v.x & 0x7FFF7FFFu);
  m = __vmaxu2(m, v.y & 0x7FFF7FFFu);
  m = __vmaxu2(m, v.z & 0x7FFF7FFFu);
  return __vmaxu2(m, v.w & 0x7FFF7FFFu);
}

// Amax chunk `c` of expert `item`: its 16-byte vectors [c nv / na, (c + 1) nv / na).
__device__ __forceinline__ void amax_chunk(const QuantizeParams& p, uint32_t item, uint32_t c,
                                           uint32_t* s_red) {
  const uint32_t nv = static_cast<uint32_t>(p.rows * p.cols / 8), na = p.amax_chunks;
  const uint32_t v1 = static_cast<uint32_t>(uint64_t{nv} * (c + 1) / na);
  const uint4* xs =
      reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.x) + int64_t{item} * p.x_batch);
  uint32_t m = 0;
  uint32_t v = static_cast<uint32_t>(uint64_t{nv} * c / na) + threadIdx.x;
  for (; v + 3 * kLeanThreads < v1; v += 4 * kLeanThreads) {  // four loads in flight
    const uint4 a = load_x16(xs + v), b = load_x16(xs + v + kLeanThreads);
    const uint4 d = load_x16(xs + v + 2 * kLeanThreads), e = load_x16(xs + v + 3 * kLeanThreads);
    m = absmax_halves(absmax_halves(absmax_halves(absmax_halves(m, a), b), d), e);
  }
  for (; v < v1; v += kLeanThreads) m = absmax_halves(m, load_x16(xs + v));
  m = __reduce_max_sync(0xFFFFFFFFu, max(m & 0xFFFFu, m >> 16));
  if ((threadIdx.x & 31) == 0) s_red[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t r = 0;
#pragma unroll
    for (int w = 0; w < kQuadWarps; ++w) r = max(r, s_red[w]);
    if (r != 0) atomicMax(p.amax_out + item, r << 16);  // the float32 pattern of a bf16 |x|
    ::cuda::atomic_ref<uint32_t, ::cuda::thread_scope_device> done(p.sched[1 + item]);
    done.fetch_add(1u, ::cuda::memory_order_release);
  }
}

// Thread 0: waits until expert `item`'s amax chunks are all done, then reads its amax.
__device__ __forceinline__ uint32_t await_amax(const QuantizeParams& p, uint32_t item) {
  ::cuda::atomic_ref<uint32_t, ::cuda::thread_scope_device> done(p.sched[1 + item]);
  uint32_t spins = 0;
  while (done.load(::cuda::memory_order_acquire) < p.amax_chunks) {
    __nanosleep(256);
    if (++spins == (1u << 27)) __trap();  // ~30 s: a broken schedule fails, never hangs
  }
  return ::cuda::atomic_ref<uint32_t, ::cuda::thread_scope_device>(p.amax_out[item])
      .load(::cuda::memory_order_relaxed);
}

// kCol: the columnwise output, and the rowwise one when p.rowwise (the walk of runs); else rowwise.
template <QuantMode M, bool kCol>
__global__ void __launch_bounds__(kLeanThreads, kCol ? kQuadColMinCtas : kAmaxRowMinCtas)
    quantize_experts_amax_kernel(const QuantizeParams p) {
  __shared__ LeanEntry s_tab[256];
  constexpr int kWarpsBuf = kCol ? kQuadWarps : 1;
  __shared__ uint2 s_codes_t[kWarpsBuf][kCol ? 8 * kQuadTileWords : 1];
  __shared__ uint8_t s_scales_t[kWarpsBuf][kCol ? 8 * kQuadTileScales : 1];
  __shared__ uint32_t s_ticket, s_amax, s_red[kQuadWarps];
  const ErrorConsts consts = error_consts(p.bound);
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const uint32_t spr = static_cast<uint32_t>((p.cols + kQuadCols - 1) / kQuadCols);
  const uint32_t trows = static_cast<uint32_t>(p.rows / 16);
  const uint32_t items = p.amax_items, na = p.amax_chunks, nq = p.quant_chunks;
  const uint32_t total = items * (na + nq);
  QuadWarp qw;
  qw.tab = s_tab;
  qw.consts = consts;
  qw.t = lane / 4;
  qw.L = lane % 4;
  qw.qmask = 0xFu << (lane & ~3);
  qw.rowwise = !kCol || p.rowwise;
  qw.buf_t = s_codes_t[kCol ? warp : 0] + qw.t * kQuadTileWords;
  qw.sbuf_t = s_scales_t[kCol ? warp : 0] + qw.t * kQuadTileScales;
  uint32_t cur = 0xFFFFFFFFu;  // the expert of the table
  for (;;) {
    __syncthreads();  // the previous chunk's reads of s_ticket, s_amax, s_red and the table
    if (threadIdx.x == 0) s_ticket = atomicAdd(p.sched, 1u);
    __syncthreads();
    const uint32_t tk = s_ticket;
    if (tk >= total) break;
    const TicketChunk w = ticket_chunk(tk, items, na, nq, p.amax_ahead);
    if (w.amax) {
      amax_chunk(p, w.item, w.chunk, s_red);
      continue;
    }
    if (threadIdx.x == 0) s_amax = await_amax(p, w.item);
    __syncthreads();
    if (w.item != cur) {  // uniform
      qw.gs = global_scale(num::from_bits(s_amax), p.bound);
      fill_lean_table<M>(s_tab, qw.gs, consts);
      cur = w.item;
    }
    qw.item = w.item;
    qw.xs = static_cast<const uint16_t*>(p.x) + int64_t{w.item} * p.x_batch;
    if constexpr (!kCol) {
      const uint32_t n = trows * spr;
      const uint32_t s0 = w.chunk * kQuadWarps * kAmaxQuantSteps + warp;
      for (uint32_t j = 0; j < kAmaxQuantSteps; ++j) {
        const uint32_t s = s0 + j * kQuadWarps;
        if (s < n) quad_step<M, false>(p, qw, s / spr, s % spr, 0);
      }
    } else {
      const uint32_t n = quad_run_slots<true, kQuadRun>(trows, spr);
      const uint32_t u0 = w.chunk * kQuadWarps * kAmaxQuantRuns + warp;
      for (uint32_t k = 0; k < kAmaxQuantRuns; ++k) {
        const uint32_t u = u0 + k * kQuadWarps;
        uint32_t strip, r;
        if (u >= n || !quad_run_at<true, kQuadRun>(u, trows, spr, strip, r)) continue;
        const uint32_t tr0 = kQuadRun * r;
        const uint32_t nj = trows - tr0 < kQuadRun ? trows - tr0 : kQuadRun;
        for (uint32_t j = 0; j < nj; ++j)
          quad_step<M, true>(p, qw, tr0 + j, strip, static_cast<int>(j));
        __syncwarp();
        quad_store_run(p, w.item, strip, tr0, nj, lane, s_codes_t[warp], s_scales_t[warp]);
        __syncwarp();  // the buffers are written again by the next run
      }
    }
  }
}

}  // namespace f46::cuda
