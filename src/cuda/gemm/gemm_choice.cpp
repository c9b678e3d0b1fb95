// choose_gemm_route: the kernels of an M-grouped CUDA GEMM (gemm_choice.h).
#include "cuda/gemm/gemm_choice.h"

namespace f46::cuda::gemm_detail {

// Plan (a) pays, on top of its BF16 GEMM, a dequantization pass over both operands (~2.6 bytes
// per operand element: 4-bit codes and scales read, BF16 written): per FLOP a cost proportional
// to (M*K + E*N*K) / (2*M*N*K) = (1/N + E/M) / 2. Plan (b) pays none but its mainloop runs at
// ~0.5x BF16. So the rule is a threshold on x = 1/N + 1/(average rows per group) (K cancels).
// Measured (bench/RESULTS.md "GEMM plans", H100 2026-12-07): plan (a) is ahead on every
// benchmark shape, its time over plan (b)'s rising with x (Mixtral x = 5.6e-4: 0.58, gpt-oss
// 1.2e-3: 0.79, Qwen3 2.6e-3: 0.95; the Qwen3 layer 2-3 % faster with plan (a) in three runs).
// The threshold is that trend's crossover, extrapolated past the largest measured x.
// Only problems at least as large as the measured ones (M*N*K >= 2^33) are moved to plan (b):
// below that nothing was measured, and plan (a) remains the default. Both plans give the same
// bits (tests/cpp/cuda/test_cuda_gemm_fused.cpp), so the choice never changes a result.
constexpr double kFusedMinX = 3.1e-3;
constexpr double kFusedMinWork = 8589934592.0;  // 2^33 multiply-adds

bool fused_fp4_plan_auto(int64_t m, int64_t n, int64_t k, int groups) {
  if (m <= 0 || n <= 0 || k <= 0) return false;
  const double x =
      1.0 / static_cast<double>(n) + static_cast<double>(groups) / static_cast<double>(m);
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return x > kFusedMinX && work >= kFusedMinWork;
}

// Plan (c) drops plan (a)'s copy of the weight (E*N*K elements) for a mainloop of its own. Since
// its per-warpgroup epilogue (4994e05) it measured ahead of plan (a) on every benchmark shape
// (bench/RESULTS.md "GEMM plans", H100 2026-12-07, b480b7a: 0.84-0.92x BF16 against 0.61-0.90x,
// the four dense shapes included), so it is taken wherever it applies, with plan (b)'s size
// floor (nothing smaller was measured). Plan (c) also ran ahead of plan (b) on every measured
// shape, so it takes precedence where both apply. Same bits as plan (a)
// (tests/cpp/cuda/test_cuda_gemm_w4.cpp).
bool weight4_plan_auto(int64_t m, int64_t n, int64_t k, int groups) {
  if (m <= 0 || n <= 0 || k <= 0 || groups <= 0) return false;
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return work >= kFusedMinWork;
}

GemmRoute choose_gemm_route(const GemmCase& c) {
  if (!c.epilogue_fusable) return GemmRoute::kDequantSeparate;
  // A forced plan (c) falls back to plan (a) outside its scope.
  if (c.plan == GemmPlan::kWeight4)
    return c.w4_supported ? GemmRoute::kWeight4 : GemmRoute::kDequantFused;
  if (c.plan == GemmPlan::kAuto && c.w4_supported && weight4_plan_auto(c.m, c.n, c.k, c.groups))
    return GemmRoute::kWeight4;
  // A forced plan (b) falls back to plan (a) for what plan (b) does not cover.
  const bool fp4 = c.plan != GemmPlan::kDequantBf16 && c.fp4_supported &&
                   (c.plan == GemmPlan::kFusedFp4 || fused_fp4_plan_auto(c.m, c.n, c.k, c.groups));
  return fp4 ? GemmRoute::kFusedFp4 : GemmRoute::kDequantFused;
}

}  // namespace f46::cuda::gemm_detail
