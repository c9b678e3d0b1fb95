// Device-side element I/O: loads of 16 consecutive elements of bf16/fp16/fp32 as float
// (vectorised 16-byte loads where aligned) and the float -> output dtype casts (N8).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "common/numerics.h"
#include "cuda/common/element_types.h"

namespace f46::cuda {

__device__ __forceinline__ float to_float(Bf16, uint16_t v) {
  return num::from_bits(static_cast<uint32_t>(v) << 16);  // exact
}
// fp16 -> float, exact; NaN keeps its sign and payload (as the CPU reference's conversion).
__device__ __forceinline__ float to_float(F16, uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 31u, m = h & 1023u;
  uint32_t u;
  if (e == 0)
    u = num::bits(num::mul(static_cast<float>(m), 5.9604644775390625e-08f));
  else if (e == 31)
    u = m ? 0x7FC00000u | (m << 13) : 0x7F800000u;
  else
    u = ((e + 112u) << 23) | (m << 13);
  return num::from_bits(u | sign);
}
__device__ __forceinline__ float to_float(F32, float v) { return v; }

// x[0..16) = p[0..16) as float. `vec`: p is 16-byte aligned (2 x 16 B bf16/fp16, 4 x 16 B fp32).
template <typename T>
__device__ __forceinline__ void load16(const typename T::Storage* p, bool vec, float (&x)[16]) {
  using S = typename T::Storage;
  if (vec) {
    constexpr int kPerVec = 16 / sizeof(S);
#pragma unroll
    for (int v = 0; v < 16 / kPerVec; ++v) {
      const uint4 w = __ldg(reinterpret_cast<const uint4*>(p) + v);
      const S* s = reinterpret_cast<const S*>(&w);
#pragma unroll
      for (int i = 0; i < kPerVec; ++i) x[v * kPerVec + i] = to_float(T{}, s[i]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 16; ++i) x[i] = to_float(T{}, p[i]);
  }
}

// 16 raw elements (as staged in shared memory by the kernels), unpacked to float by unpack16.
template <typename T>
struct Raw16 {
  static constexpr int kVecs = 16 * sizeof(typename T::Storage) / 16;
  uint4 w[kVecs];
};
template <typename T>
__device__ __forceinline__ void unpack16(const Raw16<T>& r, float (&x)[16]) {
  using S = typename T::Storage;
  constexpr int kPerVec = 16 / sizeof(S);
#pragma unroll
  for (int v = 0; v < Raw16<T>::kVecs; ++v) {
    const S* s = reinterpret_cast<const S*>(&r.w[v]);
#pragma unroll
    for (int i = 0; i < kPerVec; ++i) x[v * kPerVec + i] = to_float(T{}, s[i]);
  }
}

// bf16: the two halves of each 32-bit word are the high halves of two floats (one shift, one
// mask per element; also what the compiler then keeps when paths merge).
template <>
__device__ __forceinline__ void unpack16<Bf16>(const Raw16<Bf16>& r, float (&x)[16]) {
#pragma unroll
  for (int v = 0; v < 2; ++v) {
    const uint32_t w[4] = {r.w[v].x, r.w[v].y, r.w[v].z, r.w[v].w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      x[8 * v + 2 * i] = num::from_bits(w[i] << 16);
      x[8 * v + 2 * i + 1] = num::from_bits(w[i] & 0xFFFF0000u);
    }
  }
}

// float -> bf16 bits, round to nearest even; NaN stays a quiet NaN with its sign.
__device__ __forceinline__ uint16_t bf16_bits_rne(float f) {
  const uint32_t u = num::bits(f);
  if (num::is_nan(f)) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
// float -> fp16 bits, nearest even, overflow to Inf, sub-normals kept, NaN -> sign | 0x7E00
// (the CPU reference's conversion, bit for bit).
__device__ __forceinline__ uint16_t f16_bits_rne(float f) {
  const uint32_t u = num::bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520: Inf
  if (a < 0x38800000u) {  // below 2^-14: multiples of 2^-24
    const float m = rintf(num::mul(num::from_bits(a), 16777216.0f));
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(m));
  }
  const uint32_t r = a + 0xFFFu + ((a >> 13) & 1u);
  return static_cast<uint16_t>(sign | (((r >> 13) - (112u << 10)) & 0x7FFFu));
}

__device__ __forceinline__ void store_as(Bf16, uint16_t* p, float v) { *p = bf16_bits_rne(v); }
__device__ __forceinline__ void store_as(F16, uint16_t* p, float v) { *p = f16_bits_rne(v); }
__device__ __forceinline__ void store_as(F32, float* p, float v) { *p = v; }

}  // namespace f46::cuda
