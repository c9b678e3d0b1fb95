// CUDA presence check for the dispatch layer; the SM count the launches size their grids by.
#include <cuda_runtime.h>

#include <mutex>

#include "backend.h"
#include "cuda/common/cuda_check.h"
#include "cuda/common/launch_utils.h"

namespace f46::cuda {

bool available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

int sm_count(int device) {
  static std::mutex mu;
  static int counts[64] = {0};
  F46_CHECK(device >= 0 && device < 64, "CUDA device index out of range: ", device);
  std::lock_guard<std::mutex> lock(mu);
  if (counts[device] == 0) {
    F46_CHECK_CUDA(cudaDeviceGetAttribute(&counts[device], cudaDevAttrMultiProcessorCount, device));
  }
  return counts[device];
}

int sm_count_current() {
  int device = 0;
  F46_CHECK_CUDA(cudaGetDevice(&device));
  return sm_count(device);
}

}  // namespace f46::cuda
