// Dequantization to exact BF16 (N8 without the global scale) and the GEMM epilogue (N10).
#include <algorithm>

#include "common/numerics.h"
#include "cuda/common/cuda_check.h"
#include "cuda/dequantize/dequant_unit.cuh"
#include "gemm_kernels.h"
#include "gemm_scale.h"

namespace f46::cuda::gemm_detail {
namespace {

// One thread per 8-element unit (one 16-byte BF16 store, half an E4M3-scaled block), the loads
// of kCopyUnits units issued before any is converted; units in output order, so a warp writes
// 512 contiguous bytes per store. value = e2m1_value(code) * e4m3_to_float(scale), exact in
// BF16: for a finite scale the hardware E4M3 decode of the codes (dequant_unit_fast) gives the
// same product; a NaN scale takes the element formula. Rows past `rows` are zeros.
constexpr int kCopyThreads = 256;
constexpr int kCopyUnits = 4;

struct CopyShape {
  int64_t units_per_row = 0, total = 0;
  bool small = false;      // every unit index and row fits 32 bits: 32-bit divisions
  bool vec_codes = false;  // 4-byte aligned code words
};

__device__ __forceinline__ int64_t div_index(int64_t x, int64_t d, bool small) {
  return small ? static_cast<int64_t>(static_cast<uint32_t>(x) / static_cast<uint32_t>(d)) : x / d;
}

__global__ void __launch_bounds__(kCopyThreads) dequant_bf16_kernel(DequantArgs a, CopyShape c) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kCopyThreads * kCopyUnits + threadIdx.x;
  uint32_t codes[kCopyUnits];
  uint8_t scale[kCopyUnits];
  bool real[kCopyUnits];
#pragma unroll
  for (int k = 0; k < kCopyUnits; ++k) {
    const int64_t u = first + k * kCopyThreads;
    real[k] = false;
    if (u >= c.total) break;
    const int64_t row = div_index(u, c.units_per_row, c.small);  // over groups * out_rows
    const int64_t col = (u - row * c.units_per_row) * 8;
    const int64_t g = div_index(row, a.out_rows, c.small);
    const int64_t r = row - g * a.out_rows;
    real[k] = r < a.rows;
    if (real[k]) {
      codes[k] = load_unit_codes<8>(
          a.codes + g * a.code_group_stride + r * a.code_row_stride + col / 2, c.vec_codes);
      scale[k] = __ldg(a.scales + g * a.scale_group_stride + r * a.scale_row_stride + col / 16);
    }
  }
#pragma unroll
  for (int k = 0; k < kCopyUnits; ++k) {
    const int64_t u = first + k * kCopyThreads;
    if (u >= c.total) return;
    uint4* dst = reinterpret_cast<uint4*>(a.out + u * 8);
    if (!real[k]) {
      *dst = make_uint4(0u, 0u, 0u, 0u);
      continue;
    }
    const float s = num::e4m3_to_float(scale[k]);
    if (dequant_fast_ok(s)) {
      *dst = dequant_unit_fast<Bf16>(codes[k], num::mul(s, 64.0f));
      continue;
    }
    alignas(16) __nv_bfloat16 v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j)
      v[j] = __float2bfloat16_rn(num::mul(num::e2m1_value((codes[k] >> (4 * j)) & 0xFu), s));
    *dst = *reinterpret_cast<const uint4*>(v);
  }
}

constexpr int kEpiThreads = 256;
constexpr int kEpiCols = 4;  // columns per thread

