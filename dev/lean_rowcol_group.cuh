// LAB KERNEL, not in the library (dev/): the group-scope form of the lean row+col kernel
// (src/cuda/quantize/quantize_rowcol.cuh) with one slot of scale tables per unit position of a
// run, written 2026-12-05 (commit 2153488, where it was part of the src kernel) and not yet
// measured: no device was lent after it was written. The earlier group forms (one pair of tables
// per warp, refilled at every group change) measured 0.22-0.24 of copy on an H200 on 16384x7168
// against the tile kernel's 0.33 (docs/lab_log.md). dev/lean_lab.cu compares this kernel
// bytewise and in time with the tile kernel on the bench's 128 uneven groups
// (LAB_RC_GROUP_ONLY=1). If it is faster, it goes back into the src kernel as its group scope.
//
// Work as in the src kernel, but each warp takes a contiguous range of runs (stack by stack), and
// keeps, for each unit position k of a run (band k of the stack), a slot of tables for the group
// amax of that band; a slot is refilled only when its band's amax changes, so a warp moving along
// a stack refills nothing and a stack may hold up to four groups.
#pragma once

#include <cstdint>

#include "cuda/common/group_offsets.cuh"
#include "cuda/quantize/quantize_rowcol.cuh"

namespace f46::cuda {

// Group scope: the scale bytes a block can select under a sign-clear global amax. The bases
// (b / 6) * S_enc and b * (S_enc / 6) are +0 or positive for S_enc > 0, or NaN (0x7F), so only
// bytes below 0x80 index a table; a unit whose amax has its sign bit set (a negative amax, which
// makes S_enc negative) takes lean_block_own instead.
inline constexpr int kLabSlotEntries = 128;

// A group-scope slot: the global scales its tables hold (valid: filled at least once).
struct LabRcSlot {
  GlobalScale row, col;
  bool valid;
};

// Dynamic shared memory per warp: kRowColRun slots x (own columnwise amax ? 2 : 1) tables x
// kLabSlotEntries x 16 bytes, then 4 * num_groups bytes (lab_rowcol_group_shared). The host
// conditions are those of quantize_rowcol_lean_kernel with p.scope == kGroup (offsets % 16 == 0).
template <QuantMode M, int kMinCtas = kRowColMinCtas>
__global__ void __launch_bounds__(kLeanThreads, kMinCtas)
    lean_rowcol_group_kernel(const QuantizeParams p) {
  static_assert(kLeanThreads % 32 == 0 && kRowColRun == 4,
                "whole warps; a run's 4 units fill a column's 32-byte code sector");
  // Per warp kRowColRun slots of kLabSlotEntries-entry tables (rowwise, then columnwise for an own
  // amax), then the clamped group ends, in dynamic shared memory.
  __shared__ LabRcSlot s_slot[kRcWarps][kRowColRun];
  extern __shared__ uint4 s_dyn_rc[];
  __shared__ __align__(16) uint8_t s_unit[kRcWarps][16 * kRcRowBytes];
  // A run's columnwise output: codes of unit k, column c at k * 64 + c; scale at byte k of word c.
  __shared__ __align__(16) uint2 s_codes_t[kRcWarps][kRowColRun * kRcUnitCols];
  __shared__ uint32_t s_scales_t[kRcWarps][kRcUnitCols];

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const ErrorConsts consts = error_consts(p.bound);
  const bool own_t = p.amax_t != nullptr;
  const float* amax_t = own_t ? p.amax_t : p.amax;
  const int n_tabs = own_t ? 2 : 1;  // group scope: tables per slot
  LeanEntry* slots = reinterpret_cast<LeanEntry*>(s_dyn_rc) +
                     warp * kRowColRun * n_tabs * kLabSlotEntries;  // this warp's
  int32_t* s_offs =
      reinterpret_cast<int32_t*>(s_dyn_rc + kRcWarps * kRowColRun * n_tabs * kLabSlotEntries);
  const LeanEntry* tab_r = slots;
  const LeanEntry* tab_c = slots;
  GlobalScale gr{}, gc{};
  if (lane < kRowColRun) s_slot[warp][lane].valid = false;
  stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);  // the only CTA barrier

  const int64_t bands = p.rows / 16, ucols = p.cols / kRcUnitCols;
  const int64_t n_runs = (bands + kRowColRun - 1) / kRowColRun * ucols;
  const int64_t warps = int64_t{gridDim.x} * kRcWarps;
  const int64_t gw = int64_t{blockIdx.x} * kRcWarps + warp;
  const int64_t run = n_runs * gw / warps, run_end = n_runs * (gw + 1) / warps;
  if (run >= run_end) return;
  // The global amax of row r (N2; 0 past the last offset).
  auto amax_of = [&](const float* a, int64_t r) {
    const int g = group_of_row(s_offs, p.num_groups, r);
    return g < p.num_groups ? a[g] : 0.0f;
  };
  bool own = false;  // a sign-set amax: every block of the unit by lean_block_own
  rc_walk(p, run, run_end, 1, lane, s_unit[warp], s_codes_t[warp], s_scales_t[warp],
          [&](int64_t row0, int k) {
            // The unit's amaxes: those of its first row's group (offsets % 16 == 0, N1.4),
            // uniform over the warp; slot k refilled if they changed.
            const float ar = amax_of(p.amax, row0), ac = own_t ? amax_of(amax_t, row0) : ar;
            LabRcSlot& sl = s_slot[warp][k];
            LeanEntry* tk = slots + k * n_tabs * kLabSlotEntries;
            tab_r = tk;
            tab_c = own_t ? tk + kLabSlotEntries : tk;
            own = ((num::bits(ar) | num::bits(ac)) >> 31) != 0;
            const bool new_r = !sl.valid || num::bits(ar) != num::bits(sl.row.amax);
            const bool new_c = own_t && (!sl.valid || num::bits(ac) != num::bits(sl.col.amax));
            gr = new_r ? global_scale(ar, p.bound) : sl.row;
            gc = !own_t ? gr : (new_c ? global_scale(ac, p.bound) : sl.col);
            if (!own && (new_r || new_c)) {
              __syncwarp();  // every lane has read the slot
              if (new_r)
                for (int s = lane; s < kLabSlotEntries; s += 32)
                  tk[s] = lean_entry<M>(s, gr, consts);
              if (new_c)
                for (int s = lane; s < kLabSlotEntries; s += 32)
                  tk[kLabSlotEntries + s] = lean_entry<M>(s, gc, consts);
              if (lane == 0) sl = LabRcSlot{gr, gc, true};
            }
            return [&](const uint32_t(&w)[8], bool rowwise) {
              if (own)
                return lean_block_own<M>(make_uint4(w[0], w[1], w[2], w[3]),
                                         make_uint4(w[4], w[5], w[6], w[7]),
                                         rowwise ? gr.amax : gc.amax, p.bound);
              return lean_block<M>(w, rowwise ? tab_r : tab_c, rowwise ? gr : gc, consts);
            };
          });
}

// Dynamic shared memory of lean_rowcol_group_kernel.
inline size_t lab_rowcol_group_shared(bool own_t, int num_groups) {
  return size_t{kRcWarps} * kRowColRun * (own_t ? 2 : 1) * kLabSlotEntries * 16 +
         4 * static_cast<size_t>(num_groups);
}

}  // namespace f46::cuda
