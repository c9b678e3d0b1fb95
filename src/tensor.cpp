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

}  // namespace f46
