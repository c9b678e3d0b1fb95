// Host side of plan (c): its operand requirements and the launch of w4_gemm_kernel (the choice
// of plan: gemm_choice.cpp).
#include <cudaTypedefs.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "cuda/common/cuda_check.h"
#include "cuda/common/launch_utils.h"
#include "f46/error.h"
#include "persistent_launch.cuh"
#include "w4_gemm.h"
#include "w4_gemm_kernel.cuh"

namespace f46::cuda::gemm_detail {
namespace {

std::atomic<uint64_t> g_launches{0};

// cuTensorMapEncodeTiled from the driver through the runtime (the library links no libcuda).
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    F46_CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000,
                                                    cudaEnableDefault, &q));
    F46_CHECK(q == cudaDriverEntryPointSuccess && f != nullptr,
              "plan (c): the driver has no cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// The TMA map of A's BF16 copy (M, K) with row stride lda: boxes of kBT rows x kBK columns
// (128 bytes, swizzled as GMMA's K-major 128-byte layout); rows past M read as zeros.
CUtensorMap token_map(const __nv_bfloat16* a, int64_t m, int64_t k, int64_t lda) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(m)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(lda) * 2};
  const cuuint32_t box[2] = {W4Traits::kBK, W4Traits::kBT};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = tensor_map_encoder()(
      &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<__nv_bfloat16*>(a), dims, strides, box,
      elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  F46_CHECK(r == CUDA_SUCCESS, "plan (c): cuTensorMapEncodeTiled failed with ", int(r), " for A (",
            m, ", ", k, ")");
  return map;
}

}  // namespace

// What the kernel assumes of B and the output: contiguous bytes along K, 16-byte aligned code
// rows, 4-byte aligned scale rows (K % 64 == 0: four scales per k-tile), bf16 output rows in
// 16-byte pieces (N % 8 == 0).
bool w4_supported(const QuantizedOperand& a, const QuantizedOperand& b, int groups,
                  const TensorView& out) {
  const int64_t m = a.codes.size(0), k = a.codes.size(1) * 2, n = b.codes.size(-2);
  const int nb = b.codes.ndim;
  return k > 0 && k % W4Traits::kBK == 0 && k <= INT32_MAX && groups >= 1 &&
         groups <= W4Traits::kMaxGroups && m <= INT32_MAX && n <= INT32_MAX && n % 8 == 0 &&
         a.scope != AmaxScope::kRow && out.dtype == DType::kBFloat16 &&
         b.codes.strides[nb - 1] == 1 && b.scales.strides[nb - 1] == 1 &&
         aligned_to(b.codes.data, 16) && b.codes.strides[nb - 2] % 16 == 0 &&
         (nb == 2 || b.codes.strides[0] % 16 == 0) && aligned_to(b.scales.data, 4) &&
         b.scales.strides[nb - 2] % 4 == 0 && (nb == 2 || b.scales.strides[0] % 4 == 0) &&
         out.strides[1] == 1 && aligned_to(out.data, 16) && out.strides[0] % 8 == 0;
}

namespace {

void launch(const W4Args& p, int max_tiles, cudaStream_t stream) {
  constexpr int kSmem = static_cast<int>(sizeof(W4Smem)) + 1024;  // + alignment slack
  static std::once_flag attr_once;
  launch_persistent(w4_gemm_kernel, p, W4Traits::kThreads, kSmem, max_tiles, attr_once, g_launches,
                    "w4_gemm_kernel", stream);
}

}  // namespace

uint64_t w4_launches() { return g_launches.load(); }

void run_w4_gemm(const QuantizedOperand& a, const __nv_bfloat16* a_bf16, const QuantizedOperand& b,
                 const int32_t* offs, int groups, TensorView& out, cudaStream_t stream) {
  const int64_t m = a.codes.size(0), k = a.codes.size(1) * 2, n = b.codes.size(-2);
  F46_CHECK(aligned_to(a_bf16, 16), "plan (c): the BF16 copy of A must be 16-byte aligned");
  W4Args p;
  p.tokens = token_map(a_bf16, m, k, k);
  set_fused_problem(p, a, b, offs, groups, out);
  p.d = static_cast<__nv_bfloat16*>(out.data);
  const int64_t max_tiles = max_group_tiles<W4Traits::kBT, W4Traits::kBW>(m, n, groups);
  launch(p, static_cast<int>(std::min<int64_t>(max_tiles, INT32_MAX)), stream);
}

}  // namespace f46::cuda::gemm_detail
