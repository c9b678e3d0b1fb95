#include "f46/version.h"

#include "backend.h"

namespace f46 {

// F46_VERSION_STRING is set on this file alone by CMakeLists.txt (project(VERSION)).
const char* version() { return F46_VERSION_STRING; }

bool built_with_cuda() {
#if defined(F46_WITH_CUDA)
  return true;
#else
  return false;
#endif
}

bool cuda_available() { return cuda::available(); }

}  // namespace f46
