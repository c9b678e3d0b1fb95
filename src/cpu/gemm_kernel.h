// The CPU FP32 matmul under every NVFP4 GEMM of the reference backend (docs/numerics.md N10).
//
// Accumulation order (the CPU backend's definition, N10): every output element is
//   acc = +0; for k = 0 .. K-1 in order: acc = add(acc, mul(a[m, k], b[n, k]))
// with separately rounded FP32 operations. The order depends on neither the thread count, the
// tile an element falls in, nor its row position, so a grouped GEMM's rows are bitwise equal to
// the dense GEMM on the same rows (N11). Vector width does not change it either: the SIMD paths
// (AVX-512, AVX2, SSE2, chosen at run time) compute the same per-element sequence.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace f46::cpu::gemm_detail {

// Columns per packed panel of B.
inline constexpr int64_t kPanelWidth = 16;

// B (n, k) packed in panels of kPanelWidth columns: panel p is (k, kPanelWidth) row-major and
// holds columns [p * kPanelWidth, (p + 1) * kPanelWidth), zero-padded past n.
struct PackedB {
  std::vector<float> data;  // (ceil(n / kPanelWidth), k, kPanelWidth) fp32
  int64_t n = 0;
  int64_t k = 0;
  int64_t panels() const { return (n + kPanelWidth - 1) / kPanelWidth; }
  float* panel(int64_t p) { return data.data() + p * k * kPanelWidth; }
  const float* panel(int64_t p) const { return data.data() + p * k * kPanelWidth; }
};

// c (rows, b.n) fp32 with row stride ldc = a (rows, b.k) fp32 with row stride lda, times b^T.
struct MatmulJob {
  const float* a = nullptr;
  int64_t lda = 0;
  int64_t rows = 0;
  const PackedB* b = nullptr;
  float* c = nullptr;
  int64_t ldc = 0;
};

// Runs every job (the jobs' outputs must not overlap), spread over the worker threads.
void matmul_f32(const std::vector<MatmulJob>& jobs);

// SIMD path of the kernel. All give bitwise identical results (same per-element order);
// tests force each supported one to check that.
enum class Simd { kAuto, kSse2, kAvx2, kAvx512 };
bool simd_supported(Simd s);
// Selects the path for later calls (kAuto: the widest supported). Not thread-safe; for tests.
void force_simd(Simd s);

// Threads used by the CPU GEMMs (hardware concurrency, at least 1).
int worker_threads();

// Calls fn(i) for i in [0, n) on up to worker_threads() threads; fn must be safe to run
// concurrently for different i. Runs inline when n == 1 or cost (a rough operation count)
// is small.
void parallel_for(int64_t n, double cost, const std::function<void(int64_t)>& fn);

}  // namespace f46::cpu::gemm_detail
