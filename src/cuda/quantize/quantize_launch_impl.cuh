// Definition of launch_quantize<T>: picks the kernel instance for the mode and block shape.
#pragma once

#include "cuda/common/cuda_check.h"
#include "cuda/quantize/quantize_kernels.cuh"
#include "cuda/quantize/quantize_launch.h"

namespace f46::cuda {

template <typename T, QuantMode M>
void launch_quantize_mode(const QuantizeParams& p, const QuantizeLaunch& l, cudaStream_t stream) {
  if (!l.tile_kernel) {
    quantize_rows_1x16_kernel<T, M><<<l.grid, kRowThreads, l.shared_bytes, stream>>>(p);
    F46_CHECK_LAUNCH("quantize_rows_1x16_kernel");
  } else if (l.tile16) {
    quantize_tile_kernel<T, M, true><<<l.grid, kTileThreads, l.shared_bytes, stream>>>(p);
    F46_CHECK_LAUNCH("quantize_tile_kernel<16x16>");
  } else {
    quantize_tile_kernel<T, M, false><<<l.grid, kTileThreads, l.shared_bytes, stream>>>(p);
    F46_CHECK_LAUNCH("quantize_tile_kernel<1x16>");
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
