// The elementwise kernels around the BF16 grouped GEMM: NVFP4 -> exact BF16 dequantization of
// the operands, and the N10 epilogue (global scales, per-row amax, bias, output cast).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "f46/quantize.h"
#include "grouped_bf16_gemm.h"

namespace f46::cuda::gemm_detail {

// codes (groups, rows, k/2) and scales (groups, rows, k/16) (byte strides) ->
// out (groups, out_rows, k) bf16, value = e2m1_value(code) * e4m3_to_float(scale), exact in
// BF16 (at most 6 significant bits). Rows rows..out_rows-1 of each group are written as zeros.
struct DequantArgs {
  const uint8_t* codes = nullptr;
  const uint8_t* scales = nullptr;
  int64_t code_group_stride = 0, code_row_stride = 0;
  int64_t scale_group_stride = 0, scale_row_stride = 0;
  int groups = 1;
  int64_t rows = 0;
  int64_t out_rows = 0;
  int64_t k = 0;  // multiple of 16
  __nv_bfloat16* out = nullptr;
};
void launch_dequant_bf16(const DequantArgs& a, cudaStream_t stream);

// y = N10 epilogue of the FP32 GEMM result.
//  kRows: acc (rows, acc_ld); row m belongs to the group g with ends[g-1] <= m < ends[g];
//         rows outside every group are zeros; out (rows, cols) with row stride out_ld.
//  kTokens: acc (groups, rows, cols) contiguous; out (groups, rows, cols) with strides
//         (out_group_stride, out_ld, 1); an empty group's block is zeros.
struct EpilogueArgs {
  GroupMode mode = GroupMode::kRows;
  const float* acc = nullptr;
  int64_t acc_ld = 0;
  void* out = nullptr;
  bool out_bf16 = true;
  int64_t out_ld = 0, out_group_stride = 0;
  int64_t rows = 0, cols = 0;
  int groups = 1;
  const int32_t* ends = nullptr;  // (groups) clamped group ends from the prep kernel
  GroupAlpha scale;  // the amaxes, scopes and bounds of A and B (gemm_scale.h, group_alpha)
  const void* bias = nullptr;  // kRows only: (groups or 1, cols), float32 or bf16
  bool bias_bf16 = false;
  int64_t bias_group_stride = 0;
  // Write only the zeros of rows outside every group (kRows) / of empty groups (kTokens); the
  // rest of out was written by the GEMM's own epilogue (acc unused).
  bool only_invalid = false;
};
void launch_gemm_epilogue(const EpilogueArgs& a, cudaStream_t stream);

}  // namespace f46::cuda::gemm_detail
