// f46::cuda::pad_token_groups / unpad_token_groups (N12): launchers of pad_rows_kernel.
// No host synchronisation: the padded size is the static bound padded_rows(M, E, a).
#include "backend.h"
#include "cuda/common/cuda_check.h"
#include "cuda/common/launch_utils.h"
#include "cuda/pad/pad_kernels.cuh"

namespace f46::cuda {

namespace {

template <bool kPad>
void launch_pad(const PadParams& p, cudaStream_t stream) {
  const size_t shared = static_cast<size_t>(p.num_groups) * (sizeof(int64_t) + sizeof(int32_t));
  const int64_t warps = p.dst_rows < 132 * 64 ? (p.dst_rows > 0 ? p.dst_rows : 1) : 132 * 64;
  const dim3 grid(grid_x(warps, kPadWarps));
  switch (access_bytes({p.row_bytes, p.src_stride, p.dst_stride}, {p.src, p.dst})) {
    case 16:
      pad_rows_kernel<uint4, kPad><<<grid, kPadThreads, shared, stream>>>(p);
      break;
    case 8:
      pad_rows_kernel<uint2, kPad><<<grid, kPadThreads, shared, stream>>>(p);
      break;
    case 4:
      pad_rows_kernel<uint32_t, kPad><<<grid, kPadThreads, shared, stream>>>(p);
      break;
    case 2:
      pad_rows_kernel<uint16_t, kPad><<<grid, kPadThreads, shared, stream>>>(p);
      break;
    default:
      pad_rows_kernel<uint8_t, kPad><<<grid, kPadThreads, shared, stream>>>(p);
      break;
  }
  F46_CHECK_LAUNCH(kPad ? "pad_rows_kernel<pad>" : "pad_rows_kernel<unpad>");
}

PadParams rows_params(const TensorView& src, const TensorView& dst, const TensorView& offs,
                      const char* fn) {
  PadParams p;
  const int64_t esize = dtype_size(src.dtype);
  p.src = static_cast<const uint8_t*>(src.data);
  p.src_stride = src.strides[0] * esize;
  p.src_rows = src.size(0);
  p.dst = static_cast<uint8_t*>(dst.data);
  p.dst_stride = dst.strides[0] * esize;
  p.dst_rows = dst.size(0);
  p.row_bytes = src.size(1) * esize;
  p.offsets = offs.ptr<int32_t>();
  p.num_groups = static_cast<int>(offs.size(0));
  F46_CHECK(p.num_groups >= 1 && p.num_groups <= 4096, fn,
            " (CUDA backend limit): group count must be in [1, 4096], got ", p.num_groups);
  return p;
}

template <typename W>
void launch_zero(const PadParams& p, cudaStream_t stream) {
  // Enough CTAs for every row past the end at a word per thread, at most 1024: the end is
  // known on the device only.
  const int64_t words = p.dst_rows * (p.row_bytes / static_cast<int64_t>(sizeof(W)));
  const int64_t ctas = (words + kPadThreads - 1) / kPadThreads;
  const dim3 grid(static_cast<unsigned>(ctas < 1024 ? (ctas > 0 ? ctas : 1) : 1024));
  const size_t shared = static_cast<size_t>(p.num_groups) * sizeof(int32_t);
  zero_rows_past_kernel<W><<<grid, kPadThreads, shared, stream>>>(p);
  F46_CHECK_LAUNCH("zero_rows_past_kernel");
}

}  // namespace

void pad_token_groups(const TensorView& x, const TensorView& offs, int64_t alignment,
                      TensorView& out, TensorView& padded_offs, const Context& ctx) {
  PadParams p = rows_params(x, out, offs, "pad_token_groups");  // x (M, C) -> out (P, C)
  // alignment >= 1: checked by the front (src/grouped.cpp).
  p.alignment = alignment;
  p.unpadded_rows = x.size(0);
  p.padded_offsets_out = padded_offs.ptr<int32_t>();
  if (p.dst_rows == 0 && p.num_groups == 0) return;
  launch_pad<true>(p, stream_of(ctx));
}

void unpad_token_groups(const TensorView& y, const TensorView& offs, const TensorView& padded_offs,
                        TensorView& out, const Context& ctx) {
  PadParams p = rows_params(y, out, offs, "unpad_token_groups");  // y (P, C) -> out (M, C)
  p.unpadded_rows = out.size(0);
  p.padded_offsets = padded_offs.ptr<int32_t>();
  if (p.dst_rows == 0) return;
  launch_pad<false>(p, stream_of(ctx));
}

void zero_rows_past_groups(TensorView& x, const TensorView& offs, const Context& ctx) {
  PadParams p = rows_params(x, x, offs, "zero_rows_past_groups");  // in place: dst = x
  p.src = nullptr;
  if (p.dst_rows == 0 || p.row_bytes == 0) return;
  const cudaStream_t stream = stream_of(ctx);
  switch (access_bytes({p.row_bytes, p.src_stride, p.dst_stride}, {p.src, p.dst})) {
    case 16:
      return launch_zero<uint4>(p, stream);
    case 8:
      return launch_zero<uint2>(p, stream);
    case 4:
      return launch_zero<uint32_t>(p, stream);
    case 2:
      return launch_zero<uint16_t>(p, stream);
    default:
      return launch_zero<uint8_t>(p, stream);
  }
}

}  // namespace f46::cuda
