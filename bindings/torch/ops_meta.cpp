// Meta kernels: output shapes and dtypes only (fake tensors, torch.compile).
#include <torch/library.h>

#include "ops_impl.h"

TORCH_LIBRARY_IMPL(f46, Meta, m) { F46_TORCH_IMPL_ALL(m, f46::torch_ext::MetaEnv); }
