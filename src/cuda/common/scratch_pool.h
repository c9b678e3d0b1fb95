// The library's stream-ordered memory pool per CUDA device, for the scratch of a call (GEMM
// operand copies, the 16x16 split form's tile marks).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace f46::cuda {

// The pool of `device`: keeps its memory between calls (release threshold = max) so that a call
// after a synchronisation does not map fresh pages, as the default pool (trimmed at every
// synchronisation) would.
cudaMemPool_t scratch_pool(int device);

// `bytes` of scratch from scratch_pool(device), freed stream-ordered when it goes out of scope.
class PoolBuffer {
 public:
  PoolBuffer(size_t bytes, int device, cudaStream_t stream);
  ~PoolBuffer();
  PoolBuffer(const PoolBuffer&) = delete;
  PoolBuffer& operator=(const PoolBuffer&) = delete;
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace f46::cuda
