// SwiGLU arithmetic (docs/numerics.md N13) shared by the CPU reference and the CUDA kernels:
// PyTorch's silu / silu_backward formulas in FP32, every operation separately rounded, the one
// multiply-add of silu_backward fused (as nvcc's default contraction compiles PyTorch's
// kernel). d = 1 + exp(-x) comes from the backend: on CUDA as nvcc compiles PyTorch's kernel
// (expf's last multiply fused with the + 1, src/cuda/swiglu/swiglu.cu), on the CPU
// add(1, std::exp(-x)).
#pragma once

#include "common/numerics.h"

namespace f46::swiglu_math {

// silu(x) = x / d.
F46_HD float silu(float x, float d) { return num::div(x, d); }

// d silu(x) * dy = dy * sig * (1 + x * (1 - sig)), sig = 1 / d.
F46_HD float silu_grad(float dy, float x, float d) {
  const float sig = num::div(1.0f, d);
  return num::mul(num::mul(dy, sig), num::fma(x, num::sub(1.0f, sig), 1.0f));
}

}  // namespace f46::swiglu_math
