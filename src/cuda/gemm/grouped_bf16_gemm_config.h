// The CUTLASS kernel configuration of the BF16 grouped GEMM (tile heuristics live here) and the
// templated launcher; instantiated once per output type by grouped_bf16_gemm_{f32,bf16}.cu.
#pragma once

#include <cutlass/cutlass.h>
#include <cutlass/gemm/device/gemm_universal_adapter.h>

#include <cute/tensor.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <type_traits>

#include "cuda/common/cuda_check.h"
#include "f46/error.h"
#include "grouped_bf16_gemm.h"
#include "grouped_bf16_gemm_meta.h"

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
// K-major, as WGMMA wants them; D (M, N) row-major = alpha[g] * acc (no source operand).
template <class Traits, class ElementD>
struct Bf16GroupedKernel {
  using ProblemShape = cutlass::gemm::GroupProblemShape<GroupShape>;
  using ElementA = cutlass::bfloat16_t;
  using ElementB = cutlass::bfloat16_t;
  using ElementAcc = float;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlignA = 8;  // 16 bytes, the TMA minimum
  static constexpr int kAlignB = 8;
  static constexpr int kAlignD = 16 / sizeof(ElementD);

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

  static_assert(std::is_same_v<typename Kernel::InternalStrideA, RowStride> &&
                    std::is_same_v<typename Kernel::InternalStrideB, RowStride> &&
                    std::is_same_v<typename Kernel::InternalStrideD, RowStride>,
                "the prep kernel writes (ld, 1, 0) strides for A, B and D");
};

// Launches the grouped kernel over metadata `m` already written on the stream.
template <class ElementD>
void launch_cutlass_grouped(const Meta& m, int groups, const ScheduleOptions& so, void* cutlass_ws,
                            int device, int sm_count, cudaStream_t stream) {
  using K = Bf16GroupedKernel<Bf16GroupedTraits, ElementD>;
  typename K::Gemm::Arguments args;
  args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
  args.problem_shape = {groups, m.shapes, nullptr};  // shapes stay on the device
  args.mainloop = {m.ptr_a, m.stride_a, m.ptr_b, m.stride_b};
  args.epilogue.thread.alpha_ptr_array = m.ptr_alpha;  // per group: alpha[g] (N10)
  args.epilogue.thread.beta = 0.0f;
  args.epilogue.ptr_C = nullptr;
  args.epilogue.dC = m.stride_d;
  args.epilogue.ptr_D = reinterpret_cast<ElementD**>(m.ptr_d);
  args.epilogue.dD = m.stride_d;
  args.hw_info.device_id = device;
  args.hw_info.sm_count = sm_count;
  args.scheduler.max_swizzle_size = so.max_swizzle;
  using Raster = typename K::Kernel::TileScheduler::RasterOrderOptions;
  args.scheduler.raster_order = so.raster_along_n ? Raster::AlongN : Raster::AlongM;

  typename K::Gemm gemm;
  const size_t need = K::Gemm::get_workspace_size(args);
  F46_CHECK(need <= kCutlassWorkspace, "grouped GEMM: CUTLASS workspace of ", need,
            " bytes exceeds the reserved ", kCutlassWorkspace);
  cutlass::Status st = gemm.can_implement(args);
  F46_CHECK(st == cutlass::Status::kSuccess,
            "grouped GEMM: CUTLASS cannot implement: ", cutlassGetStatusString(st));
  st = gemm.initialize(args, cutlass_ws, stream);
  F46_CHECK(st == cutlass::Status::kSuccess,
            "grouped GEMM: CUTLASS initialize failed: ", cutlassGetStatusString(st));
  st = gemm.run(stream);
  F46_CHECK(st == cutlass::Status::kSuccess,
            "grouped GEMM: CUTLASS run failed: ", cutlassGetStatusString(st));
  F46_CHECK_CUDA(cudaGetLastError());
}

}  // namespace f46::cuda::gemm_detail
