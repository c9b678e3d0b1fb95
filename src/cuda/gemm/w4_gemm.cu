// Host side of plan (c): its operand requirements and the launch of w4_gemm_kernel (the choice
// of plan: gemm_choice.cpp).
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
  p.a = reinterpret_cast<const cutlass::bfloat16_t*>(a_bf16);
  p.lda = k;
  set_fused_problem(p, a, b, offs, groups, out);
  p.d = static_cast<__nv_bfloat16*>(out.data);
  const int64_t max_tiles = max_group_tiles<W4Traits::kBT, W4Traits::kBW>(m, n, groups);
  launch(p, static_cast<int>(std::min<int64_t>(max_tiles, INT32_MAX)), stream);
}

}  // namespace f46::cuda::gemm_detail
