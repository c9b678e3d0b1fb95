// Built only when the library is configured without CUDA: the CUDA backend reports that it
// is absent instead of being silently missing.
#include "backend.h"

namespace f46::cuda {

bool available() { return false; }

namespace {
[[noreturn]] void absent(const char* fn) {
  F46_CHECK(false, fn, ": tensor is on CUDA but f46 was built without CUDA (no nvcc found)");
  __builtin_unreachable();
}
}  // namespace

void quantize(const TensorView&, const GlobalAmax&, const QuantizeConfig&, QuantizedOutputs&,
              const Context&) { absent("quantize"); }
void quantize_experts(const TensorView&, const TensorView&, const QuantizeConfig&,
                      QuantizedOutputs&, const Context&) { absent("quantize_experts"); }
void dequantize(const TensorView&, const TensorView&, const GlobalAmax&, float, TensorView&,
                const Context&) { absent("dequantize"); }
void amax(const TensorView&, const AmaxConfig&, TensorView&, const Context&) { absent("amax"); }
void amax_quantize_experts(const TensorView&, TensorView&, const QuantizeConfig&,
                           QuantizedOutputs&, const Context&) {
  absent("amax_quantize_experts");
}
void amax_row_groups(const TensorView&, int64_t, TensorView&, const Context&) {
  absent("amax_row_groups");
}
void gemm(const QuantizedOperand&, const QuantizedOperand&, const TensorView&, TensorView&,
          const Context&) { absent("gemm"); }
void grouped_gemm_m(const QuantizedOperand&, const QuantizedOperand&, const TensorView&,
                    const TensorView&, TensorView&, const Context&) { absent("grouped_gemm_m"); }
void grouped_gemm_k(const QuantizedOperand&, const QuantizedOperand&, const TensorView&,
                    TensorView&, const Context&) { absent("grouped_gemm_k"); }
void grouped_gemm_m_pair(const QuantizedOperand&, const QuantizedOperand&, const QuantizedOperand&,
                         const TensorView&, TensorView&, TensorView&, const Context&) {
  absent("grouped_gemm_m_pair");
}
void grouped_gemm_k_pair(const QuantizedOperand&, const QuantizedOperand&, const QuantizedOperand&,
                         const TensorView&, TensorView&, TensorView&, const Context&) {
  absent("grouped_gemm_k_pair");
}
void pad_token_groups(const TensorView&, const TensorView&, int64_t, TensorView&, TensorView&,
                      const Context&) { absent("pad_token_groups"); }
void unpad_token_groups(const TensorView&, const TensorView&, const TensorView&, TensorView&,
                        const Context&) { absent("unpad_token_groups"); }
void zero_rows_past_groups(TensorView&, const TensorView&, const Context&) {
  absent("zero_rows_past_groups");
}
void swiglu(const TensorView&, const TensorView&, TensorView&, const TensorView&, TensorView&,
            const Context&) { absent("swiglu"); }
void swiglu_backward(const TensorView&, const TensorView&, const TensorView&, TensorView&,
                     TensorView&, const TensorView&, TensorView&, TensorView&, const Context&) {
  absent("swiglu_backward");
}

}  // namespace f46::cuda
