#include "f46/tensor.h"

#include <algorithm>
#include <sstream>

namespace f46 {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kUInt8: return "uint8";
    case DType::kInt32: return "int32";
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
  }
  return "?";
}

int64_t dtype_size(DType t) {
  switch (t) {
    case DType::kUInt8: return 1;
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kInt32:
    case DType::kFloat32: return 4;
  }
  return 0;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= shape[d];
  return n;
}

bool TensorView::is_contiguous() const {
  int64_t expect = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != expect) return false;
    expect *= shape[d];
  }
  return true;
}

std::string TensorView::describe() const {
  std::ostringstream os;
  os << dtype_name(dtype) << "[";
  for (int d = 0; d < ndim; ++d) os << (d ? ", " : "") << shape[d];
  os << "] " << (device == Device::kCPU ? "cpu" : "cuda:") ;
  if (device == Device::kCUDA) os << device_index;
  return os.str();
}

TensorView make_view(void* data, DType dtype, std::initializer_list<int64_t> shape, Device device,
                     int device_index) {
  F46_CHECK(shape.size() <= static_cast<size_t>(kMaxDims), "make_view: at most ", kMaxDims,
            " dims, got ", shape.size());
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.ndim = static_cast<int>(shape.size());
  v.device = device;
  v.device_index = device_index;
  int d = 0;
  for (int64_t s : shape) v.shape[d++] = s;
  int64_t stride = 1;
  for (d = v.ndim - 1; d >= 0; --d) {
    v.strides[d] = stride;
    stride *= v.shape[d];
  }
  return v;
}

TensorView narrow0(const TensorView& t, int64_t start, int64_t length) {
  F46_CHECK(t.ndim >= 1, "narrow0: tensor must have at least 1 dim, got ", t.describe());
  F46_CHECK(start >= 0 && length >= 0 && start + length <= t.shape[0], "narrow0: [", start, ", ",
            start + length, ") is outside dim 0 of ", t.describe());
  TensorView v = t;
  v.data = static_cast<char*>(t.data) + start * t.strides[0] * dtype_size(t.dtype);
  v.shape[0] = length;
  return v;
}

TensorView select0(const TensorView& t, int64_t index) {
  TensorView v = narrow0(t, index, 1);
  for (int d = 1; d < t.ndim; ++d) {
    v.shape[d - 1] = t.shape[d];
    v.strides[d - 1] = t.strides[d];
  }
  v.shape[t.ndim - 1] = 0;
  v.strides[t.ndim - 1] = 0;
  v.ndim = t.ndim - 1;
  return v;
}

}  // namespace f46
