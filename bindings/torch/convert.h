// The torch <-> f46 boundary: at::Tensor -> f46::TensorView, option strings -> f46 enums, and
// f46::Error -> c10::Error (a Python RuntimeError carrying the f46 message). No numerics here.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <utility>

#include "f46/f46.h"

namespace f46::torch_ext {

// A view of `t` (dtype, sizes, strides in elements, device). `name` is the argument name
// used in error messages. An undefined tensor gives an undefined view.
TensorView to_view(const at::Tensor& t, const char* name);
TensorView to_view(const std::optional<at::Tensor>& t, const char* name);

AmaxScope parse_scope(const std::string& s, const char* op, const char* name);
Rule parse_rule(const std::string& s, const char* op);
Block parse_block(int64_t block, const char* op);
// The GEMM ops' tuning arguments: plan 'auto' | 'a' (dequantize + BF16 GEMM) | 'b' (fused 4-bit
// kernel); max_swizzle 0 (default) | 1 | 2 | 4 | 8; raster 'm' | 'n'.
GemmTuning parse_tuning(const std::string& plan, int64_t max_swizzle, const std::string& raster,
                        const char* op);

// Runs `fn`, turning an f46::Error into a c10::Error with the same message.
template <typename F>
void call_f46(F&& fn) {
  try {
    std::forward<F>(fn)();
  } catch (const Error& e) {
    TORCH_CHECK(false, e.what());
  }
}

}  // namespace f46::torch_ext
