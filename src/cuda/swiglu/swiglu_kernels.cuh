// The SwiGLU kernels (docs/numerics.md N13), forward and backward in one template: one warp per
// contiguous range of rows, 16-byte vectors along the row where SwigluParams::vec, each run of
// rows of one group reduced before one atomicMax of its amax (as the amax kernel;
// group_offsets.cuh clamps). Bitwise PyTorch's CUDA `F.silu(a) * b` and its autograd:
// nvcc (default --fmad=true) compiles PyTorch's `1 + exp(-x)` into expf's range reduction and
// ex2.approx with its last multiply fused into the + 1; one_plus_exp_neg repeats that sequence
// with explicit roundings (f46 builds with --fmad=false). The rest is common/swiglu_math.h.
#pragma once

#include <type_traits>

#include "common/swiglu_math.h"
#include "cuda/common/group_offsets.cuh"
#include "cuda/common/tensor_io.cuh"

namespace f46::cuda::swiglu_detail {

struct SwigluParams {
  const void* a = nullptr;     // (rows, cols): silu's input
  const void* b = nullptr;     // (rows, cols): the gate's other factor
  const void* dout = nullptr;  // backward only
  void* out0 = nullptr;        // forward: out; backward: da
  void* out1 = nullptr;        // backward: db
  int64_t rows = 0, cols = 0;
  bool vec = false;  // every row start 16-byte aligned
  const int32_t* offsets = nullptr;
  int num_groups = 0;
  uint32_t* amax0 = nullptr;  // float32 bits (num_groups) of out0's groups, or null
  uint32_t* amax1 = nullptr;  // ... of out1's
};

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// 1 + exp(-x) as PyTorch's silu kernels compute it (see the header comment).
__device__ __forceinline__ float one_plus_exp_neg(float x) {
  const float n = -x;  // exact
  const float t = __saturatef(__fmaf_rn(n, __int_as_float(0x3BBB989D), 0.5f));
  const float j = __fmaf_rd(t, 252.0f, 12582913.0f);  // 2^23 * 1.5 + 1 + 252 t, rounded down
  const float k = __fadd_rn(j, -12583039.0f);         // the integer exponent k
  const float r = __fmaf_rn(n, __int_as_float(0x3FB8AA3B), -k) /* log2(e) */;
  const float r2 = __fmaf_rn(n, __int_as_float(0x32A57060), r) /* its low part */;
  float m;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(m) : "f"(r2));
  const float scale = num::from_bits(num::bits(j) << 23);  // 2^k
  return __fmaf_rn(m, scale, 1.0f);
}

template <typename T>
__device__ __forceinline__ float round_to(float v) {
  if constexpr (std::is_same_v<T, Bf16>) return to_float(Bf16{}, bf16_bits_rne(v));
  if constexpr (std::is_same_v<T, F16>) return to_float(F16{}, f16_bits_rne(v));
  return v;
}

template <typename T>
__device__ __forceinline__ typename T::Storage storage_of(float rounded) {
  if constexpr (std::is_same_v<T, F32>)
    return rounded;
  else if constexpr (std::is_same_v<T, Bf16>)
    return bf16_bits_rne(rounded);
  else
    return f16_bits_rne(rounded);
}

// Element c of a row: outputs (rounded to T) and their |x| bit patterns folded into m0, m1.
template <typename T, bool kBackward>
__device__ __forceinline__ void element(float x, float bv, float dy, float& o0, float& o1) {
  const float d = one_plus_exp_neg(x);
  const float s = round_to<T>(swiglu_math::silu(x, d));
  if constexpr (!kBackward) {
    o0 = round_to<T>(num::mul(s, bv));
  } else {
    const float ds = round_to<T>(num::mul(dy, bv));
    o1 = round_to<T>(num::mul(dy, s));
    o0 = round_to<T>(swiglu_math::silu_grad(ds, x, d));
  }
}

