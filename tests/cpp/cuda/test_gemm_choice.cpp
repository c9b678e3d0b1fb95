// choose_gemm_route (src/cuda/gemm/gemm_choice.h), a pure host function: runs on the CPU, no
// device needed. The automatic plan rule on the benchmark shapes, then every plan x epilogue x
// plan (b) support class.
#include <gtest/gtest.h>

#include "cuda/gemm/gemm_choice.h"

namespace f46::cuda::gemm_detail {
namespace {

// The automatic rule (host only, no device needed) on the benchmark shapes of bench/RESULTS.md
// "GEMM plans": plan (a) wherever it measured faster (every benchmark shape, Qwen3's many
// small experts included); plan (b) only past the extrapolated crossover (x > 3.1e-3), never
// for problems smaller than the measured ones.
TEST(GemmChoice, AutoRuleFollowsTheMeasurements) {
  EXPECT_FALSE(fused_fp4_plan_auto(65536, 1536, 2048, 128));  // Qwen3 (x 2.6e-3)
  EXPECT_FALSE(fused_fp4_plan_auto(65536, 2048, 3072, 128));  // Qwen3 dgrad of gate/up
  EXPECT_FALSE(fused_fp4_plan_auto(32768, 5760, 2880, 32));   // gpt-oss
  EXPECT_FALSE(fused_fp4_plan_auto(32768, 4096, 7168, 16));   // DSv3
  EXPECT_FALSE(fused_fp4_plan_auto(16384, 14336, 4096, 8));   // Mixtral
  EXPECT_FALSE(fused_fp4_plan_auto(8192, 8192, 8192, 1));     // dense
  EXPECT_FALSE(fused_fp4_plan_auto(4096, 2048, 7168, 1));     // dense, small
  EXPECT_FALSE(fused_fp4_plan_auto(300, 256, 512, 4));        // below the measured sizes
  EXPECT_TRUE(fused_fp4_plan_auto(65536, 2048, 7168, 256));   // 256 experts of 256 rows (x 4.4e-3)
}

TEST(GemmChoice, EveryPlanAndScopeClass) {
  using R = GemmRoute;
  // 256 experts of 256 rows: plan (b) under the automatic rule; Mixtral: plan (a).
  const GemmCase many{GemmPlan::kAuto, true, true, 65536, 2048, 7168, 256};
  const GemmCase mixtral{GemmPlan::kAuto, true, true, 16384, 14336, 4096, 8};
  for (const GemmCase& shape : {many, mixtral}) {
    const bool auto_b = shape.m == many.m;
    for (GemmPlan plan : {GemmPlan::kAuto, GemmPlan::kDequantBf16, GemmPlan::kFusedFp4})
      for (bool fusable : {false, true})
        for (bool supported : {false, true}) {
          GemmCase c = shape;
          c.plan = plan;
          c.epilogue_fusable = fusable;
          c.fp4_supported = supported;
          R want = R::kDequantSeparate;  // row scope or bias: the epilogue kernel
          if (fusable) {
            const bool b =
                supported && (plan == GemmPlan::kFusedFp4 || (plan == GemmPlan::kAuto && auto_b));
            want = b ? R::kFusedFp4 : R::kDequantFused;
          }
          EXPECT_EQ(choose_gemm_route(c), want)
              << "plan " << static_cast<int>(plan) << " fusable " << fusable << " supported "
              << supported << " m " << c.m;
        }
  }
}

// Plan (c) runs only when asked for and supported (never under kAuto until it is measured); a
// forced plan (c) outside its scope is plan (a), never plan (b), and the epilogue rule comes first.
TEST(GemmChoice, PlanCOnlyWhenForcedAndSupported) {
  using R = GemmRoute;
  for (GemmPlan plan :
       {GemmPlan::kAuto, GemmPlan::kDequantBf16, GemmPlan::kFusedFp4, GemmPlan::kWeight4})
    for (bool fusable : {false, true})
      for (bool w4 : {false, true})
        for (bool fp4 : {false, true}) {
          GemmCase c{plan, fusable, fp4, 65536, 2048, 7168, 256, w4};
          const R got = choose_gemm_route(c);
          if (!fusable) {
            EXPECT_EQ(got, R::kDequantSeparate);
          } else if (plan == GemmPlan::kWeight4) {
            EXPECT_EQ(got, w4 ? R::kWeight4 : R::kDequantFused);
          } else {
            EXPECT_NE(got, R::kWeight4) << "plan " << static_cast<int>(plan);
          }
        }
}

}  // namespace
}  // namespace f46::cuda::gemm_detail
