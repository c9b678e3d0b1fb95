// f46::cuda::swiglu / swiglu_backward (docs/numerics.md N13): the launcher of swiglu_kernel
// (swiglu_kernels.cuh), one memory pass each with the outputs' per-group amaxes (N9).
#include "backend.h"
#include "cuda/common/cuda_check.h"
#include "cuda/common/launch_utils.h"
#include "cuda/swiglu/swiglu_kernels.cuh"

namespace f46::cuda {
namespace {

using swiglu_detail::kThreads;
using swiglu_detail::kWarps;
using swiglu_detail::swiglu_kernel;
using swiglu_detail::SwigluParams;

template <bool kBackward>
void launch(SwigluParams p, DType dtype, const Context& ctx) {
  const cudaStream_t stream = stream_of(ctx);
  size_t shared = 0;
  if (p.amax0 == nullptr && p.amax1 == nullptr) p.offsets = nullptr;
  if (p.offsets != nullptr) {
    shared = staged_offsets_bytes(p.num_groups, "swiglu");
    for (uint32_t* m : {p.amax0, p.amax1})
      if (m != nullptr) F46_CHECK_CUDA(cudaMemsetAsync(m, 0, p.num_groups * sizeof(float), stream));
  }
  if (p.rows == 0 || p.cols == 0) return;
  const int64_t esize = dtype_size(dtype);
  p.vec = access_bytes({p.cols * esize}, {p.a, p.b, p.out0, p.dout, p.out1}) == 16;
  // Enough warps to fill the device several times; each takes a contiguous range of rows.
  const int64_t warps = p.rows < 132 * 64 ? p.rows : 132 * 64;
  const dim3 grid(grid_x(warps, kWarps));
  switch (dtype) {
    case DType::kBFloat16:
      swiglu_kernel<Bf16, kBackward><<<grid, kThreads, shared, stream>>>(p);
      break;
    case DType::kFloat16:
      swiglu_kernel<F16, kBackward><<<grid, kThreads, shared, stream>>>(p);
      break;
    default:
      swiglu_kernel<F32, kBackward><<<grid, kThreads, shared, stream>>>(p);
      break;
  }
  F46_CHECK_LAUNCH("swiglu_kernel");
}

uint32_t* amax_bits(TensorView& amax) { return amax.defined() ? amax.ptr<uint32_t>() : nullptr; }

// The parameters both directions share: inputs a, b (rows, cols), out0, its amax, the offsets.
SwigluParams common_params(const TensorView& a, const TensorView& b, TensorView& out0,
                           const TensorView& offs, TensorView& amax0) {
  SwigluParams p;
  p.a = a.data;
  p.b = b.data;
  p.out0 = out0.data;
  p.rows = a.size(0);
  p.cols = a.size(1);
  p.amax0 = amax_bits(amax0);
  p.offsets = offs.defined() ? offs.ptr<const int32_t>() : nullptr;
  p.num_groups = offs.defined() ? static_cast<int>(offs.size(0)) : 0;
  return p;
}

}  // namespace

void swiglu(const TensorView& a, const TensorView& b, TensorView& out, const TensorView& offs,
            TensorView& amax, const Context& ctx) {
  launch<false>(common_params(a, b, out, offs, amax), a.dtype, ctx);
}

void swiglu_backward(const TensorView& dout, const TensorView& a, const TensorView& b,
                     TensorView& da, TensorView& db, const TensorView& offs, TensorView& amax_da,
                     TensorView& amax_db, const Context& ctx) {
  SwigluParams p = common_params(a, b, da, offs, amax_da);
  p.dout = dout.data;
  p.out1 = db.data;
  p.amax1 = amax_bits(amax_db);
  launch<true>(p, a.dtype, ctx);
}

}  // namespace f46::cuda
