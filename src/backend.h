// Backend entry points. The public functions (src/*.cpp) validate every argument, then call
// the backend of the tensors' device with the same arguments; backends may assume valid input.
#pragma once

#include "f46/f46.h"

#define F46_BACKEND_FUNCTIONS                                                                  \
  void quantize(const TensorView& x, const GlobalAmax& amax, const QuantizeConfig& cfg,         \
                QuantizedOutputs& out, const Context& ctx);                                    \
  void dequantize(const TensorView& codes, const TensorView& scales, const GlobalAmax& amax,    \
                  float scale_bound, TensorView& out, const Context& ctx);                     \
  void amax(const TensorView& x, const AmaxConfig& cfg, TensorView& out, const Context& ctx);   \
  void gemm(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& bias,       \
            TensorView& out, const Context& ctx);                                              \
  void grouped_gemm_m(const QuantizedOperand& a, const QuantizedOperand& b,                     \
                      const TensorView& offs, const TensorView& bias, TensorView& out,          \
                      const Context& ctx);                                                     \
  void grouped_gemm_k(const QuantizedOperand& a, const QuantizedOperand& b,                     \
                      const TensorView& offs, TensorView& out, const Context& ctx);             \
  void pad_token_groups(const TensorView& x, const TensorView& offs, int64_t alignment,         \
                        TensorView& out, TensorView& padded_offs, const Context& ctx);          \
  void unpad_token_groups(const TensorView& y, const TensorView& offs,                         \
                          const TensorView& padded_offs, TensorView& out, const Context& ctx);  \
  void zero_rows_past_groups(TensorView& x, const TensorView& offs, const Context& ctx);     \
  void swiglu(const TensorView& a, const TensorView& b, TensorView& out, const TensorView& offs, \
              TensorView& amax, const Context& ctx);                                           \
  void swiglu_backward(const TensorView& dout, const TensorView& a, const TensorView& b,       \
                       TensorView& da, TensorView& db, const TensorView& offs,                 \
                       TensorView& amax_da, TensorView& amax_db, const Context& ctx);

namespace f46::cpu {
F46_BACKEND_FUNCTIONS
}  // namespace f46::cpu

namespace f46::cuda {
// True when the library was built with CUDA and a device is present.
bool available();
F46_BACKEND_FUNCTIONS
// quantize_experts (validated, E >= 1): one launch over the experts where the bf16 16x16
// weight kernel applies, else one quantize per expert.
void quantize_experts(const TensorView& w, const TensorView& amax, const QuantizeConfig& cfg,
                      QuantizedOutputs& out, const Context& ctx);
// amax_quantize_experts (validated, E >= 1): the amaxes and the 16x16 weights in one pass where
// the bf16 16x16 weights kernel applies, else amax_row_groups and quantize_experts.
void amax_quantize_experts(const TensorView& w, TensorView& amax, const QuantizeConfig& cfg,
                           QuantizedOutputs& out, const Context& ctx);
// amax with group scope over x (R, C) in groups of group_rows rows (out: R / group_rows groups;
// no offsets tensor): the experts' amaxes of a packed (E, N, K) weight viewed as (E*N, K).
void amax_row_groups(const TensorView& x, int64_t group_rows, TensorView& out,
                     const Context& ctx);
// The pairs (validated): two GEMMs sharing one operand's BF16 copy.
void grouped_gemm_m_pair(const QuantizedOperand& a, const QuantizedOperand& b1,
                         const QuantizedOperand& b2, const TensorView& offs, TensorView& out1,
                         TensorView& out2, const Context& ctx);
void grouped_gemm_k_pair(const QuantizedOperand& a1, const QuantizedOperand& a2,
                         const QuantizedOperand& b, const TensorView& offs, TensorView& out1,
                         TensorView& out2, const Context& ctx);
}  // namespace f46::cuda
