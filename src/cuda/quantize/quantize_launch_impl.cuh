// Definition of launch_quantize<T>: picks the kernel instance for the mode and block shape.
#pragma once

#include <algorithm>
#include <type_traits>

#include "cuda/common/cuda_check.h"
#include "cuda/common/launch_utils.h"
#include "cuda/quantize/quantize_cols_group.cuh"
#include "cuda/quantize/quantize_launch.h"
#include "cuda/quantize/quantize_lean.cuh"
#include "cuda/quantize/quantize_quad.cuh"
#include "cuda/quantize/quantize_quad_amax.cuh"
#include "cuda/quantize/quantize_rowcol.cuh"
#include "cuda/quantize/quantize_rows_kernel.cuh"
#include "cuda/quantize/quantize_tile_kernel.cuh"

namespace f46::cuda {

// CTAs of `kernel` that fit on the device at once (the persistent rows kernel's grid bound).
// Also lets `kernel` take `shared_bytes` of dynamic shared memory (staged group offsets, up to
// kMaxGroups * 4 bytes) beyond the 48 KB default next to its static shared memory.
template <typename K>
unsigned resident_ctas(K kernel, int threads, size_t shared_bytes) {
  if (shared_bytes > 0)
    F46_CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(shared_bytes)));
  int per_sm = 0;
  F46_CHECK_CUDA(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared_bytes));
  return static_cast<unsigned>(sm_count_current() * (per_sm > 0 ? per_sm : 1));
}

// A persistent launch of `kernel`: grid.x clamped to the CTAs resident at once.
template <typename K>
void launch_resident(K kernel, unsigned grid_x, int threads, size_t shared_bytes,
                     const QuantizeParams& p, cudaStream_t stream, const char* name) {
  const unsigned max_ctas = resident_ctas(kernel, threads, shared_bytes);
  kernel<<<dim3(grid_x < max_ctas ? grid_x : max_ctas), threads, shared_bytes, stream>>>(p);
  F46_CHECK_LAUNCH(name);
}

// amax_quantize_experts' pass (quantize_quad_amax.cuh): persistent CTAs over the tickets, the
// amaxes ahead of the tiles by about the CTAs in flight (their chunks done before they are
// waited for, and no further: the experts between them stay in L2).
template <bool kCol, typename K>
void launch_with_amax(K kernel, QuantizeParams q, cudaStream_t stream, const char* name) {
  q.quant_chunks = quant_chunks_of<kCol>(q.rows, q.cols);
  const uint64_t ctas = resident_ctas(kernel, kLeanThreads, 0);
  const uint64_t per = uint64_t{q.amax_chunks} + q.quant_chunks, total = per * q.amax_items;
  F46_CHECK(total < (uint64_t{1} << 32), "amax_quantize_experts (CUDA backend limit): ", total,
            " chunks");
  q.amax_ahead = static_cast<uint32_t>(std::max<uint64_t>(1, (ctas + per - 1) / per));
  kernel<<<static_cast<unsigned>(std::min(ctas, total)), kLeanThreads, 0, stream>>>(q);
  F46_CHECK_LAUNCH(name);
}

template <typename T, QuantMode M>
void launch_quantize_mode(const QuantizeParams& p, const QuantizeLaunch& l, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, Bf16>) {
    if (l.kernel == QuantizeKernel::kRowsLeanTensor)
      return launch_resident(quantize_rows_lean_tensor_kernel<M>, l.grid.x, kLeanThreads, 0, p,
                             stream, "quantize_rows_lean_tensor_kernel");
    if constexpr (M != QuantMode::kGradient) {  // 16x16 takes no gradient mode
      if (l.kernel == QuantizeKernel::kQuad16 && l.with_amax)
        return p.columnwise ? launch_with_amax<true>(quantize_experts_amax_kernel<M, true>, p,
                                                     stream, "quantize_experts_amax_kernel")
                            : launch_with_amax<false>(quantize_experts_amax_kernel<M, false>, p,
                                                      stream, "quantize_experts_amax_kernel");
      if (l.kernel == QuantizeKernel::kQuad16) {
        constexpr int kColCtas = kQuadColMinCtas, kRowCtas = kLeanTensorMinCtas;
        auto kernel =
            l.batch > 1
                ? (p.columnwise ? quantize_tile16_quad_kernel<M, true, kQuadRun, kColCtas, true>
                                : quantize_tile16_quad_kernel<M, false, kQuadRun, kRowCtas, true>)
                : (p.columnwise ? quantize_tile16_quad_kernel<M, true>
                                : quantize_tile16_quad_kernel<M, false>);
        // Batched: the resident CTAs shared out over the items (at least one each).
        const unsigned batch = static_cast<unsigned>(l.batch);
        const unsigned per_item = std::max(1u, resident_ctas(kernel, kLeanThreads, 0) / batch);
        const dim3 grid(std::min(l.grid.x, per_item), batch);
        kernel<<<grid, kLeanThreads, 0, stream>>>(p);
        F46_CHECK_LAUNCH("quantize_tile16_quad_kernel");
        return;
      }
    }
    if (l.kernel == QuantizeKernel::kRowCol)
      return launch_resident(quantize_rowcol_lean_kernel<M>, l.grid.x, kLeanThreads, 0, p, stream,
                             "quantize_rowcol_lean_kernel");
    if (l.kernel == QuantizeKernel::kColsGroup)  // dynamic shared memory: the staged offsets
      return launch_resident(quantize_cols_group_kernel<M>, l.grid.x, kLeanThreads, l.shared_bytes,
                             p, stream, "quantize_cols_group_kernel");
    if (l.kernel == QuantizeKernel::kRowsLean)
      return launch_resident(quantize_rows_lean_kernel<M>, l.grid.x, kLeanThreads, l.shared_bytes,
                             p, stream, "quantize_rows_lean_kernel");
  }
  if (l.kernel != QuantizeKernel::kTile) {  // kRows (the bf16-only kernels returned above)
    launch_resident(quantize_rows_kernel<T, M>, l.grid.x, kRowThreads, l.shared_bytes, p, stream,
                    "quantize_rows_kernel");
  } else {
    // Dynamic shared memory: the warps' rings and scale tables, then the group offsets.
    const size_t shared =
        TileLayout<typename T::Storage>::bytes(p.scope == ScopeKind::kTensor) + l.shared_bytes;
    auto kernel = l.tile16 ? quantize_tile_kernel<T, M, true> : quantize_tile_kernel<T, M, false>;
    launch_resident(kernel, l.grid.x, kTileThreads, shared, p, stream,
                    l.tile16 ? "quantize_tile_kernel<16x16>" : "quantize_tile_kernel<1x16>");
  }
}

template <typename T>
void launch_quantize(const QuantizeParams& p, const QuantizeLaunch& l, cudaStream_t stream) {
  switch (l.mode) {
    case QuantMode::kMAE:
      return launch_quantize_mode<T, QuantMode::kMAE>(p, l, stream);
    case QuantMode::kMSE:
      return launch_quantize_mode<T, QuantMode::kMSE>(p, l, stream);
    case QuantMode::kAbsMax:
      return launch_quantize_mode<T, QuantMode::kAbsMax>(p, l, stream);
    case QuantMode::kAll6:
      return launch_quantize_mode<T, QuantMode::kAll6>(p, l, stream);
    case QuantMode::kAll4:
      return launch_quantize_mode<T, QuantMode::kAll4>(p, l, stream);
    case QuantMode::kGradient:
      return launch_quantize_mode<T, QuantMode::kGradient>(p, l, stream);
  }
}

}  // namespace f46::cuda