// grid.x: output rows (all groups), grid.y: column chunks of kEpiThreads * kEpiCols. The
// only_invalid form is zero_invalid_kernel below.
__global__ void gemm_epilogue_kernel(EpilogueArgs a) {
  const int64_t row = blockIdx.x;
  int g = 0;
  int64_t r = row;  // row inside the output matrix of the group (kTokens) or of out (kRows)
  bool valid;
  if (a.mode == GroupMode::kRows) {
    // First group whose end is past the row (uniform across the block).
    int lo = 0, hi = a.groups;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (a.ends[mid] > row)
        hi = mid;
      else
        lo = mid + 1;
    }
    g = lo;
    valid = g < a.groups;
  } else {
    g = static_cast<int>(row / a.rows);
    r = row - static_cast<int64_t>(g) * a.rows;
    const int32_t start = g == 0 ? 0 : a.ends[g - 1];
    valid = a.ends[g] > start;
  }
  const float* acc = a.mode == GroupMode::kRows ? a.acc + row * a.acc_ld : a.acc + row * a.cols;
  const int64_t out_off =
      a.mode == GroupMode::kRows ? row * a.out_ld : g * a.out_group_stride + r * a.out_ld;

  // N10: tensor/group scope s = gA * gB, y = acc * s; row scope
  // s = (1 / (6 * bound_a)) * gB, y = (acc * s) * amax_row[m]. Then + bias, one cast.
  const int gg = valid ? g : 0;
  const GroupAlpha& sc = a.scale;
  const float gb = gemm_global_scale(sc.amax_b, sc.scope_b, gg, sc.bound_b);
  const bool row_scope = sc.scope_a == AmaxScope::kRow;
  const float s = row_scope
                      ? num::mul(num::div(1.0f, num::mul(6.0f, sc.bound_a)), gb)
                      : num::mul(gemm_global_scale(sc.amax_a, sc.scope_a, gg, sc.bound_a), gb);
  const float row_amax = row_scope ? sc.amax_a[row] : 1.0f;

  const int64_t c0 = (static_cast<int64_t>(blockIdx.y) * kEpiThreads + threadIdx.x) * kEpiCols;
  if (c0 >= a.cols) return;
  const int n = a.cols - c0 < kEpiCols ? static_cast<int>(a.cols - c0) : kEpiCols;
  float x[kEpiCols] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (valid) {
    if (n == kEpiCols && (reinterpret_cast<uintptr_t>(acc + c0) & 15u) == 0) {
      const float4 v = *reinterpret_cast<const float4*>(acc + c0);
      x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    } else {
      for (int j = 0; j < n; ++j) x[j] = acc[c0 + j];
    }
  }
  float y[kEpiCols];
#pragma unroll
  for (int j = 0; j < kEpiCols; ++j) {
    y[j] = 0.0f;
    if (valid && j < n) {
      y[j] = num::mul(x[j], s);
      if (row_scope) y[j] = num::mul(y[j], row_amax);
      if (a.bias != nullptr) {
        const int64_t bi = static_cast<int64_t>(g) * a.bias_group_stride + c0 + j;
        const float bv = a.bias_bf16
                             ? __bfloat162float(static_cast<const __nv_bfloat16*>(a.bias)[bi])
                             : static_cast<const float*>(a.bias)[bi];
        y[j] = num::add(y[j], bv);
      }
    }
  }
  if (a.out_bf16) {
    __nv_bfloat16* o = static_cast<__nv_bfloat16*>(a.out) + out_off + c0;
    alignas(8) __nv_bfloat16 h[kEpiCols];
#pragma unroll
    for (int j = 0; j < kEpiCols; ++j) h[j] = __float2bfloat16_rn(y[j]);
    if (n == kEpiCols && (reinterpret_cast<uintptr_t>(o) & 7u) == 0) {
      *reinterpret_cast<uint2*>(o) = *reinterpret_cast<const uint2*>(h);
    } else {
      for (int j = 0; j < n; ++j) o[j] = h[j];
    }
  } else {
    float* o = static_cast<float*>(a.out) + out_off + c0;
    if (n == kEpiCols && (reinterpret_cast<uintptr_t>(o) & 15u) == 0) {
      *reinterpret_cast<float4*>(o) = make_float4(y[0], y[1], y[2], y[3]);
    } else {
      for (int j = 0; j < n; ++j) o[j] = y[j];
    }
  }
}

