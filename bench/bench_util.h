// Host helpers shared by the CUDA benchmarks (bench/): a checking macro, device allocation, the
// median time of many launches, and the bf16 input pattern.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#define BENCH_CUDA(expr)                                                      \
  do {                                                                        \
    cudaError_t e_ = (expr);                                                  \
    if (e_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #expr, cudaGetErrorString(e_)); \
      std::abort();                                                           \
    }                                                                         \
  } while (0)

namespace f46::bench {

inline void* device_alloc(size_t bytes) {
  void* p = nullptr;
  BENCH_CUDA(cudaMalloc(&p, bytes));
  BENCH_CUDA(cudaMemset(p, 0, bytes));
  return p;
}

// Median time (us) of `iters` launches of fn(i) on stream s, after 5 warm-ups (CUDA events).
inline double median_us(cudaStream_t s, int iters, const std::function<void(int)>& fn) {
  for (int i = 0; i < 5; ++i) fn(i);
  std::vector<cudaEvent_t> ev(static_cast<size_t>(2 * iters));
  for (auto& e : ev) BENCH_CUDA(cudaEventCreate(&e));
  for (int i = 0; i < iters; ++i) {
    BENCH_CUDA(cudaEventRecord(ev[2 * i], s));
    fn(i);
    BENCH_CUDA(cudaEventRecord(ev[2 * i + 1], s));
  }
  BENCH_CUDA(cudaStreamSynchronize(s));
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
    t.push_back(ms * 1000.0);
  }
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Fills a bf16 buffer with a deterministic pseudo-random pattern in [-2, 2) (host side, once).
inline void fill_bf16(void* dev, int64_t n, uint32_t seed) {
  std::vector<uint16_t> h(static_cast<size_t>(n));
  uint32_t s = seed;
  for (auto& v : h) {
    s = s * 1664525u + 1013904223u;
    const float f = (static_cast<float>(s >> 8) * 5.96e-8f - 0.5f) * 4.0f;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    v = static_cast<uint16_t>(u >> 16);
  }
  BENCH_CUDA(cudaMemcpy(dev, h.data(), n * 2, cudaMemcpyHostToDevice));
}

}  // namespace f46::bench
