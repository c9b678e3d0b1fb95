// NVFP4 x NVFP4 GEMMs: dense, M-grouped (forward, dgrad) and K-grouped (wgrad). Semantics:
// docs/numerics.md N10-N11. All GEMMs contract A (rows, K) with B (cols, K) over K.
#pragma once

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

}  // namespace f46
