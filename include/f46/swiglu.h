// SwiGLU of the routed experts and its backward (docs/numerics.md N13), elementwise with the
// arithmetic of PyTorch's `F.silu(a) * b` and its autograd, and optionally the per-group amaxes
// (N9) of the outputs, so that the next NVFP4 quantization needs no amax pass of its own.
#pragma once

#include "f46/tensor.h"

namespace f46 {

// out = silu(a) * b for a, b, out (M, F) of one dtype (bf16, fp16, fp32), rows contiguous:
// s = round(a / (1 + exp(-a))) to the dtype, out = round(s * b) (N13). With `amax` defined
// ((E) float32) and offs (E) int32 cumulative group ends (N11), amax[g] = N9 amax of out's
// rows of group g (rows past offs[E-1] count in no group); an undefined `amax` skips it
// (offs may then be undefined too). On CUDA offs is read on the device only.
void swiglu(const TensorView& a, const TensorView& b, TensorView& out, const TensorView& offs,
            TensorView& amax, const Context& ctx = {});

// Backward of out = silu(a) * b given dout (M, F): db = round(dout * s), ds = round(dout * b),
// da = round(silu'(ds, a)) (N13). amax_da / amax_db: as `amax` of swiglu, for da / db; either
// may be undefined.
void swiglu_backward(const TensorView& dout, const TensorView& a, const TensorView& b,
                     TensorView& da, TensorView& db, const TensorView& offs, TensorView& amax_da,
                     TensorView& amax_db, const Context& ctx = {});

}  // namespace f46
