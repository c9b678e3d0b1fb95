// A non-owning view of a strided tensor: pointer, dtype, shape, strides, device.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "f46/error.h"

namespace f46 {

enum class DType : uint8_t {
  kUInt8,  // E2M1 code pairs and E4M3 scale bytes
  kInt32,  // group offsets
  kFloat32,
  kFloat16,
  kBFloat16,
};

enum class Device : uint8_t { kCPU, kCUDA };

const char* dtype_name(DType t);
int64_t dtype_size(DType t);

inline constexpr int kMaxDims = 4;

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  int ndim = 0;
  int64_t shape[kMaxDims] = {0, 0, 0, 0};
  int64_t strides[kMaxDims] = {0, 0, 0, 0};  // in elements
  Device device = Device::kCPU;
  int device_index = 0;

  int64_t size(int d) const { return shape[d < 0 ? d + ndim : d]; }
  int64_t numel() const;
  bool defined() const { return ndim > 0 || data != nullptr; }
  bool is_contiguous() const;
  std::string describe() const;  // "bfloat16[8, 32] cpu"
  template <typename T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
};

// t[start : start + length] along the first dimension (same rank; an index past the end fails).
TensorView narrow0(const TensorView& t, int64_t start, int64_t length);
// t[index]: the first dimension removed.
TensorView select0(const TensorView& t, int64_t index);

// A contiguous view over `data`.
TensorView make_view(void* data, DType dtype, std::initializer_list<int64_t> shape,
                     Device device = Device::kCPU, int device_index = 0);

// Which kernel plan a CUDA GEMM runs (docs/design.md, "GEMM plans"): kAuto chooses by shape;
// kDequantBf16 is plan (a) (dequantize both operands to BF16, CUTLASS grouped GEMM); kFusedFp4
// is plan (b) (one kernel reading the 4-bit operands); kWeight4 is plan (c) (A dequantized to
// BF16, the weight B read 4-bit by the GEMM). Plans (b) and (c) fall back to plan (a) where they
// do not apply. Every plan gives the same bits (N10); the CPU ignores the choice.
enum class GemmPlan : int { kAuto = 0, kDequantBf16 = 1, kFusedFp4 = 2, kWeight4 = 3 };

// Tuning overrides of the CUDA GEMMs, for benchmarks and tests; the defaults are the tuned
// choice. max_swizzle: the CUTLASS group scheduler's swizzle (0: the default, 1; else 1, 2, 4
// or 8); raster_along_n: its raster order (false: along M).
struct GemmTuning {
  GemmPlan plan = GemmPlan::kAuto;
  int max_swizzle = 0;
  bool raster_along_n = false;
};

// Execution context for a call: the CUDA stream (ignored on the CPU), an optional
// caller-provided device workspace (bytes; backends that need scratch and get none allocate
// it stream-ordered, which stays CUDA-graph capturable) and the GEMM tuning overrides.
struct Context {
  void* cuda_stream = nullptr;  // cudaStream_t
  void* workspace = nullptr;
  int64_t workspace_bytes = 0;
  GemmTuning gemm;
};

}  // namespace f46
