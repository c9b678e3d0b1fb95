// CUDA error checks for the host side of the CUDA backend: every failure becomes an f46::Error.
#pragma once

#include <cuda_runtime.h>

#include "f46/error.h"

// F46_CHECK_CUDA(cudaMemsetAsync(...)): throws f46::Error naming the call and the CUDA error.
#define F46_CHECK_CUDA(expr)                                                                     \
  do {                                                                                           \
    const cudaError_t f46_err_ = (expr);                                                         \
    F46_CHECK(f46_err_ == cudaSuccess, "CUDA call ", #expr,                                      \
              " failed: ", cudaGetErrorName(f46_err_), " (", cudaGetErrorString(f46_err_), ")"); \
  } while (0)

// After a kernel launch: reports launch-configuration errors without synchronising.
#define F46_CHECK_LAUNCH(kernel_name)                                                             \
  do {                                                                                            \
    const cudaError_t f46_err_ = cudaGetLastError();                                              \
    F46_CHECK(f46_err_ == cudaSuccess, "kernel ", kernel_name,                                    \
              " launch failed: ", cudaGetErrorName(f46_err_), " (", cudaGetErrorString(f46_err_), \
              ")");                                                                               \
  } while (0)
