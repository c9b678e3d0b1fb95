// Pieces shared by the quantization kernels (quantize_rows_kernel.cuh, quantize_tile_kernel.cuh,
// dequantize_kernels.cuh): block cursors, the global amax of a row (dequantize), the per-CTA
// scale table (rows kernel), block stores (cp.async: cuda/common/cp_async.cuh).
#pragma once

#include <cstdint>

#include "common/numerics.h"
#include "cuda/common/cp_async.cuh"
#include "cuda/common/group_offsets.cuh"
#include "cuda/quantize/quantize_block.cuh"
#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

// A position (row, col) in a row-major grid of n columns, advanced by a fixed step
// (dq * n + dr, dr < n) with an add and a carry: no division after the first position. The rows
// kernel walks 1x16 blocks (n = cols / 16, step kRowThreads), the tile kernel 64x64 tiles
// (n = tiles per row, step gridDim.x). 32-bit: the host checks rows < 2^31 and cols < 2^34.
struct BlockCursor {
  int32_t row, col;
};
struct CursorStep {
  int32_t dq, dr, n;
};
__device__ __forceinline__ void advance(BlockCursor& c, const CursorStep& s) {
  c.col += s.dr;
  c.row += s.dq;
  if (c.col >= s.n) {
    c.col -= s.n;
    ++c.row;
  }
}

// Global amax of row `row` (N2): per tensor, per row, or the row's group (0 outside groups).
__device__ __forceinline__ float global_amax_of_row(const float* amax, ScopeKind scope,
                                                    const int32_t* s_offs, int num_groups,
                                                    int64_t row) {
  if (scope == ScopeKind::kTensor) return amax[0];
  if (scope == ScopeKind::kRow) return amax[row];
  const int g = group_of_row(s_offs, num_groups, row);
  return g < num_groups ? amax[g] : 0.0f;
}

// Fills tab[0..256) with scale_entry for the global amax `a` (every thread of the CTA calls it;
// it ends with a barrier). Returns that amax's GlobalScale.
__device__ __forceinline__ GlobalScale fill_scale_table(float2* tab, float a, const ErrorConsts& c,
                                                        float bound) {
  const GlobalScale g = global_scale(a, bound);
  for (int s = threadIdx.x; s < 256; s += blockDim.x) tab[s] = scale_entry(s, g, c);
  __syncthreads();
  return g;
}

__device__ __forceinline__ void store_block(uint8_t* codes, uint8_t* scale, const BlockCodes& b) {
  *reinterpret_cast<uint64_t*>(codes) = b.codes;  // 8-byte aligned: (cols/2) % 8 == 0
  *scale = b.scale;
}

// 16 zero bytes to shared memory (a row that the copies leave out, e.g. virtual padding).
__device__ __forceinline__ void st_shared_zero16(uint32_t smem) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(smem), "r"(0u) : "memory");
}

}  // namespace f46::cuda
