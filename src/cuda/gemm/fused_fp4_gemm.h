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

// Which GEMM plan run_rows uses. kAuto: the per-shape rule (fused_fp4_plan_auto).
enum class GemmPlan : int { kAuto = 0, kDequantBf16 = 1, kFusedFp4 = 2 };

// Process-wide choice for tests and benchmarks (internal, not in the public headers). kAuto
// (the default) defers to the environment variable F46_GEMM_PLAN=a|b|auto, read at every call,
// and then to the per-shape rule. A forced plan (b) still falls back to plan (a) for what plan
// (b) does not cover; fused_fp4_launches() counts plan (b) launches so tests can tell.
void set_gemm_plan(GemmPlan plan);
GemmPlan requested_gemm_plan();
uint64_t fused_fp4_launches();

// The per-shape rule for kAuto (measured, bench/RESULTS.md "GEMM plans"): true = plan (b).
bool fused_fp4_plan_auto(int64_t m, int64_t n, int64_t k, int groups);

// Runs out = epilogue(A x B[g]^T) for the M-grouped GEMM (offs null: one group of all rows,
// the dense GEMM) with plan (b) when the requested plan and the operands allow it, and returns
// true; returns false having launched nothing otherwise. Rows past the last (clamped) offset
// are written as zeros. No host synchronisation; the offsets stay on the device.
bool try_fused_fp4_gemm(const QuantizedOperand& a, const QuantizedOperand& b, const int32_t* offs,
                        int groups, TensorView& out, cudaStream_t stream);

}  // namespace f46::cuda::gemm_detail
