// Plan (c) of the Hopper GEMM: the M-grouped GEMM (dense = one group) whose weight operand B is
// read as 4-bit codes and E4M3 block scales by the GEMM itself, converted in registers to exact
// BF16 for a register-sourced WGMMA; only A (the tokens) gets plan (a)'s BF16 copy. The global
// scales are applied in the epilogue (alpha[g] = gA * gB, one cast) as in plan (a). Scope:
// tensor/group scopes, no bias, K % 64 == 0, N % 8 == 0, bf16 output; plan (a) covers the rest.
// docs/design.md, "Plan (c)".
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "f46/gemm.h"

namespace f46::cuda::gemm_detail {

// Plan (c) launches so far (tests tell a forced plan (c) from its fall-back to plan (a)).
uint64_t w4_launches();

// Whether plan (c)'s kernel takes these operands (layouts, alignments, K, N, groups, scopes,
// output dtype).
bool w4_supported(const QuantizedOperand& a, const QuantizedOperand& b, int groups,
                  const TensorView& out);

// out = epilogue(A x B[g]^T) with A given as its exact BF16 values a_bf16 (M, K) contiguous
// (16-byte aligned) and B as codes; rows past the last (clamped) offset are written as zeros.
// The operands must be w4_supported and M > 0. No host synchronisation.
void run_w4_gemm(const QuantizedOperand& a, const __nv_bfloat16* a_bf16, const QuantizedOperand& b,
                 const int32_t* offs, int groups, TensorView& out, cudaStream_t stream);

}  // namespace f46::cuda::gemm_detail
