// Blocked FP32 matmul of the CPU backend: register tiles of kMr rows x 16 columns, K blocks of
// kKc, column blocks of kNc, tasks spread over std::threads. Per-element accumulation order is
// fixed (see gemm_kernel.h, N10): k ascending, one separately rounded mul and add per step.
#include "cpu/gemm_kernel.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "f46/error.h"

#pragma GCC diagnostic ignored "-Wpsabi"

namespace f46::cpu::gemm_detail {
namespace {

// 16 floats; GCC lowers it to one zmm, two ymm or four xmm registers by target.
typedef float V16 __attribute__((vector_size(64)));
static_assert(kPanelWidth == 16, "the micro kernel computes 16 columns per panel");

inline constexpr int64_t kKc = 256;  // K block: a kMr x kKc tile of A stays in L1
inline constexpr int64_t kNc = 256;  // columns per task: kKc x kNc of packed B stays in L2
inline constexpr int64_t kMc = 96;   // rows per task, a multiple of every kMr below

// t (MR, 16) += a (MR, kc; row stride lda) x panel (kc, 16), k ascending per element.
template <int MR>
__attribute__((always_inline)) inline void micro_tile(const float* a, int64_t lda,
                                                      const float* panel, int64_t kc, float* t) {
  V16 acc[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) std::memcpy(&acc[i], t + 16 * i, sizeof(V16));
  for (int64_t k = 0; k < kc; ++k) {
    V16 b;
    std::memcpy(&b, panel + 16 * k, sizeof(V16));
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) acc[i] = acc[i] + a[i * lda + k] * b;  // mul, then add (N10)
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) std::memcpy(t + 16 * i, &acc[i], sizeof(V16));
}

// One task: rows [r0, r1) x panels [p0, p1) of a job, over all of K.
template <int MR>
__attribute__((always_inline)) inline void run_block(const MatmulJob& job, int64_t r0, int64_t r1,
                                                     int64_t p0, int64_t p1) {
  const PackedB& b = *job.b;
  const int64_t n = b.n, k = b.k;
  alignas(64) float t[MR * 16];
  alignas(64) float tile_a[MR * kKc];  // (MR, kKc)
  if (k == 0) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c0 = p0 * 16, c1 = std::min(n, p1 * 16);
      std::fill(job.c + r * job.ldc + c0, job.c + r * job.ldc + c1, 0.0f);
    }
    return;
  }
  for (int64_t k0 = 0; k0 < k; k0 += kKc) {
    const int64_t kc = std::min(kKc, k - k0);
    for (int64_t m0 = r0; m0 < r1; m0 += MR) {
      const int64_t mr = std::min<int64_t>(MR, r1 - m0);
      // The (mr, kc) tile of A, copied with a short row stride (a long one, e.g. 16 KiB, puts
      // every row in the same cache set); rows past mr are zero.
      const float* src = job.a + m0 * job.lda + k0;
      if (mr < MR) std::fill(tile_a, tile_a + MR * kKc, 0.0f);
      for (int64_t i = 0; i < mr; ++i) std::memcpy(tile_a + i * kKc, src + i * job.lda, kc * 4);
      const float* a = tile_a;
      const int64_t lda = kKc;
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t col0 = p * 16;
        const int64_t nc = std::min<int64_t>(16, n - col0);
        float* c = job.c + m0 * job.ldc + col0;
        if (k0 == 0) {
          std::fill(t, t + MR * 16, 0.0f);
        } else {
          for (int64_t i = 0; i < mr; ++i) std::memcpy(t + 16 * i, c + i * job.ldc, nc * 4);
        }
        micro_tile<MR>(a, lda, b.panel(p) + k0 * 16, kc, t);
        for (int64_t i = 0; i < mr; ++i) std::memcpy(c + i * job.ldc, t + 16 * i, nc * 4);
      }
    }
  }
}

using BlockFn = void (*)(const MatmulJob&, int64_t, int64_t, int64_t, int64_t);

__attribute__((target("avx512f"))) void block_avx512(const MatmulJob& j, int64_t r0, int64_t r1,
                                                     int64_t p0, int64_t p1) {
  run_block<12>(j, r0, r1, p0, p1);  // 12 zmm accumulators
}
__attribute__((target("avx2"))) void block_avx2(const MatmulJob& j, int64_t r0, int64_t r1,
                                                int64_t p0, int64_t p1) {
  run_block<6>(j, r0, r1, p0, p1);  // 12 ymm accumulators
}
void block_sse2(const MatmulJob& j, int64_t r0, int64_t r1, int64_t p0, int64_t p1) {
  run_block<3>(j, r0, r1, p0, p1);  // 12 xmm accumulators
}

bool cpu_has(Simd s) {
  __builtin_cpu_init();
  switch (s) {
    case Simd::kAvx512:
      return __builtin_cpu_supports("avx512f");
    case Simd::kAvx2:
      return __builtin_cpu_supports("avx2");
    default:
      return true;
  }
}

BlockFn block_fn_for(Simd s) {
  if (s == Simd::kAuto)
    s = cpu_has(Simd::kAvx512) ? Simd::kAvx512 : (cpu_has(Simd::kAvx2) ? Simd::kAvx2 : Simd::kSse2);
  switch (s) {
    case Simd::kAvx512:
      return block_avx512;
    case Simd::kAvx2:
      return block_avx2;
    default:
      return block_sse2;
  }
}

std::atomic<BlockFn>& active_block_fn() {
  static std::atomic<BlockFn> fn{block_fn_for(Simd::kAuto)};
  return fn;
}

struct Task {
  int32_t job;
  int64_t r0, r1, p0, p1;
};

}  // namespace

bool simd_supported(Simd s) { return cpu_has(s); }

void force_simd(Simd s) {
  F46_CHECK(cpu_has(s), "force_simd: this CPU lacks SIMD level ", static_cast<int>(s));
  active_block_fn().store(block_fn_for(s));
}

int worker_threads() {
  static const int n = std::max(1u, std::thread::hardware_concurrency());
  return n;
}

void parallel_for(int64_t n, double cost, const std::function<void(int64_t)>& fn) {
  const int threads = static_cast<int>(std::min<int64_t>(worker_threads(), n));
  if (threads <= 1 || cost < 1e6) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(i);
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
}

void matmul_f32(const std::vector<MatmulJob>& jobs) {
  const BlockFn block_fn = active_block_fn().load();
  std::vector<Task> tasks;
  double flops = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const MatmulJob& job = jobs[j];
    const int64_t panels = job.b->panels();
    flops += 2.0 * job.rows * job.b->n * job.b->k;
    for (int64_t r = 0; r < job.rows; r += kMc)
      for (int64_t p = 0; p < panels; p += kNc / 16)
        tasks.push_back({static_cast<int32_t>(j), r, std::min(job.rows, r + kMc), p,
                         std::min(panels, p + kNc / 16)});
  }
  parallel_for(static_cast<int64_t>(tasks.size()), flops, [&](int64_t i) {
    const Task& t = tasks[i];
    block_fn(jobs[t.job], t.r0, t.r1, t.p0, t.p1);
  });
}

}  // namespace f46::cpu::gemm_detail
