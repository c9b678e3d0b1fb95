// Host side of plan (b): plan choice, operand checks, launch of fused_fp4_gemm_kernel.
#include <atomic>
#include <mutex>

#include "cuda/common/cuda_check.h"
#include "cuda/common/launch_utils.h"
#include "f46/error.h"
#include "fused_fp4_gemm.h"
#include "fused_fp4_gemm_kernel.cuh"

namespace f46::cuda::gemm_detail {
namespace {

std::atomic<uint64_t> g_launches{0};

bool aligned(const void* p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

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
         b.scales.strides[nb - 1] == 1 && aligned(a.codes.data, 16) &&
         a.codes.strides[0] % 16 == 0 && aligned(b.codes.data, 16) &&
         b.codes.strides[nb - 2] % 16 == 0 && (nb == 2 || b.codes.strides[0] % 16 == 0) &&
         aligned(a.scales.data, 2) && a.scales.strides[0] % 2 == 0 && aligned(b.scales.data, 2) &&
         b.scales.strides[nb - 2] % 2 == 0 && (nb == 2 || b.scales.strides[0] % 2 == 0) &&
         out.strides[1] == 1 && aligned(out.data, 16) && (out.strides[0] * es) % 16 == 0 &&
         (n * es) % 16 == 0;
}

void launch(const FusedArgs& p, int max_tiles, cudaStream_t stream) {
  constexpr int kSmem = static_cast<int>(sizeof(FusedSmem)) + 1024;  // + alignment slack
  static std::once_flag attr_once;
  std::call_once(attr_once, [] {
    F46_CHECK_CUDA(cudaFuncSetAttribute(fused_fp4_gemm_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  });
  int device = 0;
  F46_CHECK_CUDA(cudaGetDevice(&device));
  const int grid = std::max(1, std::min(sm_count(device), max_tiles));
  fused_fp4_gemm_kernel<<<grid, FusedTraits::kThreads, kSmem, stream>>>(p);
  F46_CHECK_LAUNCH("fused_fp4_gemm_kernel");
  g_launches.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

uint64_t fused_fp4_launches() { return g_launches.load(); }

// Plan (a) pays, on top of its BF16 GEMM, a dequantization pass over both operands (~2.6 bytes
// per operand element: 4-bit codes and scales read, BF16 written): per FLOP a cost proportional
// to (M*K + E*N*K) / (2*M*N*K) = (1/N + E/M) / 2. Plan (b) pays none but its mainloop runs at
// ~0.5x BF16. So the rule is a threshold on x = 1/N + 1/(average rows per group) (K cancels),
// fitted to the H200 measurements of `bench/bench_gemm.py plans` (bench/RESULTS.md, "GEMM
// plans": plan (b) wins only for Qwen3-like shapes, x = 2.6e-3; gpt-oss, x = 1.2e-3, loses).
// Only problems at least as large as the measured ones (M*N*K >= 2^33) are moved to plan (b):
// below that nothing was measured, and plan (a) remains the default. Both plans give the same
// bits (tests/cpp/cuda/test_cuda_gemm_fused.cpp), so the choice never changes a result.
constexpr double kFusedMinX = 2.4e-3;
constexpr double kFusedMinWork = 8589934592.0;  // 2^33 multiply-adds

bool fused_fp4_plan_auto(int64_t m, int64_t n, int64_t k, int groups) {
  if (m <= 0 || n <= 0 || k <= 0) return false;
  const double x =
      1.0 / static_cast<double>(n) + static_cast<double>(groups) / static_cast<double>(m);
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return x > kFusedMinX && work >= kFusedMinWork;
}

bool try_fused_fp4_gemm(const QuantizedOperand& a, const QuantizedOperand& b, const int32_t* offs,
                        int groups, TensorView& out, GemmPlan plan, cudaStream_t stream) {
  if (plan == GemmPlan::kDequantBf16 || !fused_fp4_supported(a, b, groups, out)) return false;
  const int64_t m = a.codes.size(0), k = a.codes.size(1) * 2, n = b.codes.size(-2);
  if (plan == GemmPlan::kAuto && !fused_fp4_plan_auto(m, n, k, groups)) return false;

  FusedArgs p;
  const int nb = b.codes.ndim;
  p.a_codes = a.codes.ptr<const uint8_t>();
  p.a_scales = a.scales.ptr<const uint8_t>();
  p.a_code_ld = a.codes.strides[0];
  p.a_scale_ld = a.scales.strides[0];
  p.b_codes = b.codes.ptr<const uint8_t>();
  p.b_scales = b.scales.ptr<const uint8_t>();
  p.b_code_ld = b.codes.strides[nb - 2];
  p.b_scale_ld = b.scales.strides[nb - 2];
  p.b_code_gs = nb == 3 ? b.codes.strides[0] : 0;
  p.b_scale_gs = nb == 3 ? b.scales.strides[0] : 0;
  p.offs = offs;
  p.groups = groups;
  p.m = static_cast<int>(m);
  p.n = static_cast<int>(n);
  p.k = static_cast<int>(k);
  p.d = out.data;
  p.d_bf16 = out.dtype == DType::kBFloat16;
  p.ld_d = out.strides[0];
  p.alpha.amax_a = a.amax.ptr<const float>();
  p.alpha.scope_a = a.scope;
  p.alpha.bound_a = a.scale_bound;
  p.alpha.amax_b = b.amax.ptr<const float>();
  p.alpha.scope_b = b.scope;
  p.alpha.bound_b = b.scale_bound;
  // Tiles: at most ceil(M / BM) + (groups - 1) m-tiles (one partial tile per group boundary).
  const int64_t n_tiles = (n + FusedTraits::kBN - 1) / FusedTraits::kBN;
  const int64_t max_tiles = ((m + FusedTraits::kBM - 1) / FusedTraits::kBM + groups) * n_tiles;
  launch(p, static_cast<int>(std::min<int64_t>(max_tiles, INT32_MAX)), stream);
  return true;
}

}  // namespace f46::cuda::gemm_detail
