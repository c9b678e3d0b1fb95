// Rowwise 1x16 quantization kernel (docs/numerics.md N2-N7), persistent and division-free.
//
// Work: the tensor's 1x16 blocks in row-major order, cut into steps of kRowThreads consecutive
// blocks; CTA c takes the contiguous steps [c S / G, (c + 1) S / G) (S steps, G CTAs), so a
// CTA walks its rows in order (a group-scope amax changes at most at a group boundary) and
// thread t takes block t of each step (consecutive lanes, consecutive blocks: the code and
// scale stores coalesce). Positions advance by a fixed step, so (row, block column) are kept
// as cursors: no division after the first step.
//
// Loads: kStages - 1 steps in flight through cp.async into a shared-memory ring, slot
// ring[stage][v][t] holding the 16-byte vector v of thread t's block. When x is contiguous,
// the 32 blocks of a warp are one run of memory and lane l copies the vectors l + 32 k of the
// run (each warp instruction reads 512 contiguous bytes) into the slots of the blocks they
// belong to; otherwise each lane copies its own block. Either way a lane reads only slots its
// warp wrote: cp.async.wait_group then __syncwarp, no CTA barrier.
//
// Scale tables (scale_entry, quantize_block.cuh): one per CTA for the global amax of the
// step's first row, refilled (two barriers, uniform) when that amax changes; a block whose
// row has another amax computes its own entries.
#pragma once

#include <cstdint>

#include "common/numerics.h"
#include "cuda/common/tensor_io.cuh"
#include "cuda/quantize/block_io.cuh"
#include "cuda/quantize/quantize_block.cuh"
#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

// Global amax of rows visited in increasing order (N2): per tensor, per row, or the row's
// group found by a cursor that only moves forward (num_groups: past the last offset -> 0).
struct RowAmax {
  int group = 0;
  __device__ __forceinline__ float at(const QuantizeParams& p, const int32_t* s_offs, int32_t row) {
    if (p.scope == ScopeKind::kTensor) return p.amax[0];
    if (p.scope == ScopeKind::kRow) return p.amax[row];
    while (group < p.num_groups && s_offs[group] <= row) ++group;
    return group < p.num_groups ? p.amax[group] : 0.0f;
  }
};

