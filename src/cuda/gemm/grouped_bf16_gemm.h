// Host interface of the BF16 x BF16 grouped GEMM (CUTLASS 3.x, Hopper TMA + WGMMA,
// warp-specialized cooperative, ptr-array grouped) with FP32 accumulation. Problem shapes,
// operand pointers, strides and per-group alphas are built on the device from int32 group
// offsets by a prep kernel: no host sync, graph capturable.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "f46/quantize.h"

namespace f46::cuda::gemm_detail {

// How the groups split the operands (docs/numerics.md N11).
enum class GroupMode : int {
  // Group g owns rows [end[g-1], end[g]) of A (rows, k) and of D (rows, ld_d); B of group g is
  // b + g * b_group_stride, (n, k) with row stride k. Contraction over k.
  kRows = 0,
  // Group g owns tokens [end[g-1], end[g]) of A (n, tokens) and B (k, tokens) (row stride
  // = tokens); D of group g is d + g * n * k, (n, k). Contraction over the tokens.
  kTokens = 1,
};

// The global scales folded into the GEMM epilogue as alpha[g] = gA[g] * gB[g] (N10, tensor or
// group scope). Unset (amax_a null): alpha = 1, the raw FP32 product.
struct GroupAlpha {
  const float* amax_a = nullptr;
  AmaxScope scope_a = AmaxScope::kTensor;
  float bound_a = 256.0f;
  const float* amax_b = nullptr;
  AmaxScope scope_b = AmaxScope::kTensor;
  float bound_b = 256.0f;
};

// Scheduling knobs of the CUTLASS group tile scheduler (runtime, no recompilation).
struct ScheduleOptions {
  int max_swizzle = 1;
  bool raster_along_n = false;
};

// The scheduler knobs of a call's tuning (Context::gemm): max_swizzle 0 means the default;
// other values must be 1, 2, 4 or 8.
ScheduleOptions schedule_options(const GemmTuning& t);

struct GroupedProblem {
  GroupMode mode = GroupMode::kRows;
  const int32_t* offs = nullptr;  // (groups) int32 cumulative ends, device; null: one group
  int groups = 1;
  int64_t limit = 0;  // rows (kRows) or tokens (kTokens): offsets clamp into [previous, limit]
  int64_t n = 0;      // kRows: columns of D (= rows of each B); kTokens: rows of A
  int64_t k = 0;      // kRows: contraction; kTokens: rows of B
  const __nv_bfloat16* a = nullptr;
  const __nv_bfloat16* b = nullptr;
  int64_t b_group_stride = 0;  // kRows, elements
  void* d = nullptr;           // float or bf16 (d_bf16)
  bool d_bf16 = false;
  int64_t ld_d = 0;  // kRows: row stride of D (multiple of 8 elements)
  GroupAlpha alpha;
  int32_t* ends = nullptr;  // (groups) out: the clamped group ends the GEMM used (device)
  ScheduleOptions schedule;
};

// Bytes of device metadata (problem shapes, pointer/stride arrays, alphas) for `groups`.
size_t grouped_meta_bytes(int groups);
// Upper bound of the CUTLASS kernel workspace (checked at run time).
size_t grouped_cutlass_workspace_bytes();

// Builds the per-group metadata on the device and runs the grouped GEMM on `stream`.
// `meta` holds grouped_meta_bytes(groups), `cutlass_ws` grouped_cutlass_workspace_bytes();
// both 256-byte aligned.
void run_grouped_bf16_gemm(const GroupedProblem& p, void* meta, void* cutlass_ws,
                           cudaStream_t stream);
// Only the prep kernel: writes p.ends (and the metadata) without running the GEMM, for calls
// with nothing to contract.
void run_group_ends(const GroupedProblem& p, void* meta, cudaStream_t stream);

}  // namespace f46::cuda::gemm_detail
