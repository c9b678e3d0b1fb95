// NVFP4 x NVFP4 GEMMs: dense, M-grouped (forward, dgrad) and K-grouped (wgrad). Semantics:
// docs/numerics.md N10-N11. All GEMMs contract A (rows, K) with B (cols, K) over K.
#pragma once

#include <cstdint>

#include "f46/quantize.h"
#include "f46/tensor.h"

namespace f46 {

// One quantized GEMM operand: codes (rows, K/2) uint8 and scales (rows, K/16) uint8 (for B of
// grouped_gemm_m: (E, N, K/2) and (E, N, K/16)), with its global amax.
//   amax: float32; (1) kTensor; (rows) kRow (A only); (E) kGroup (group offsets come from the
//   grouped call; in the dense gemm kGroup is not allowed).
struct QuantizedOperand {
  TensorView codes;
  TensorView scales;
  TensorView amax;
  AmaxScope scope = AmaxScope::kTensor;
  float scale_bound = 256.0f;
};

// out (M, N) bf16 or fp32 = gA * gB * A x B^T (+ bias). a: (M, K); b: (N, K); bias: (N)
// float32/bf16 or undefined.
void gemm(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& bias,
          TensorView& out, const Context& ctx = {});

// M-grouped: a (M, K) rows split by offs (E) int32 cumulative ends; b (E, N, K);
// out (M, N); bias (E, N) or undefined. Rows past offs[E-1] are written as zeros.
// a.scope: kTensor, kRow or kGroup (E); b.scope: kTensor or kGroup (E, one per expert).
void grouped_gemm_m(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& offs,
                    const TensorView& bias, TensorView& out, const Context& ctx = {});

// K-grouped (wgrad): a (N, T) and b (K, T), both quantized along the token dim T (the
// columnwise outputs of quantize); offs (E) int32 cumulative token ends, each a multiple of 16.
// out (E, N, K): out[g] = gA[g] * gB[g] * sum over tokens t of group g of a[:, t] b[:, t].
// scopes: kTensor or kGroup (E). An empty group gives zeros.
void grouped_gemm_k(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& offs,
                    TensorView& out, const Context& ctx = {});

// Two M-grouped GEMMs of one A (an MoE layer's gate and up projections): out1 and out2 are
// grouped_gemm_m(a, b1, offs, {}, out1) and grouped_gemm_m(a, b2, offs, {}, out2), bitwise; b1
// and b2 of one shape. On CUDA, A's BF16 operand copy (plans (a) and (c)) is made once.
void grouped_gemm_m_pair(const QuantizedOperand& a, const QuantizedOperand& b1,
                         const QuantizedOperand& b2, const TensorView& offs, TensorView& out1,
                         TensorView& out2, const Context& ctx = {});

// Two K-grouped GEMMs of one B (the wgrads of gate and up, both against X): out1 and out2 are
// grouped_gemm_k(a1, b, offs, out1) and grouped_gemm_k(a2, b, offs, out2), bitwise; a1 and a2
// of one shape. On CUDA, B's BF16 operand copy is made once.
void grouped_gemm_k_pair(const QuantizedOperand& a1, const QuantizedOperand& a2,
                         const QuantizedOperand& b, const TensorView& offs, TensorView& out1,
                         TensorView& out2, const Context& ctx = {});

// ---- Device scratch of the CUDA backend ------------------------------------------------------
// Bytes of device workspace one CUDA GEMM call uses (dequantized BF16 operands, the FP32
// product, per-group metadata and the CUTLASS workspace). Pass at least this much, 256-byte
// aligned, as Context::workspace to avoid a stream-ordered allocation per call; the CPU
// backend needs none. Sizes as in the calls above (n: columns of out; e: groups); a pair call
// needs what one of its two GEMMs needs.
namespace detail {
inline int64_t gemm_ws_round(int64_t bytes) { return (bytes + 255) / 256 * 256; }
inline int64_t gemm_ws_bytes(int64_t a_elems, int64_t b_elems, int64_t d_elems, int64_t e) {
  return gemm_ws_round(a_elems * 2) + gemm_ws_round(b_elems * 2) + gemm_ws_round(d_elems * 4) +
         10 * gemm_ws_round(e * 16) + (int64_t{4} << 20);
}
inline int64_t gemm_ws_pad8(int64_t n) { return (n + 7) / 8 * 8; }
}  // namespace detail
inline int64_t grouped_gemm_m_workspace_bytes(int64_t m, int64_t n, int64_t k, int64_t e) {
  return detail::gemm_ws_bytes(m * k, e * detail::gemm_ws_pad8(n) * k, m * detail::gemm_ws_pad8(n),
                               e);
}
inline int64_t gemm_workspace_bytes(int64_t m, int64_t n, int64_t k) {
  return grouped_gemm_m_workspace_bytes(m, n, k, 1);
}
// grouped_gemm_k: a (n, tokens), b (k, tokens), out (e, n, k).
inline int64_t grouped_gemm_k_workspace_bytes(int64_t n, int64_t k, int64_t tokens, int64_t e) {
  return detail::gemm_ws_bytes(n * tokens, k * tokens, e * n * k, e);
}

}  // namespace f46
