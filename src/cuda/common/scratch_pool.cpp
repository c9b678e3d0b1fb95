#include "cuda/common/scratch_pool.h"

#include <cstdint>
#include <mutex>

#include "cuda/common/cuda_check.h"

namespace f46::cuda {

cudaMemPool_t scratch_pool(int device) {
  static std::mutex mu;
  static cudaMemPool_t pools[64] = {};
  F46_CHECK(device >= 0 && device < 64, "CUDA device index out of range: ", device);
  std::lock_guard<std::mutex> lock(mu);
  if (pools[device] == nullptr) {
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    F46_CHECK_CUDA(cudaMemPoolCreate(&pool, &props));
    uint64_t keep = UINT64_MAX;
    F46_CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    pools[device] = pool;
  }
  return pools[device];
}

PoolBuffer::PoolBuffer(size_t bytes, int device, cudaStream_t stream) : stream_(stream) {
  F46_CHECK_CUDA(cudaMallocFromPoolAsync(&p_, bytes, scratch_pool(device), stream));
}

PoolBuffer::~PoolBuffer() {
  if (p_ != nullptr) cudaFreeAsync(p_, stream_);
}

}  // namespace f46::cuda
