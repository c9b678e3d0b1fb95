// Host launchers of the quantization kernels, one explicit instantiation per input dtype
// (quantize_bf16.cu, quantize_f16.cu, quantize_f32.cu) so the builds run in parallel.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

struct QuantizeLaunch {
  QuantMode mode = QuantMode::kMAE;
  bool tile_kernel = false;  // false: quantize_rows_kernel
  bool tile16 = false;       // 16x16 blocks (tile kernel only)
  bool lean = false;         // bf16 rows kernel case of quantize_rows_lean_kernel
  bool lean_tensor = false;  // ... per tensor: quantize_rows_lean_tensor_kernel
  bool quad16 = false;       // bf16 16x16 per tensor: quantize_tile16_quad_kernel
  bool rowcol = false;       // bf16 1x16 row+col per tensor: quantize_rowcol_lean_kernel
  size_t shared_bytes = 0;   // staged group offsets
  int batch = 1;             // quad16 only: gridDim.y items (QuantizeParams::*_batch strides)
  dim3 grid;
};

// T: Bf16, F16 or F32 (common/tensor_io.cuh).
template <typename T>
void launch_quantize(const QuantizeParams& p, const QuantizeLaunch& l, cudaStream_t stream);

}  // namespace f46::cuda
