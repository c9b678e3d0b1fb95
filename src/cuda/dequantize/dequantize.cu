// f46::cuda::dequantize: launcher of dequantize_kernel (N8). No host synchronisation.
#include "backend.h"
#include "cuda/common/cuda_check.h"
#include "cuda/common/launch_utils.h"
#include "cuda/dequantize/dequantize_kernels.cuh"

namespace f46::cuda {

void dequantize(const TensorView& codes, const TensorView& scales, const GlobalAmax& amax,
                float scale_bound, TensorView& out, const Context& ctx) {
  DequantizeParams p;
  p.rows = out.size(0);  // out: (rows, cols)
  p.cols = out.size(1);
  if (p.rows == 0 || p.cols == 0) return;
  // out columns % 16 == 0: checked by the front (src/quantize.cpp).
  p.codes = codes.ptr<uint8_t>();
  p.codes_stride = codes.strides[0];
  p.scales = scales.ptr<uint8_t>();
  p.scales_stride = scales.strides[0];
  p.scope = amax.scope == AmaxScope::kRow
                ? ScopeKind::kRow
                : (amax.scope == AmaxScope::kGroup ? ScopeKind::kGroup : ScopeKind::kTensor);
  p.amax = amax.amax.ptr<float>();
  size_t shared = 0;
  if (p.scope == ScopeKind::kGroup) {
    p.offsets = amax.offsets.ptr<int32_t>();
    p.num_groups = static_cast<int>(amax.offsets.size(0));
    shared = staged_offsets_bytes(p.num_groups, "dequantize");
  }
  p.bound = scale_bound;
  p.out = out.data;
  p.out_stride = out.strides[0];
  const int64_t esize = dtype_size(out.dtype);
  const int64_t unit_code_bytes = 16 / esize / 2;  // kDequantUnit / 2
  p.vec_codes = aligned_to(p.codes, unit_code_bytes) &&
                (p.rows == 1 || p.codes_stride % unit_code_bytes == 0);
  p.dense = p.rows == 1 || (p.codes_stride * 2 == p.cols && p.scales_stride * 16 == p.cols &&
                            p.out_stride == p.cols);
  p.vec_out = aligned_to(p.out, 16) && (p.rows == 1 || (p.out_stride * esize) % 16 == 0);
  const dim3 grid(
      grid_x(p.rows * (p.cols / (16 / esize)), kDequantThreads * kDequantUnitsPerThread));
  const cudaStream_t stream = stream_of(ctx);
  switch (out.dtype) {
    case DType::kBFloat16:
      dequantize_kernel<Bf16><<<grid, kDequantThreads, shared, stream>>>(p);
      break;
    case DType::kFloat16:
      dequantize_kernel<F16><<<grid, kDequantThreads, shared, stream>>>(p);
      break;
    case DType::kFloat32:
      dequantize_kernel<F32><<<grid, kDequantThreads, shared, stream>>>(p);
      break;
    default:
      F46_CHECK(false, "dequantize: out must be bf16/fp16/fp32, got ", out.describe());
  }
  F46_CHECK_LAUNCH("dequantize_kernel");
}

}  // namespace f46::cuda
