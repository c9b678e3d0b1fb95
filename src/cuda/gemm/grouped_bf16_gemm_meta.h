// Per-group metadata arrays of the grouped GEMM, shared by the prep kernel and the CUTLASS
// launchers. Only CuTe (not the CUTLASS kernel headers) is needed here.
#pragma once

#include <cuda_runtime.h>
#include <cutlass/bfloat16.h>

#include <cstddef>
#include <cute/tensor.hpp>

#include "grouped_bf16_gemm.h"

namespace f46::cuda::gemm_detail {

using GroupShape = cute::Shape<int, int, int>;                        // (M, N, K) of one group
using RowStride = cute::Stride<int64_t, cute::Int<1>, cute::Int<0>>;  // (ld, 1, 0): K-major

inline constexpr size_t kMetaSlot = 16;  // bytes per group per metadata array
inline constexpr int kMetaArrays = 9;
static_assert(sizeof(GroupShape) <= kMetaSlot && sizeof(RowStride) <= kMetaSlot,
              "metadata entries must fit a 16-byte slot");

struct Meta {
  GroupShape* shapes;
  const cutlass::bfloat16_t** ptr_a;
  const cutlass::bfloat16_t** ptr_b;
  void** ptr_d;
  RowStride* stride_a;
  RowStride* stride_b;
  RowStride* stride_d;
  float* alpha;
  const float** ptr_alpha;
};

inline size_t meta_array_bytes(int groups) {
  return (static_cast<size_t>(groups) * kMetaSlot + 255) / 256 * 256;
}

inline Meta carve_meta(void* meta, int groups) {
  char* p = static_cast<char*>(meta);
  const size_t s = meta_array_bytes(groups);
  Meta m;
  m.shapes = reinterpret_cast<GroupShape*>(p);
  m.ptr_a = reinterpret_cast<const cutlass::bfloat16_t**>(p + s);
  m.ptr_b = reinterpret_cast<const cutlass::bfloat16_t**>(p + 2 * s);
  m.ptr_d = reinterpret_cast<void**>(p + 3 * s);
  m.stride_a = reinterpret_cast<RowStride*>(p + 4 * s);
  m.stride_b = reinterpret_cast<RowStride*>(p + 5 * s);
  m.stride_d = reinterpret_cast<RowStride*>(p + 6 * s);
  m.alpha = reinterpret_cast<float*>(p + 7 * s);
  m.ptr_alpha = reinterpret_cast<const float**>(p + 8 * s);
  return m;
}

inline constexpr size_t kCutlassWorkspace = size_t{4} << 20;

// The two CUTLASS instantiations (grouped_bf16_gemm_{f32,bf16}.cu, compiled in parallel):
// launch the grouped kernel over metadata `m` already written on `stream`.
void launch_cutlass_grouped_f32(const Meta& m, int groups, const ScheduleOptions& so, void* ws,
                                int device, int sm_count, cudaStream_t stream);
void launch_cutlass_grouped_bf16(const Meta& m, int groups, const ScheduleOptions& so, void* ws,
                                 int device, int sm_count, cudaStream_t stream);

}  // namespace f46::cuda::gemm_detail