// Element i: inputs from a, b, dout, outputs stored to y0[i] (and y1[i]), |x| bit patterns
// folded into m0 (m1).
template <typename T, bool kBackward, typename S>
__device__ __forceinline__ void process(const S* a, const S* b, const S* dout, S* y0, S* y1,
                                        int64_t i, uint32_t& m0, uint32_t& m1) {
  float o0 = 0.0f, o1 = 0.0f;
  element<T, kBackward>(to_float(T{}, a[i]), to_float(T{}, b[i]),
                        kBackward ? to_float(T{}, dout[i]) : 0.0f, o0, o1);
  y0[i] = storage_of<T>(o0);
  m0 = max(m0, num::abs_bits(o0));
  if constexpr (kBackward) {
    y1[i] = storage_of<T>(o1);
    m1 = max(m1, num::abs_bits(o1));
  }
}

__device__ __forceinline__ void flush(uint32_t* out, int target, int limit, uint32_t m) {
  if (out != nullptr && target >= 0 && target < limit && m != 0u) atomicMax(out + target, m);
}

template <typename T, bool kBackward>
__global__ void __launch_bounds__(kThreads) swiglu_kernel(const SwigluParams p) {
  extern __shared__ int32_t s_offs[];
  const bool groups = p.offsets != nullptr;
  if (groups) stage_clamped_offsets(p.offsets, p.num_groups, p.rows, s_offs);
  using S = typename T::Storage;
  constexpr int kVec = 16 / sizeof(S);
  const int lane = threadIdx.x & 31;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t num_warps = static_cast<int64_t>(gridDim.x) * kWarps;
  const int64_t r_begin = p.rows * warp / num_warps, r_end = p.rows * (warp + 1) / num_warps;
  int cur = -1;
  uint32_t cur0 = 0, cur1 = 0;
  for (int64_t r = r_begin; r < r_end; ++r) {
    const int64_t base = r * p.cols;
    const S* a = static_cast<const S*>(p.a) + base;
    const S* b = static_cast<const S*>(p.b) + base;
    const S* dout = kBackward ? static_cast<const S*>(p.dout) + base : nullptr;
    S* y0 = static_cast<S*>(p.out0) + base;
    S* y1 = kBackward ? static_cast<S*>(p.out1) + base : nullptr;
    uint32_t m0 = 0, m1 = 0;
    int64_t c = 0;
    if (p.vec) {
      for (c = static_cast<int64_t>(lane) * kVec; c + kVec <= p.cols; c += 32 * kVec) {
        uint4 va = __ldg(reinterpret_cast<const uint4*>(a + c));
        uint4 vb = __ldg(reinterpret_cast<const uint4*>(b + c));
        uint4 vd = kBackward ? __ldg(reinterpret_cast<const uint4*>(dout + c)) : uint4{};
        uint4 w0, w1;
#pragma unroll
        for (int i = 0; i < kVec; ++i)
          process<T, kBackward>(reinterpret_cast<const S*>(&va), reinterpret_cast<const S*>(&vb),
                                reinterpret_cast<const S*>(&vd), reinterpret_cast<S*>(&w0),
                                reinterpret_cast<S*>(&w1), i, m0, m1);
        *reinterpret_cast<uint4*>(y0 + c) = w0;
        if constexpr (kBackward) *reinterpret_cast<uint4*>(y1 + c) = w1;
      }
      c = (p.cols / kVec) * kVec;
    }
    for (int64_t k = c + lane; k < p.cols; k += 32)
      process<T, kBackward>(a, b, dout, y0, y1, k, m0, m1);
    if (!groups) continue;
    m0 = __reduce_max_sync(0xFFFFFFFFu, m0);
    if constexpr (kBackward) m1 = __reduce_max_sync(0xFFFFFFFFu, m1);
    if (lane != 0) continue;
    const int target = group_of_row(s_offs, p.num_groups, r);
    if (target != cur) {
      flush(p.amax0, cur, p.num_groups, cur0);
      flush(p.amax1, cur, p.num_groups, cur1);
      cur = target;
      cur0 = cur1 = 0;
    }
    cur0 = max(cur0, m0);
    cur1 = max(cur1, m1);
  }
  if (groups && lane == 0) {
    flush(p.amax0, cur, p.num_groups, cur0);
    flush(p.amax1, cur, p.num_groups, cur1);
  }
}

}  // namespace f46::cuda::swiglu_detail
