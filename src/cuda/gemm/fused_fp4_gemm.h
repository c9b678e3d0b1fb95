// Plan (b) of the Hopper GEMM: one fused kernel that reads the 4-bit codes and E4M3 block scales
// of both operands, dequantizes them in shared memory to exact BF16 (N10) and feeds WGMMA with
// FP32 accumulation; the global scales are applied in the FP32 epilogue (alpha[g] = gA * gB,
// one cast), exactly as plan (a)'s fused CUTLASS epilogue. Scope: the M-grouped GEMM (dense =
// one group) with tensor/group scopes, no bias, K % 64 == 0. Plan (a) (dequantize to BF16
// scratch + CUTLASS grouped GEMM) covers everything else. docs/design.md has the dispatch rule.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "f46/gemm.h"

namespace f46::cuda::gemm_detail {

// Plan (b) launches so far (tests tell a forced plan (b) from its fall-back to plan (a)).
uint64_t fused_fp4_launches();

// Whether plan (b)'s kernel takes these operands (layouts, alignments, K % 64, groups, scopes).
bool fused_fp4_supported(const QuantizedOperand& a, const QuantizedOperand& b, int groups,
                         const TensorView& out);

// Runs out = epilogue(A x B[g]^T) for the M-grouped GEMM (offs null: one group of all rows,
// the dense GEMM) with plan (b); the operands must be fused_fp4_supported. Rows past the last
// (clamped) offset are written as zeros. No host synchronisation; the offsets stay on the
// device.
void run_fused_fp4_gemm(const QuantizedOperand& a, const QuantizedOperand& b, const int32_t* offs,
                        int groups, TensorView& out, cudaStream_t stream);

}  // namespace f46::cuda::gemm_detail
