// Host side of plan (b): its operand requirements and the launch of fused_fp4_gemm_kernel (the
// choice of plan: gemm_choice.cpp).
#include <atomic>
#include <mutex>

#include "cuda/common/cuda_check.h"
#include "cuda/common/launch_utils.h"
#include "f46/error.h"
#include "fused_fp4_gemm.h"
#include "fused_fp4_gemm_kernel.cuh"
#include "persistent_launch.cuh"

namespace f46::cuda::gemm_detail {
namespace {

std::atomic<uint64_t> g_launches{0};

}  // namespace

// What the kernel assumes of the operands: contiguous bytes along K, 16-byte aligned code rows,
// 2-byte aligned scale pairs, output rows of 16-byte multiples (vector zero fill).
bool fused_fp4_supported(const QuantizedOperand& a, const QuantizedOperand& b, int groups,
                         const TensorView& out) {
  const int64_t m = a.codes.size(0), k = a.codes.size(1) * 2, n = b.codes.size(-2);
  const int nb = b.codes.ndim;
  const int64_t es = dtype_size(out.dtype);
  return k > 0 && k % FusedTraits::kBK == 0 && groups >= 1 && groups <= FusedTraits::kMaxGroups &&
         m <= INT32_MAX && n <= INT32_MAX && a.scope != AmaxScope::kRow &&
         a.codes.strides[1] == 1 && a.scales.strides[1] == 1 && b.codes.strides[nb - 1] == 1 &&
         b.scales.strides[nb - 1] == 1 && aligned_to(a.codes.data, 16) &&
         a.codes.strides[0] % 16 == 0 && aligned_to(b.codes.data, 16) &&
         b.codes.strides[nb - 2] % 16 == 0 && (nb == 2 || b.codes.strides[0] % 16 == 0) &&
         aligned_to(a.scales.data, 2) && a.scales.strides[0] % 2 == 0 &&
         aligned_to(b.scales.data, 2) && b.scales.strides[nb - 2] % 2 == 0 &&
         (nb == 2 || b.scales.strides[0] % 2 == 0) && out.strides[1] == 1 &&
         aligned_to(out.data, 16) && (out.strides[0] * es) % 16 == 0 && (n * es) % 16 == 0;
}

namespace {

void launch(const FusedArgs& p, int max_tiles, cudaStream_t stream) {
  constexpr int kSmem = static_cast<int>(sizeof(FusedSmem)) + 1024;  // + alignment slack
  static std::once_flag attr_once;
  launch_persistent(fused_fp4_gemm_kernel, p, FusedTraits::kThreads, kSmem, max_tiles, attr_once,
                    g_launches, "fused_fp4_gemm_kernel", stream);
}

}  // namespace

uint64_t fused_fp4_launches() { return g_launches.load(); }

void run_fused_fp4_gemm(const QuantizedOperand& a, const QuantizedOperand& b, const int32_t* offs,
                        int groups, TensorView& out, cudaStream_t stream) {
  const int64_t m = a.codes.size(0), n = b.codes.size(-2);
  FusedArgs p;
  p.a_codes = a.codes.ptr<const uint8_t>();
  p.a_scales = a.scales.ptr<const uint8_t>();
  p.a_code_ld = a.codes.strides[0];
  p.a_scale_ld = a.scales.strides[0];
  set_fused_problem(p, a, b, offs, groups, out);
  p.d = out.data;
  p.d_bf16 = out.dtype == DType::kBFloat16;
  const int64_t max_tiles = max_group_tiles<FusedTraits::kBM, FusedTraits::kBN>(m, n, groups);
  launch(p, static_cast<int>(std::min<int64_t>(max_tiles, INT32_MAX)), stream);
}

}  // namespace f46::cuda::gemm_detail
