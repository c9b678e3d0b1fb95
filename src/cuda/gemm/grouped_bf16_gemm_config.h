// The one CUTLASS kernel configuration of the BF16 grouped GEMM (tile heuristics live here).
// Included only by grouped_bf16_gemm.cu, which instantiates it.
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>

namespace f46::cuda::gemm_detail {

// 128x256x64 cooperative (two consumer warpgroups split the 128 rows), cluster 2x1 (the two
// CTAs of a cluster share the B tile through TMA multicast).
struct Bf16GroupedTraits {
  using TileShape = cute::Shape<cute::_128, cute::_256, cute::_64>;
  using ClusterShape = cute::Shape<cute::_2, cute::_1, cute::_1>;
  using KernelSchedule = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative;
  using EpilogueSchedule = cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative;
};

// A (M, K) row-major and B (N, K) row-major (ColumnMajor (K, N) in CUTLASS terms): both
// K-major, as WGMMA wants them; D (M, N) FP32 row-major; D = acc (alpha 1, no source).
template <class Traits>
struct Bf16GroupedKernel {
  using ProblemShape = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;
  using ElementA = cutlass::bfloat16_t;
  using ElementB = cutlass::bfloat16_t;
  using ElementD = float;
  using ElementAcc = float;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlignA = 8;  // 16 bytes, the TMA minimum
  static constexpr int kAlignB = 8;
  static constexpr int kAlignD = 4;

  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, typename Traits::TileShape,
      typename Traits::ClusterShape, cutlass::epilogue::collective::EpilogueTileAuto, ElementAcc,
      ElementAcc, void, LayoutD*, kAlignD, ElementD, LayoutD*, kAlignD,
      typename Traits::EpilogueSchedule,
      cutlass::epilogue::fusion::LinearCombination<ElementD, ElementAcc, void,
                                                   ElementAcc>>::CollectiveOp;

  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, LayoutA*, kAlignA, ElementB,
      LayoutB*, kAlignB, ElementAcc, typename Traits::TileShape, typename Traits::ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      typename Traits::KernelSchedule>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, Mainloop, Epilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  using StrideA = typename Kernel::InternalStrideA;  // (M, K, L): (lda, 1, 0)
  using StrideB = typename Kernel::InternalStrideB;  // (N, K, L): (ldb, 1, 0)
  using StrideD = typename Kernel::InternalStrideD;  // (M, N, L): (ldd, 1, 0)
  using Shape = typename ProblemShape::UnderlyingProblemShape;
};

}  // namespace f46::cuda::gemm_detail
