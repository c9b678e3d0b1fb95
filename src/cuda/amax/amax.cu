// f46::cuda::amax: launchers of the amax kernels (N9). Stream-ordered memset + kernel; no sync.
#include "backend.h"
#include "cuda/amax/amax_kernels.cuh"
#include "cuda/common/cuda_check.h"
#include "cuda/common/launch_utils.h"

namespace f46::cuda {

namespace {

template <typename T>
void launch_amax(const AmaxParams& p, bool rht_columns, size_t shared, cudaStream_t stream) {
  if (rht_columns) {
    const dim3 grid(grid_x(p.cols, kAmaxThreads),
                    static_cast<unsigned>(ceil_div(p.rows / 16, kRhtRowBlocksPerThread)));
    amax_rht_columns_kernel<T><<<grid, kAmaxThreads, shared, stream>>>(p);
    F46_CHECK_LAUNCH("amax_rht_columns_kernel");
  } else {
    // Enough warps to fill the GPU several times; each takes a contiguous range of rows.
    const int64_t warps = p.rows < 132 * 64 ? p.rows : 132 * 64;
    const dim3 grid(grid_x(warps, kAmaxWarps));
    amax_rows_kernel<T><<<grid, kAmaxThreads, shared, stream>>>(p);
    F46_CHECK_LAUNCH("amax_rows_kernel");
  }
}

// p's fields of x (R, C) and out.
AmaxParams params_of(const TensorView& x, ScopeKind scope, TensorView& out) {
  AmaxParams p;
  p.x = x.data;
  p.x_stride = x.strides[0];
  p.rows = x.size(0);
  p.cols = x.size(1);
  p.scope = scope;
  p.out = out.ptr<uint32_t>();
  p.vec_load =
      aligned_to(x.data, 16) && (p.rows <= 1 || (p.x_stride * dtype_size(x.dtype)) % 16 == 0);
  return p;
}

// out zeroed (the atomic scopes; row scope: only when there is no row to write) and the kernel
// for x's dtype.
void run(DType dtype, const AmaxParams& p, bool rht_columns, size_t shared, const TensorView& out,
         const Context& ctx) {
  const cudaStream_t stream = stream_of(ctx);
  if (p.scope != ScopeKind::kRow)
    F46_CHECK_CUDA(cudaMemsetAsync(p.out, 0, out.numel() * sizeof(float), stream));
  if (p.rows == 0 || p.cols == 0) {
    if (p.scope == ScopeKind::kRow && p.rows > 0)
      F46_CHECK_CUDA(cudaMemsetAsync(p.out, 0, p.rows * sizeof(float), stream));
    return;
  }
  switch (dtype) {
    case DType::kBFloat16:
      return launch_amax<Bf16>(p, rht_columns, shared, stream);
    case DType::kFloat16:
      return launch_amax<F16>(p, rht_columns, shared, stream);
    case DType::kFloat32:
      return launch_amax<F32>(p, rht_columns, shared, stream);
    default:
      F46_CHECK(false, "amax: x must be bf16/fp16/fp32, got ", dtype_name(dtype));
  }
}

}  // namespace

void amax(const TensorView& x, const AmaxConfig& cfg, TensorView& out, const Context& ctx) {
  AmaxParams p = params_of(x,
                           cfg.scope == AmaxScope::kRow     ? ScopeKind::kRow
                           : cfg.scope == AmaxScope::kGroup ? ScopeKind::kGroup
                                                            : ScopeKind::kTensor,
                           out);
  size_t shared = 0;
  if (p.scope == ScopeKind::kGroup) {
    p.offsets = cfg.offsets.ptr<int32_t>();
    p.num_groups = static_cast<int>(cfg.offsets.size(0));
    shared = staged_offsets_bytes(p.num_groups, "amax");
  }
  // rht_columns: tensor or group scope and rows % 16 == 0 (checked by the front, src/quantize.cpp).
  run(x.dtype, p, cfg.rht_columns, shared, out, ctx);
}

void amax_row_groups(const TensorView& x, int64_t group_rows, TensorView& out, const Context& ctx) {
  AmaxParams p = params_of(x, ScopeKind::kGroup, out);  // R = groups x group_rows
  p.num_groups = static_cast<int>(out.size(0));
  p.group_rows = group_rows;
  run(x.dtype, p, false, 0, out, ctx);
}

}  // namespace f46::cuda
