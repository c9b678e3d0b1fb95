// CPU kernels of the f46 ops (the f46 CPU reference backend).
#include <torch/library.h>

#include "ops_impl.h"

TORCH_LIBRARY_IMPL(f46, CPU, m) { F46_TORCH_IMPL_ALL(m, f46::torch_ext::CpuEnv); }