template <typename T, QuantMode M>
__global__ void __launch_bounds__(kRowThreads, kRowMinCtas)
    quantize_rows_kernel(const QuantizeParams p) {
  using S = typename T::Storage;
  constexpr int kVecs = Raw16<T>::kVecs;                 // 16-byte vectors per block
  constexpr int kStages = kRowRingBytes / (16 * kVecs);  // 4 (bf16/fp16) or 2 (fp32)
  static_assert(kStages >= 2, "the ring needs a slot being read and one being filled");
  static_assert(kRowThreads % 32 == 0, "whole warps");
  __shared__ uint4 ring[kStages][kVecs][kRowThreads];  // [stage][vector][thread]
  __shared__ float2 s_tab[256];                        // scale_entry for the amax s_tab_amax
  extern __shared__ int32_t s_offs[];
  if (p.scope == ScopeKind::kGroup) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);

  const int tid = threadIdx.x, lane = tid & 31, warp0 = tid & ~31;
  const int32_t bpr = static_cast<int32_t>(p.cols / 16);
  const int64_t total = p.rows * static_cast<int64_t>(bpr);
  const int64_t steps = (total + kRowThreads - 1) / kRowThreads;
  const int64_t full_steps = total / kRowThreads;  // steps with all kRowThreads blocks in x
  const int64_t s_begin = steps * blockIdx.x / gridDim.x;
  const int64_t s_end = steps * (blockIdx.x + 1) / gridDim.x;
  const CursorStep cstep{kRowThreads / bpr, kRowThreads % bpr, bpr};
  const bool contiguous = p.x_stride == p.cols || p.rows == 1;
  const bool dense_out = p.codes_stride * 2 == p.cols && p.scales_stride == bpr;
  const S* x_base = static_cast<const S*>(p.x);

  // Contiguous loads: lane copies vectors lane + 32 k of its warp's run, i.e. part lane % kVecs
  // of block warp0 + lane / kVecs + (32 / kVecs) k; the source advances by a fixed step.
  constexpr int kStageBytes = kVecs * kRowThreads * 16;
  const uint32_t ring0 = static_cast<uint32_t>(__cvta_generic_to_shared(&ring[0][0][0]));
  const uint32_t dst0 = ring0 + ((lane % kVecs) * kRowThreads + warp0 + lane / kVecs) * 16;
  const uint4* src = reinterpret_cast<const uint4*>(x_base) +
                     (s_begin * kRowThreads + warp0) * kVecs + lane;  // lane's vector, step 0
  // Strided loads: each lane copies its own block, found by a cursor.
  const int64_t i0 = s_begin * kRowThreads + tid;
  BlockCursor pre{static_cast<int32_t>(i0 / bpr), static_cast<int32_t>(i0 % bpr)}, cur = pre;
  const int32_t n_steps = static_cast<int32_t>(s_end - s_begin);
  int32_t pre_k = 0;             // steps issued
  auto issue = [&](int stage) {  // one commit group per step, empty past the CTA's range
    if (p.vec_load && pre_k < n_steps) {
      if (contiguous) {
        const uint32_t dst = dst0 + stage * kStageBytes;
        if (s_begin + pre_k < full_steps) {
#pragma unroll
          for (int k = 0; k < kVecs; ++k) cp_async16(dst + k * (32 / kVecs) * 16, src + 32 * k);
        } else {  // the tensor's last step: vectors past x are not read
          const int64_t left = (total - (s_begin + pre_k) * kRowThreads - warp0) * kVecs - lane;
#pragma unroll
          for (int k = 0; k < kVecs; ++k)
            if (32 * k < left) cp_async16(dst + k * (32 / kVecs) * 16, src + 32 * k);
        }
        src += kRowThreads * kVecs;
      } else {
        if (pre.row < p.rows) {
          const uint4* q =
              reinterpret_cast<const uint4*>(x_base + pre.row * p.x_stride + pre.col * 16);
#pragma unroll
          for (int v = 0; v < kVecs; ++v) cp_async16(&ring[stage][v][tid], q + v);
        }
        advance(pre, cstep);
      }
    }
    cp_async_commit();
    ++pre_k;
  };
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) issue(s);

  const ErrorConsts consts = error_consts(p.bound);
  RowAmax first_amax, own_amax;  // of each step's first row (uniform) and of tid's row
  BlockCursor first{static_cast<int32_t>(s_begin * kRowThreads / bpr),
                    static_cast<int32_t>(s_begin * kRowThreads % bpr)};
  GlobalScale g_tab = fill_scale_table(s_tab, first_amax.at(p, s_offs, first.row), consts, p.bound);
  GlobalScale gs = g_tab;
  int stage = 0;
  int64_t blk = i0;  // tid's block in the step consumed, row-major: element index blk * 16
  for (int32_t k = 0; k < n_steps; ++k) {
    if (p.scope == ScopeKind::kGroup) {  // uniform: the step's first row
      const float a = first_amax.at(p, s_offs, first.row);
      if (num::bits(a) != num::bits(g_tab.amax)) {
        __syncthreads();  // every thread is done with the previous table
        g_tab = fill_scale_table(s_tab, a, consts, p.bound);
      }
      advance(first, cstep);
    }
    issue(stage == 0 ? kStages - 1 : stage - 1);
    cp_async_wait<kStages - 1>();  // this step's group has landed (this thread's copies)
    __syncwarp();                  // ... and the other lanes' copies of this warp
    if (blk < total) {
      float x[16];  // one 1x16 block of row cur.row
      if (p.vec_load) {
        Raw16<T> raw;
#pragma unroll
        for (int v = 0; v < kVecs; ++v) raw.w[v] = ring[stage][v][tid];
        unpack16<T>(raw, x);
      } else {
        load16<T>(x_base + cur.row * p.x_stride + static_cast<int64_t>(cur.col) * 16, false, x);
      }
      if (p.rht_rowwise) {
        float y[16];
        num::rht16(x, y);  // N7
#pragma unroll
        for (int j = 0; j < 16; ++j) x[j] = y[j];
      }
      TableRef tab{s_tab, true};  // per tensor: gs == g_tab throughout
      if (p.scope != ScopeKind::kTensor) {
        update_global_scale(gs, own_amax.at(p, s_offs, cur.row), p.bound);
        tab.valid = num::bits(gs.amax) == num::bits(g_tab.amax);
      }
      const BlockCodes b = quantize_block<M, false>(x, gs, consts, p.stochastic, p.seed, p.offset,
                                                    static_cast<uint64_t>(blk) * 16, 0u, tab);
      if (dense_out)
        store_block(p.codes + blk * 8, p.scales + blk, b);
      else
        store_block(p.codes + cur.row * p.codes_stride + cur.col * 8,
                    p.scales + cur.row * p.scales_stride + cur.col, b);
    }
    __syncwarp();  // the warp's lanes are done with this stage before it is refilled
    stage = stage == kStages - 1 ? 0 : stage + 1;
    advance(cur, cstep);
    blk += kRowThreads;
  }
  cp_async_wait<0>();
}

}  // namespace f46::cuda
