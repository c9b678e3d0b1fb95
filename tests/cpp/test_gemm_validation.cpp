// Every argument check of gemm / grouped_gemm_m / grouped_gemm_k throws an f46::Error that
// names the argument.
#include <gtest/gtest.h>

#include "gemm_test_util.h"

namespace f46::test {
namespace {

class GemmValidation : public testing::Test {
 protected:
  // a (M=6, K=32), b (N=5, K=32), experts (E=2, N=5, K=32).
  QMatrix a = random_qmatrix(6, 32, 1), b = random_qmatrix(5, 32, 2),
          be = random_qmatrix(5, 32, 3, 2);
  HostTensor one = float_tensor({1.0f}), two = float_tensor({1.0f, 2.0f});
  HostTensor rows = float_tensor(std::vector<float>(6, 1.0f));
  HostTensor out = HostTensor(DType::kFloat32, {6, 5});
  HostTensor offs = int_tensor({2, 6});
  QuantizedOperand qa() { return operand(a, one, AmaxScope::kTensor, 256); }
  QuantizedOperand qb() { return operand(b, one, AmaxScope::kTensor, 256); }
  QuantizedOperand qbe() { return operand(be, two, AmaxScope::kGroup, 256); }
};

TEST_F(GemmValidation, ValidCallsPass) {
  EXPECT_NO_THROW(gemm(qa(), qb(), {}, out));
  EXPECT_NO_THROW(grouped_gemm_m(qa(), qbe(), offs, {}, out));
}

// Context::gemm (the CUDA tuning overrides) is checked by every GEMM, on every backend; a valid
// choice changes no bit on the CPU.
TEST_F(GemmValidation, TuningOverrides) {
  HostTensor tk = HostTensor(DType::kFloat32, {2, 5, 5});
  HostTensor toffs = int_tensor({16, 32});
  QMatrix ta = random_qmatrix(5, 32, 6), tb = random_qmatrix(5, 32, 7);
  const QuantizedOperand ka = operand(ta, one, AmaxScope::kTensor, 256);
  const QuantizedOperand kb = operand(tb, one, AmaxScope::kTensor, 256);
  for (int swizzle : {3, -1, 16}) {
    Context ctx;
    ctx.gemm.max_swizzle = swizzle;
    const std::string v = std::to_string(swizzle);
    expect_error([&] { gemm(qa(), qb(), {}, out, ctx); }, {"ctx.gemm.max_swizzle", v});
    expect_error([&] { grouped_gemm_m(qa(), qbe(), offs, {}, out, ctx); },
                 {"ctx.gemm.max_swizzle", v});
    expect_error([&] { grouped_gemm_k(ka, kb, toffs, tk, ctx); }, {"ctx.gemm.max_swizzle", v});
  }
  Context bad;
  bad.gemm.plan = static_cast<GemmPlan>(7);
  expect_error([&] { gemm(qa(), qb(), {}, out, bad); }, {"ctx.gemm.plan", "7"});
  HostTensor want = HostTensor(DType::kFloat32, {6, 5});
  gemm(qa(), qb(), {}, want);
  for (GemmPlan p : {GemmPlan::kDequantBf16, GemmPlan::kFusedFp4}) {
    Context ctx;
    ctx.gemm = {p, 8, true};
    HostTensor got = HostTensor(DType::kFloat32, {6, 5});
    gemm(qa(), qb(), {}, got, ctx);
    EXPECT_EQ(values(got), values(want)) << static_cast<int>(p);
  }
}

TEST_F(GemmValidation, DenseOperands) {
  QuantizedOperand x = qa();
  x.codes.dtype = DType::kInt32;
  expect_error([&] { gemm(x, qb(), {}, out); }, {"a.codes", "uint8"});
  x = qa();
  x.scales.dtype = DType::kFloat32;
  expect_error([&] { gemm(x, qb(), {}, out); }, {"a.scales", "uint8"});
  QMatrix odd = random_qmatrix(6, 32, 4);  // codes (6, 16) viewed as (6, 12): K = 24
  x = operand(odd, one, AmaxScope::kTensor, 256);
  x.codes.shape[1] = 12;
  x.codes.strides[0] = 12;
  expect_error([&] { gemm(x, qb(), {}, out); }, {"a.codes", "multiple of 16"});
  QMatrix k48 = random_qmatrix(5, 48, 5);
  expect_error([&] { gemm(qa(), operand(k48, one, AmaxScope::kTensor, 256), {}, out); },
               {"b.codes", "K = 48", "K = 32"});
  x = qa();
  x.scales.shape[1] = 1;
  x.scales.strides[0] = 1;
  expect_error([&] { gemm(x, qb(), {}, out); }, {"a.scales", "shape"});
  x = qa();
  x.scale_bound = 300.0f;
  expect_error([&] { gemm(x, qb(), {}, out); }, {"a.scale_bound", "300"});
  QuantizedOperand y = qb();
  y.scale_bound = 0.0f;
  expect_error([&] { gemm(qa(), y, {}, out); }, {"b.scale_bound"});
  x = qa();
  x.codes.strides[0] = 100;  // non-contiguous rows
  x.codes.strides[1] = 1;
  expect_error([&] { gemm(x, qb(), {}, out); }, {"a.codes", "contiguous"});
}

TEST_F(GemmValidation, DenseAmaxAndScopes) {
  expect_error([&] { gemm(operand(a, two, AmaxScope::kTensor, 256), qb(), {}, out); },
               {"a.amax", "[1]"});
  expect_error([&] { gemm(operand(a, one, AmaxScope::kRow, 256), qb(), {}, out); },
               {"a.amax", "[6]", "row"});
  EXPECT_NO_THROW(gemm(operand(a, rows, AmaxScope::kRow, 256), qb(), {}, out));
  expect_error([&] { gemm(operand(a, one, AmaxScope::kGroup, 256), qb(), {}, out); },
               {"a.scope", "group", "gemm"});
  expect_error([&] { gemm(qa(), operand(b, one, AmaxScope::kRow, 256), {}, out); },
               {"b.scope", "row"});
  HostTensor i_amax = int_tensor({1});
  expect_error([&] { gemm(operand(a, i_amax, AmaxScope::kTensor, 256), qb(), {}, out); },
               {"a.amax", "float32"});
  expect_error([&] { gemm(qa(), operand(b, i_amax, AmaxScope::kTensor, 256), {}, out); },
               {"b.amax", "float32"});
}

TEST_F(GemmValidation, DenseOutAndBias) {
  HostTensor out16(DType::kFloat16, {6, 5});
  expect_error([&] { gemm(qa(), qb(), {}, out16); }, {"out", "bfloat16|float32"});
  HostTensor out_shape(DType::kFloat32, {6, 4});
  expect_error([&] { gemm(qa(), qb(), {}, out_shape); }, {"out", "shape"});
  HostTensor bias_n(DType::kFloat32, {4});
  expect_error([&] { gemm(qa(), qb(), bias_n, out); }, {"bias", "shape"});
  HostTensor bias_t(DType::kFloat16, {5});
  expect_error([&] { gemm(qa(), qb(), bias_t, out); }, {"bias", "float32|bfloat16"});
  // out aliasing an input.
  TensorView alias = make_view(a.codes.data(), DType::kFloat32, {6, 5});
  expect_error([&] { gemm(qa(), qb(), {}, alias); }, {"out", "a.codes", "overlap"});
  TensorView alias_amax = make_view(one.data(), DType::kFloat32, {1, 1});
  HostTensor o11(DType::kFloat32, {1, 1});
  QMatrix a1 = random_qmatrix(1, 16, 6), b1 = random_qmatrix(1, 16, 7);
  expect_error(
      [&] {
        gemm(operand(a1, one, AmaxScope::kTensor, 256), operand(b1, one, AmaxScope::kTensor, 256),
             {}, alias_amax);
      },
      {"out", "a.amax", "overlap"});
  // device mismatch (a CUDA-labelled view is rejected before any access).
  TensorView cuda_out = out.view();
  cuda_out.device = Device::kCUDA;
  expect_error([&] { gemm(qa(), qb(), {}, cuda_out); }, {"out", "device"});
  QuantizedOperand y = qb();
  y.scales.device = Device::kCUDA;
  expect_error([&] { gemm(qa(), y, {}, out); }, {"b.scales", "device"});
}

TEST_F(GemmValidation, GroupedM) {
  expect_error([&] { grouped_gemm_m(qa(), qb(), offs, {}, out); }, {"b.codes", "3-D"});
  HostTensor offs3 = int_tensor({1, 2, 6});
  expect_error([&] { grouped_gemm_m(qa(), qbe(), offs3, {}, out); }, {"offs", "E = 2"});
  HostTensor f_offs = float_tensor({2.0f, 6.0f});
  expect_error([&] { grouped_gemm_m(qa(), qbe(), f_offs, {}, out); }, {"offs", "int32"});
  HostTensor dec = int_tensor({4, 2});
  expect_error([&] { grouped_gemm_m(qa(), qbe(), dec, {}, out); }, {"offs", "non-decreasing"});
  HostTensor neg = int_tensor({-1, 2});
  expect_error([&] { grouped_gemm_m(qa(), qbe(), neg, {}, out); }, {"offs", ">= 0"});
  HostTensor big = int_tensor({2, 7});
  expect_error([&] { grouped_gemm_m(qa(), qbe(), big, {}, out); }, {"offs", "exceeds"});
  expect_error(
      [&] { grouped_gemm_m(operand(a, one, AmaxScope::kGroup, 256), qbe(), offs, {}, out); },
      {"a.amax", "[2]", "group"});
  expect_error(
      [&] { grouped_gemm_m(qa(), operand(be, one, AmaxScope::kGroup, 256), offs, {}, out); },
      {"b.amax", "[2]"});
  expect_error([&] { grouped_gemm_m(qa(), operand(be, two, AmaxScope::kRow, 256), offs, {}, out); },
               {"b.scope", "row", "grouped_gemm_m"});
  HostTensor bias_n(DType::kFloat32, {5});
  expect_error([&] { grouped_gemm_m(qa(), qbe(), offs, bias_n, out); }, {"bias", "[2, 5]"});
  EXPECT_NO_THROW(grouped_gemm_m(qa(), qbe(), offs, HostTensor(DType::kBFloat16, {2, 5}), out));
  QMatrix bk = random_qmatrix(5, 48, 8, 2);
  expect_error(
      [&] { grouped_gemm_m(qa(), operand(bk, two, AmaxScope::kGroup, 256), offs, {}, out); },
      {"b.codes", "K = 48"});
  HostTensor out_shape(DType::kFloat32, {5, 5});
  expect_error([&] { grouped_gemm_m(qa(), qbe(), offs, {}, out_shape); }, {"out", "shape"});
  TensorView alias = make_view(offs.data(), DType::kFloat32, {1, 1});
  expect_error([&] { grouped_gemm_m(qa(), qbe(), offs, {}, alias); }, {"out"});
  TensorView cuda_offs = offs.view();
  cuda_offs.device = Device::kCUDA;
  expect_error([&] { grouped_gemm_m(qa(), qbe(), cuda_offs, {}, out); }, {"offs", "device"});
}

TEST_F(GemmValidation, GroupedK) {
  // a (N=6, T=32), b (K=5, T=32) -> out (E, 6, 5).
  HostTensor offs_k = int_tensor({16, 32});
  HostTensor out_k(DType::kFloat32, {2, 6, 5});
  EXPECT_NO_THROW(grouped_gemm_k(qa(), qb(), offs_k, out_k));
  HostTensor unaligned = int_tensor({8, 32});
  expect_error([&] { grouped_gemm_k(qa(), qb(), unaligned, out_k); }, {"offs[0] = 8", "16"});
  HostTensor big = int_tensor({16, 48});
  expect_error([&] { grouped_gemm_k(qa(), qb(), big, out_k); }, {"offs", "exceeds"});
  QMatrix t48 = random_qmatrix(5, 48, 9);
  expect_error(
      [&] { grouped_gemm_k(qa(), operand(t48, one, AmaxScope::kTensor, 256), offs_k, out_k); },
      {"b.codes", "T = 48"});
  expect_error([&] { grouped_gemm_k(operand(a, rows, AmaxScope::kRow, 256), qb(), offs_k, out_k); },
               {"a.scope", "row", "grouped_gemm_k"});
  expect_error(
      [&] { grouped_gemm_k(qa(), operand(b, one, AmaxScope::kGroup, 256), offs_k, out_k); },
      {"b.amax", "[2]"});
  HostTensor out_shape(DType::kFloat32, {2, 5, 6});
  expect_error([&] { grouped_gemm_k(qa(), qb(), offs_k, out_shape); }, {"out", "shape"});
  HostTensor out_t(DType::kUInt8, {2, 6, 5});
  expect_error([&] { grouped_gemm_k(qa(), qb(), offs_k, out_t); }, {"out", "bfloat16|float32"});
  HostTensor empty_offs(DType::kInt32, {0});
  expect_error([&] { grouped_gemm_k(qa(), qb(), empty_offs, out_k); }, {"offs", "E >= 1"});
}

}  // namespace
}  // namespace f46::test
