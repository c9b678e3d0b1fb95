#include "convert.h"

namespace f46::torch_ext {

namespace {

DType to_dtype(at::ScalarType t, const char* name) {
  switch (t) {
    case at::kByte:
      return DType::kUInt8;
    case at::kInt:
      return DType::kInt32;
    case at::kFloat:
      return DType::kFloat32;
    case at::kHalf:
      return DType::kFloat16;
    case at::kBFloat16:
      return DType::kBFloat16;
    default:
      break;
  }
  TORCH_CHECK(false, "f46: argument `", name, "` has unsupported dtype ", t,
              " (expected uint8, int32, float32, float16 or bfloat16)");
}

}  // namespace

TensorView to_view(const at::Tensor& t, const char* name) {
  TensorView v;
  if (!t.defined()) return v;
  TORCH_CHECK(t.dim() <= kMaxDims, "f46: argument `", name, "` has ", t.dim(), " dims, at most ",
              kMaxDims, " are supported");
  TORCH_CHECK(t.layout() == at::kStrided, "f46: argument `", name, "` must be a strided tensor");
  const at::Device dev = t.device();
  if (dev.is_cpu()) {
    v.device = Device::kCPU;
  } else if (dev.is_cuda()) {
    v.device = Device::kCUDA;
    v.device_index = dev.index();
  } else {
    TORCH_CHECK(false, "f46: argument `", name, "` is on unsupported device ", dev);
  }
  v.dtype = to_dtype(t.scalar_type(), name);
  v.data = t.data_ptr();
  v.ndim = static_cast<int>(t.dim());
  for (int d = 0; d < v.ndim; ++d) {
    v.shape[d] = t.size(d);
    v.strides[d] = t.stride(d);
  }
  return v;
}

TensorView to_view(const std::optional<at::Tensor>& t, const char* name) {
  return t.has_value() ? to_view(*t, name) : TensorView{};
}

AmaxScope parse_scope(const std::string& s, const char* op, const char* name) {
  if (s == "tensor") return AmaxScope::kTensor;
  if (s == "row") return AmaxScope::kRow;
  if (s == "group") return AmaxScope::kGroup;
  TORCH_CHECK(false, "f46::", op, ": `", name, "` must be 'tensor', 'row' or 'group', got '", s,
              "'");
}

Rule parse_rule(const std::string& s, const char* op) {
  if (s == "mae") return Rule::kMAE;
  if (s == "mse") return Rule::kMSE;
  if (s == "abs_max") return Rule::kAbsMax;
  if (s == "all6") return Rule::kAll6;
  if (s == "all4") return Rule::kAll4;
  TORCH_CHECK(false, "f46::", op,
              ": `rule` must be 'mae', 'mse', 'abs_max', 'all6' or 'all4', got '", s, "'");
}

GemmTuning parse_tuning(const std::string& plan, int64_t max_swizzle, const std::string& raster,
                        const char* op) {
  GemmTuning t;
  if (plan == "a") {
    t.plan = GemmPlan::kDequantBf16;
  } else if (plan == "b") {
    t.plan = GemmPlan::kFusedFp4;
  } else if (plan == "c") {
    t.plan = GemmPlan::kWeight4;
  } else {
    TORCH_CHECK(plan == "auto", "f46::", op, ": `plan` must be 'auto', 'a', 'b' or 'c', got '",
                plan, "'");
  }
  TORCH_CHECK(max_swizzle == 0 || max_swizzle == 1 || max_swizzle == 2 || max_swizzle == 4 ||
                  max_swizzle == 8,
              "f46::", op, ": `max_swizzle` must be 0 (default), 1, 2, 4 or 8, got ", max_swizzle);
  TORCH_CHECK(raster == "m" || raster == "n", "f46::", op, ": `raster` must be 'm' or 'n', got '",
              raster, "'");
  t.max_swizzle = static_cast<int>(max_swizzle);
  t.raster_along_n = raster == "n";
  return t;
}

Block parse_block(int64_t block, const char* op) {
  if (block == 1) return Block::k1x16;
  if (block == 16) return Block::k16x16;
  TORCH_CHECK(false, "f46::", op, ": `block` must be 1 (1x16) or 16 (16x16), got ", block);
}

}  // namespace f46::torch_ext
