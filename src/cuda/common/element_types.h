// Element-type tags for the CUDA kernel templates (host + device; no CUDA vector types).
#pragma once

#include <cstdint>

namespace f46::cuda {

struct Bf16 {
  using Storage = uint16_t;
};
struct F16 {
  using Storage = uint16_t;
};
struct F32 {
  using Storage = float;
};

}  // namespace f46::cuda
