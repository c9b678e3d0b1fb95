// Which kernels run an M-grouped (or dense) CUDA GEMM: the one pure host function that chooses
// (no CUDA runtime; tests/cpp/cuda/test_gemm_choice.cpp covers every plan and scope class on the
// CPU). docs/design.md, "GEMM plans on Hopper", says why. Every route gives the same bits (N10).
#pragma once

#include <cstdint>

#include "f46/tensor.h"

namespace f46::cuda::gemm_detail {

enum class GemmRoute : uint8_t {
  kFusedFp4,         // plan (b): one kernel reads the 4-bit operands, epilogue inside
  kWeight4,          // plan (c): A dequantized to BF16, the GEMM reads B's codes, epilogue inside
  kDequantFused,     // plan (a), the CUTLASS epilogue writes out (alpha per group)
  kDequantSeparate,  // plan (a), FP32 product, then gemm_epilogue_kernel (row scope, bias)
};

// What the choice depends on: the requested plan (Context::gemm.plan); whether the epilogue can
// run inside the GEMM (no row scope, no bias, 16-byte output rows); whether plan (b) takes the
// operands (fused_fp4_supported); whether plan (c) does (w4_supported); the problem (M rows, N,
// K, groups).
struct GemmCase {
  GemmPlan plan = GemmPlan::kAuto;
  bool epilogue_fusable = false;
  bool fp4_supported = false;
  int64_t m = 0, n = 0, k = 0;
  int groups = 1;
  bool w4_supported = false;
};

// The per-shape rule for kAuto (measured, bench/RESULTS.md "GEMM plans"): true = plan (b).
bool fused_fp4_plan_auto(int64_t m, int64_t n, int64_t k, int groups);

// The automatic rule for plan (c) (where plan (c) supports the operands): many groups per row.
bool weight4_plan_auto(int64_t m, int64_t n, int64_t k, int groups);

GemmRoute choose_gemm_route(const GemmCase& c);

}  // namespace f46::cuda::gemm_detail
