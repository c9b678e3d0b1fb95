// Version and build facts of the linked f46 library.
#pragma once

namespace f46 {

// "MAJOR.MINOR.PATCH" of the library (CMake project(VERSION); the package's f46_VERSION).
const char* version();

// True when the library was built with the CUDA backend.
bool built_with_cuda();

// True when the library was built with the CUDA backend and a CUDA device is present.
bool cuda_available();

}  // namespace f46
