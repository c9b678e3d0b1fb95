// CUDA error checks for the GEMM launchers (local to src/cuda/gemm until a shared helper lands).
#pragma once

#include <cuda_runtime.h>

#include "f46/error.h"

// Throws f46::Error naming the failing call when a CUDA runtime call does not return success.
#define F46_GEMM_CUDA_OK(call)                                                            \
  do {                                                                                    \
    const cudaError_t f46_err_ = (call);                                                  \
    F46_CHECK(f46_err_ == cudaSuccess, #call, " failed: ", cudaGetErrorString(f46_err_)); \
  } while (0)
