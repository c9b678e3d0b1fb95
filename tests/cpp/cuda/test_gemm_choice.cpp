// choose_gemm_route (src/cuda/gemm/gemm_choice.h), a pure host function: runs on the CPU, no
// device needed. The automatic plan rule on the benchmark shapes, then every plan x epilogue x
// plan (b) / plan (c) support class.
#include <gtest/gtest.h>

#include <utility>

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

// The automatic plan (c) rule (bench/RESULTS.md "GEMM plans"): plan (c) on the M-grouped GEMM
// shapes of the bench layers and the dense shapes, where it measured ahead of plan (a), never
// below the measured sizes.
TEST(GemmChoice, PlanCAutoRuleFollowsTheMeasurements) {
  struct Layer {
    int64_t m, d, f;
    int e;
  };
  for (const Layer& l : {Layer{16384, 4096, 14336, 8}, Layer{32768, 7168, 4096, 16},
                         Layer{65536, 2048, 1536, 128}, Layer{32768, 2880, 5760, 32}})
    for (const auto& [k, n] : {std::pair{l.d, l.f}, std::pair{l.f, l.d}})
      EXPECT_TRUE(weight4_plan_auto(l.m, n, k, l.e)) << "E " << l.e << " K " << k << " N " << n;
  EXPECT_TRUE(weight4_plan_auto(8192, 8192, 8192, 1));  // dense
  EXPECT_TRUE(weight4_plan_auto(4096, 2048, 7168, 1));  // the smallest measured dense shape
  EXPECT_FALSE(weight4_plan_auto(300, 256, 512, 4));    // below the measured sizes
  EXPECT_FALSE(weight4_plan_auto(0, 256, 512, 4));      // no rows
}

// Every plan x epilogue x plan (b) and plan (c) support class on three shapes: row scope or bias
// (not fusable) always the epilogue kernel; plan (c) when forced and supported, or automatic
// where supported and its rule says so (Qwen3, 256 experts of 256 rows), never under plans (a)
// or (b); a forced plan (c) outside its scope is plan (a), never plan (b); otherwise the plan (b)
// rule (256 experts of 256 rows: plan (b) when plan (c) does not apply; Mixtral: plan (a)).
TEST(GemmChoice, EveryPlanAndScopeClass) {
  using R = GemmRoute;
  const GemmCase qwen3{GemmPlan::kAuto, true, true, 65536, 1536, 2048, 128};
  const GemmCase many{GemmPlan::kAuto, true, true, 65536, 2048, 7168, 256};
  const GemmCase mixtral{GemmPlan::kAuto, true, true, 16384, 14336, 4096, 8};
  for (const GemmCase& shape : {qwen3, many, mixtral})
    for (GemmPlan plan :
         {GemmPlan::kAuto, GemmPlan::kDequantBf16, GemmPlan::kFusedFp4, GemmPlan::kWeight4})
      for (bool fusable : {false, true})
        for (bool w4 : {false, true})
          for (bool fp4 : {false, true}) {
            GemmCase c = shape;
            c.plan = plan;
            c.epilogue_fusable = fusable;
            c.w4_supported = w4;
            c.fp4_supported = fp4;
            const R got = choose_gemm_route(c);
            const bool auto_c = true;  // every shape here is above plan (c)'s size floor
            const bool auto_b = shape.m == many.m && shape.groups == many.groups;
            R want = R::kDequantSeparate;
            if (fusable) {
              if (plan == GemmPlan::kWeight4) {
                want = w4 ? R::kWeight4 : R::kDequantFused;
              } else if (plan == GemmPlan::kAuto && w4 && auto_c) {
                want = R::kWeight4;
              } else {
                const bool b =
                    fp4 && (plan == GemmPlan::kFusedFp4 || (plan == GemmPlan::kAuto && auto_b));
                want = b ? R::kFusedFp4 : R::kDequantFused;
              }
            }
            EXPECT_EQ(got, want) << "plan " << static_cast<int>(plan) << " fusable " << fusable
                                 << " w4 " << w4 << " fp4 " << fp4 << " groups " << c.groups;
          }
}

}  // namespace
}  // namespace f46::cuda::gemm_detail
