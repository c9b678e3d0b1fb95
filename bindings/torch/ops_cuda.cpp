// CUDA kernels of the f46 ops: run on the device of the first tensor argument, on torch's
// current CUDA stream of that device (no synchronisation added here).
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "ops_impl.h"

namespace f46::torch_ext {

struct CudaEnv {
  static constexpr bool kRun = true;
  // A misplaced CPU `ref` keeps the current device; the f46 device checks then name it.
  explicit CudaEnv(const at::Tensor& ref)
      : guard(ref.is_cuda() ? std::optional<c10::Device>(ref.device()) : std::nullopt),
        stream(c10::cuda::getCurrentCUDAStream(ref.is_cuda() ? ref.device().index() : -1)) {}
  // The workspace tensor lives until the env (the op call) ends; the caching allocator only
  // reuses it for work queued after ours on this stream.
  Context ctx(int64_t workspace_bytes = 0) {
    Context c;
    c.cuda_stream = stream.stream();
    if (workspace_bytes > 0 && stream.device_index() >= 0) {
      workspace = at::empty({workspace_bytes},
                            at::TensorOptions().dtype(at::kByte).device(stream.device()));
      c.workspace = workspace.data_ptr();
      c.workspace_bytes = workspace_bytes;
    }
    return c;
  }
  c10::cuda::OptionalCUDAGuard guard;
  c10::cuda::CUDAStream stream;
  at::Tensor workspace;  // (workspace_bytes) uint8
};

}  // namespace f46::torch_ext

TORCH_LIBRARY_IMPL(f46, CUDA, m) { F46_TORCH_IMPL_ALL(m, f46::torch_ext::CudaEnv); }
