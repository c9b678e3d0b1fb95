// Helpers for the CUDA backend tests: device copies of HostTensors and runners that produce the
// same outputs on the CPU reference and on the GPU through the public API, for bitwise checks.
// Every test that uses them first calls F46_SKIP_WITHOUT_CUDA().
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend.h"
#include "f46/f46.h"
#include "test_helpers.h"
#include "test_quantize_util.h"

#define F46_SKIP_WITHOUT_CUDA()                                      \
  do {                                                               \
    if (!::f46::cuda::available()) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

#define F46_ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

namespace f46::test {

// A device copy of a HostTensor's storage (same shape, strides and row padding).
class DeviceTensor {
 public:
  DeviceTensor() = default;
  explicit DeviceTensor(const HostTensor& h) : view_(h.view()) {
    bytes_ = h.bytes().size();
    if (!h.view().defined()) return;
    EXPECT_EQ(cudaMalloc(&ptr_, bytes_), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr_, h.bytes().data(), bytes_, cudaMemcpyHostToDevice), cudaSuccess);
    view_.data = ptr_;
    view_.device = Device::kCUDA;
  }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  DeviceTensor(DeviceTensor&& o) noexcept { *this = std::move(o); }
  DeviceTensor& operator=(DeviceTensor&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    std::swap(view_, o.view_);
    return *this;
  }
  ~DeviceTensor() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  TensorView& view() { return view_; }
  // The device bytes copied into a host tensor laid out like `like` (synchronises).
  HostTensor to_host(const HostTensor& like) const {
    HostTensor h = like;
    if (ptr_ != nullptr) {
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(h.data(), ptr_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return h;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  TensorView view_;
};

// An ExpertsCase's tensors on the device (quantize_experts, amax_quantize_experts): the outputs a
// config writes, and those outputs (the amaxes too, where the call computed them) compared
// bytewise with a host case's.
struct DeviceExperts {
  DeviceTensor w, amax, codes, scales, codes_t, scales_t;
  explicit DeviceExperts(const ExpertsCase& c)
      : w(c.w),
        amax(c.amax),
        codes(c.codes),
        scales(c.scales),
        codes_t(c.codes_t),
        scales_t(c.scales_t) {}
  QuantizedOutputs outputs(const QuantizeConfig& cfg) {
    return outputs_of(cfg, codes.view(), scales.view(), codes_t.view(), scales_t.view());
  }
  void expect_equal(const ExpertsCase& host, const QuantizeConfig& cfg, bool with_amax,
                    const std::string& what) const {
    if (with_amax) EXPECT_EQ(amax.to_host(host.amax).bytes(), host.amax.bytes()) << what;
    if (cfg.rowwise) {
      EXPECT_EQ(codes.to_host(host.codes).bytes(), host.codes.bytes()) << what;
      EXPECT_EQ(scales.to_host(host.scales).bytes(), host.scales.bytes()) << what;
    }
    if (cfg.columnwise) {
      EXPECT_EQ(codes_t.to_host(host.codes_t).bytes(), host.codes_t.bytes()) << what;
      EXPECT_EQ(scales_t.to_host(host.scales_t).bytes(), host.scales_t.bytes()) << what;
    }
  }
};

// Device copies of the amax/offset tensors of an AmaxSpec, as a GlobalAmax on the GPU.
class DeviceGlobalAmax {
 public:
  explicit DeviceGlobalAmax(const AmaxSpec& s)
      : amax_(float_tensor(s.amax)),
        offs_(s.offsets.empty() ? HostTensor() : int_tensor(s.offsets)),
        col_(s.amax_columnwise.empty() ? HostTensor() : float_tensor(s.amax_columnwise)) {
    g_.scope = s.scope;
    g_.amax = amax_.view();
    if (!s.offsets.empty()) g_.offsets = offs_.view();
    if (!s.amax_columnwise.empty()) g_.amax_columnwise = col_.view();
  }
  const GlobalAmax& get() const { return g_; }

 private:
  DeviceTensor amax_, offs_, col_;
  GlobalAmax g_;
};

// f46::quantize on a device copy of x; outputs copied back (pre-filled with 0xAB on the device
// as on the host, so an unwritten byte shows).
inline Quantized quantize_device(const HostTensor& x, const AmaxSpec& a,
                                 const QuantizeConfig& cfg) {
  const int64_t R = x.size(0), C = x.size(1);
  Quantized q;
  if (cfg.rowwise) {
    q.codes = HostTensor(DType::kUInt8, {R, C / 2});
    q.scales = HostTensor(DType::kUInt8, {R, C / 16});
    q.codes.fill_bytes(0xAB);
    q.scales.fill_bytes(0xAB);
  }
  if (cfg.columnwise) {
    q.codes_t = HostTensor(DType::kUInt8, {C, R / 2});
    q.scales_t = HostTensor(DType::kUInt8, {C, R / 16});
    q.codes_t.fill_bytes(0xAB);
    q.scales_t.fill_bytes(0xAB);
  }
  DeviceTensor dx(x), dc(q.codes), ds(q.scales), dct(q.codes_t), dst(q.scales_t);
  QuantizedOutputs out;
  if (cfg.rowwise) {
    out.codes = dc.view();
    out.scales = ds.view();
  }
  if (cfg.columnwise) {
    out.codes_t = dct.view();
    out.scales_t = dst.view();
  }
  DeviceGlobalAmax g(a);
  quantize(dx.view(), g.get(), cfg, out);
  Quantized r;
  if (cfg.rowwise) {
    r.codes = dc.to_host(q.codes);
    r.scales = ds.to_host(q.scales);
  }
  if (cfg.columnwise) {
    r.codes_t = dct.to_host(q.codes_t);
    r.scales_t = dst.to_host(q.scales_t);
  }
  return r;
}

inline HostTensor dequantize_device(const HostTensor& codes, const HostTensor& scales,
                                    const AmaxSpec& a, float bound, DType out_dtype) {
  HostTensor out(out_dtype, {codes.size(0), codes.size(1) * 2});
  out.fill_bytes(0xAB);
  DeviceTensor dc(codes), ds(scales), dout(out);
  DeviceGlobalAmax g(a);
  dequantize(dc.view(), ds.view(), g.get(), bound, dout.view());
  return dout.to_host(out);
}

inline std::vector<float> amax_device(const HostTensor& x, AmaxScope scope,
                                      const std::vector<int32_t>& offsets = {},
                                      bool rht_columns = false) {
  const int64_t n = scope == AmaxScope::kTensor ? 1
                    : scope == AmaxScope::kRow  ? x.size(0)
                                                : static_cast<int64_t>(offsets.size());
  HostTensor out(DType::kFloat32, std::vector<int64_t>{n});
  out.fill_bytes(0xAB);
  HostTensor offs = offsets.empty() ? HostTensor() : int_tensor(offsets);
  DeviceTensor dx(x), doffs(offs), dout(out);
  AmaxConfig cfg;
  cfg.scope = scope;
  if (!offsets.empty()) cfg.offsets = doffs.view();
  cfg.rht_columns = rht_columns;
  amax(dx.view(), cfg, dout.view());
  return dout.to_host(out).to_floats();
}

// Index of the first differing byte of two host tensors' storage, or -1 when equal.
inline int64_t first_byte_diff(const HostTensor& a, const HostTensor& b) {
  const auto& x = a.bytes();
  const auto& y = b.bytes();
  if (x.size() != y.size()) return 0;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] != y[i]) return static_cast<int64_t>(i);
  return -1;
}

// Bitwise float vectors (NaN patterns included).
inline int64_t first_float_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return static_cast<int64_t>(i);
  return -1;
}

// EXPECTs every output of a CPU and a GPU quantize call to be byte-identical.
inline void expect_same_quantized(const Quantized& cpu, const Quantized& gpu,
                                  const QuantizeConfig& cfg, const std::string& what) {
  if (cfg.rowwise) {
    EXPECT_EQ(first_byte_diff(cpu.codes, gpu.codes), -1) << what << ": rowwise codes differ";
    EXPECT_EQ(first_byte_diff(cpu.scales, gpu.scales), -1) << what << ": rowwise scales differ";
  }
  if (cfg.columnwise) {
    EXPECT_EQ(first_byte_diff(cpu.codes_t, gpu.codes_t), -1) << what << ": columnwise codes differ";
    EXPECT_EQ(first_byte_diff(cpu.scales_t, gpu.scales_t), -1)
        << what << ": columnwise scales differ";
  }
}

}  // namespace f46::test
