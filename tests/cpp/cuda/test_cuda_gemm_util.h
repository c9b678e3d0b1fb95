// Device-side helpers of the CUDA GEMM tests: device copies of host tensors and operands.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <vector>

#include "backend.h"
#include "gemm_test_util.h"

namespace f46::test {

#define SKIP_WITHOUT_CUDA() \
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device"

inline void cuda_ok(cudaError_t e) { ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e); }

// A device copy of a host tensor (same shape, dtype and strides).
class GemmDeviceTensor {
 public:
  explicit GemmDeviceTensor(const HostTensor& h) : host_(h), bytes_(h.bytes().size()) {
    cuda_ok(cudaMalloc(&data_, bytes_));
    cuda_ok(cudaMemcpy(data_, h.bytes().data(), bytes_, cudaMemcpyHostToDevice));
    view_ = h.view();
    view_.data = data_;
    view_.device = Device::kCUDA;
  }
  ~GemmDeviceTensor() { cudaFree(data_); }
  GemmDeviceTensor(const GemmDeviceTensor&) = delete;
  GemmDeviceTensor& operator=(const GemmDeviceTensor&) = delete;
  TensorView& view() { return view_; }
  HostTensor download() {
    HostTensor out = host_;
    cuda_ok(cudaMemcpy(out.data(), data_, bytes_, cudaMemcpyDeviceToHost));
    return out;
  }

 private:
  HostTensor host_;
  size_t bytes_;
  void* data_ = nullptr;
  TensorView view_;
};

// A quantized operand (codes, scales, amax) on the device.
struct DeviceOperand {
  DeviceOperand(const QMatrix& q, const HostTensor& amax, AmaxScope scope, float bound)
      : codes(q.codes), scales(q.scales), amax_t(amax) {
    op.codes = codes.view();
    op.scales = scales.view();
    op.amax = amax_t.view();
    op.scope = scope;
    op.scale_bound = bound;
  }
  GemmDeviceTensor codes, scales, amax_t;
  QuantizedOperand op;
};

inline std::vector<int32_t> cumulative(const std::vector<int32_t>& sizes) {
  std::vector<int32_t> o;
  int32_t s = 0;
  for (int32_t v : sizes) o.push_back(s += v);
  return o;
}

// Output filled with a garbage pattern so unwritten elements show.
inline HostTensor garbage(DType t, std::initializer_list<int64_t> shape) {
  HostTensor h(t, shape);
  h.fill_bytes(0xA5);
  return h;
}

inline bool bytes_equal(const HostTensor& x, int64_t x_off, const HostTensor& y, int64_t y_off,
                        int64_t n) {
  return std::memcmp(x.bytes().data() + x_off, y.bytes().data() + y_off, n) == 0;
}

}  // namespace f46::test
