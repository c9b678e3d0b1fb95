// Host launchers of the quantization kernels, one explicit instantiation per input dtype
// (quantize_bf16.cu, quantize_f16.cu, quantize_f32.cu) so the builds run in parallel.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/quantize/quantize_choice.h"
#include "cuda/quantize/quantize_params.h"

namespace f46::cuda {

// A launch as choose_quantize_kernel and the launcher (quantize.cpp) filled it.
struct QuantizeLaunch {
  QuantizeKernel kernel = QuantizeKernel::kRows;
  QuantMode mode = QuantMode::kMAE;
  bool tile16 = false;      // 16x16 blocks (kTile)
  size_t shared_bytes = 0;  // staged group offsets
  int batch = 1;            // quad16 only: gridDim.y items (QuantizeParams::*_batch strides)
  bool with_amax = false;   // quad16 batched: the items' amaxes in the same pass (amax_out)
  dim3 grid;
};

// T: Bf16, F16 or F32 (common/tensor_io.cuh).
template <typename T>
void launch_quantize(const QuantizeParams& p, const QuantizeLaunch& l, cudaStream_t stream);

}  // namespace f46::cuda
