// Host interface of the BF16 x BF16 -> FP32 grouped GEMM (CUTLASS 3.x, Hopper TMA + WGMMA,
// warp-specialized cooperative, ptr-array grouped). Problem shapes, operand pointers and
// strides are built on the device from int32 group offsets by a prep kernel: no host sync.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace f46::cuda::gemm_detail {

// How the groups split the operands (docs/numerics.md N11).
enum class GroupMode : int {
  // Group g owns rows [end[g-1], end[g]) of A (rows, k) and of D (rows, ld_d); B of group g is
  // b + g * b_group_stride, (n, k) with row stride k. Contraction over k.
  kRows = 0,
  // Group g owns tokens [end[g-1], end[g]) of A (n_a, tokens) and B (n_b, tokens) (row stride
  // = tokens); D of group g is d + g * n_a * n_b, (n_a, n_b). Contraction over the tokens.
  kTokens = 1,
};

struct GroupedProblem {
  GroupMode mode = GroupMode::kRows;
  const int32_t* offs = nullptr;  // (groups) int32 cumulative ends, device; null: one group
  int groups = 1;
  int64_t limit = 0;  // rows (kRows) or tokens (kTokens): offsets clamp into [previous, limit]
  int64_t n = 0;      // kRows: columns of D (padded, multiple of 8); kTokens: rows of A
  int64_t k = 0;      // kRows: contraction; kTokens: rows of B
  const __nv_bfloat16* a = nullptr;
  const __nv_bfloat16* b = nullptr;
  int64_t b_group_stride = 0;  // kRows, elements
  float* d = nullptr;
  int32_t* ends = nullptr;  // (groups) out: the clamped group ends the GEMM used (device)
};

// Bytes of device metadata (problem shapes, pointer and stride arrays, ends) for `groups`.
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