// The zeros an only_invalid epilogue owes (the GEMM wrote everything else): rows at or past the
// last group end (kRows), the blocks of empty groups (kTokens). The grid is fixed and the ends
// are read here on the device, so the common case, nothing invalid, costs one small launch
// instead of a block per output row (1.5 ms of a Mixtral layer step in the profile).
__global__ void zero_invalid_kernel(EpilogueArgs a) {
  const int64_t es = a.out_bf16 ? 2 : 4;
  auto zero_rows = [&](char* base, int64_t r0, int64_t r1) {
    for (int64_t r = r0 + blockIdx.x; r < r1; r += gridDim.x) {
      char* o = base + r * a.out_ld * es;
      if (a.out_bf16) {
        for (int64_t c = threadIdx.x; c < a.cols; c += blockDim.x)
          reinterpret_cast<__nv_bfloat16*>(o)[c] = __float2bfloat16_rn(0.0f);
      } else {
        for (int64_t c = threadIdx.x; c < a.cols; c += blockDim.x)
          reinterpret_cast<float*>(o)[c] = 0.0f;
      }
    }
  };
  char* out = static_cast<char*>(a.out);
  if (a.mode == GroupMode::kRows) {
    // ends are clamped into [0, rows]; no groups: every row is invalid
    zero_rows(out, a.groups > 0 ? a.ends[a.groups - 1] : 0, a.rows);
    return;
  }
  for (int g = 0; g < a.groups; ++g) {
    const int32_t start = g == 0 ? 0 : a.ends[g - 1];
    if (a.ends[g] == start) zero_rows(out + g * a.out_group_stride * es, 0, a.rows);
  }
}

constexpr int kZeroBlocks = 1024;

}  // namespace

void launch_dequant_bf16(const DequantArgs& a, cudaStream_t stream) {
  const int64_t rows = a.groups * a.out_rows;
  if (rows == 0 || a.k == 0) return;
  CopyShape c;
  c.units_per_row = a.k / 8;
  c.total = rows * c.units_per_row;
  c.small = c.total <= 0xFFFFFFFFll;
  const auto word = [](int64_t v) { return v % 4 == 0; };
  c.vec_codes = reinterpret_cast<uintptr_t>(a.codes) % 4 == 0 && word(a.code_row_stride) &&
                word(a.code_group_stride);
  const int64_t per_block = int64_t{kCopyThreads} * kCopyUnits;
  const int64_t blocks = (c.total + per_block - 1) / per_block;
  F46_CHECK(blocks <= INT32_MAX, "dequantize for GEMM: too many elements: ", c.total * 8);
  F46_CHECK(reinterpret_cast<uintptr_t>(a.out) % 16 == 0,
            "dequantize for GEMM: the BF16 scratch must be 16-byte aligned");
  dequant_bf16_kernel<<<static_cast<unsigned>(blocks), kCopyThreads, 0, stream>>>(a, c);
  F46_CHECK_CUDA(cudaGetLastError());
}

void launch_gemm_epilogue(const EpilogueArgs& a, cudaStream_t stream) {
  const int64_t rows = a.mode == GroupMode::kRows ? a.rows : a.groups * a.rows;
  if (rows == 0 || a.cols == 0) return;
  F46_CHECK(rows <= INT32_MAX, "GEMM epilogue: too many rows: ", rows);
  if (a.only_invalid) {
    const auto blocks = static_cast<unsigned>(std::min<int64_t>(a.rows, kZeroBlocks));
    zero_invalid_kernel<<<blocks, kEpiThreads, 0, stream>>>(a);
    F46_CHECK_CUDA(cudaGetLastError());
    return;
  }
  const int64_t chunk = int64_t{kEpiThreads} * kEpiCols;
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>((a.cols + chunk - 1) / chunk));
  gemm_epilogue_kernel<<<grid, kEpiThreads, 0, stream>>>(a);
  F46_CHECK_CUDA(cudaGetLastError());
}

}  // namespace f46::cuda::gemm_detail
