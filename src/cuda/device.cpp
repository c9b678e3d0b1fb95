// CUDA presence check for the dispatch layer.
#include <cuda_runtime.h>

#include "backend.h"

namespace f46::cuda {

bool available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

}  // namespace f46::cuda
