// A dense NVFP4 GEMM, y = x w^T, on the CPU backend: quantize an activation x (M, K) and a
// weight w (N, K) with 4/6, multiply with f46::gemm, and compare with plain loops, once on the
// dequantized operands (the GEMM contract, docs/numerics.md N10: relative error < 1e-5) and
// once on the original floats (the quantization error of NVFP4 4/6).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "f46/f46.h"

namespace {

// Codes, scales and global amax of one quantized operand (rows, k), in host memory.
struct HostOperand {
  std::vector<uint8_t> codes;   // (rows, k/2) uint8, two E2M1 codes per byte
  std::vector<uint8_t> scales;  // (rows, k/16) uint8 E4M3 block scales
  float amax = 0.0f;            // (1) float32, per-tensor scope
};

// Quantizes v (rows, k) float32 with a per-tensor amax; weights use 16x16 scale tiles.
HostOperand quantize(std::vector<float>& v, int64_t rows, int64_t k, f46::Block block) {
  HostOperand q;
  q.codes.resize(rows * k / 2);
  q.scales.resize(rows * k / 16);
  const f46::TensorView x = f46::make_view(v.data(), f46::DType::kFloat32, {rows, k});
  f46::GlobalAmax global;
  global.amax = f46::make_view(&q.amax, f46::DType::kFloat32, {1});
  f46::amax(x, f46::AmaxConfig{}, global.amax);

  f46::QuantizeConfig cfg;  // 4/6, MAE rule, scale bound 256
  cfg.block = block;
  f46::QuantizedOutputs out;
  out.codes = f46::make_view(q.codes.data(), f46::DType::kUInt8, {rows, k / 2});
  out.scales = f46::make_view(q.scales.data(), f46::DType::kUInt8, {rows, k / 16});
  f46::quantize(x, global, cfg, out);
  return q;
}

f46::QuantizedOperand operand(HostOperand& q, int64_t rows, int64_t k) {
  f46::QuantizedOperand op;
  op.codes = f46::make_view(q.codes.data(), f46::DType::kUInt8, {rows, k / 2});
  op.scales = f46::make_view(q.scales.data(), f46::DType::kUInt8, {rows, k / 16});
  op.amax = f46::make_view(&q.amax, f46::DType::kFloat32, {1});
  op.scope = f46::AmaxScope::kTensor;
  op.scale_bound = 256.0f;
  return op;
}

// The operand's values as f46 reconstructs them, (rows, k) float32.
std::vector<float> dequantize(HostOperand& q, int64_t rows, int64_t k) {
  std::vector<float> v(rows * k);
  f46::GlobalAmax global;
  global.amax = f46::make_view(&q.amax, f46::DType::kFloat32, {1});
  f46::TensorView out = f46::make_view(v.data(), f46::DType::kFloat32, {rows, k});
  const f46::QuantizedOperand op = operand(q, rows, k);
  f46::dequantize(op.codes, op.scales, global, op.scale_bound, out);
  return v;
}

// Plain loop: c (m, n) = a (m, k) b (n, k)^T, accumulated in double.
std::vector<double> matmul_nt(const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                              int64_t n, int64_t k) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 0; l < k; ++l) c[i * n + j] += double{a[i * k + l]} * b[j * k + l];
  return c;
}

// Relative Frobenius error ||got - want|| / ||want||.
double rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

}  // namespace

int main() {
  constexpr int64_t kM = 48, kN = 32, kK = 128;
  std::mt19937 gen(46);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(kM * kK), w(kN * kK);  // x (M, K), w (N, K) float32
  for (float& v : x) v = normal(gen);
  for (float& v : w) v = 0.05f * normal(gen);

  HostOperand qx = quantize(x, kM, kK, f46::Block::k1x16);
  HostOperand qw = quantize(w, kN, kK, f46::Block::k16x16);

  std::vector<float> y(kM * kN);  // (M, N) float32
  f46::TensorView out = f46::make_view(y.data(), f46::DType::kFloat32, {kM, kN});
  f46::gemm(operand(qx, kM, kK), operand(qw, kN, kK), f46::TensorView{}, out);

  const double err_deq =
      rel_error(y, matmul_nt(dequantize(qx, kM, kK), dequantize(qw, kN, kK), kM, kN, kK));
  const double err_fp32 = rel_error(y, matmul_nt(x, w, kM, kN, kK));
  std::printf("f46::gemm (%lld x %lld x %lld, NVFP4 4/6, CPU)\n", static_cast<long long>(kM),
              static_cast<long long>(kN), static_cast<long long>(kK));
  std::printf("  vs a loop over the dequantized operands: relative error %.2e (contract < 1e-5)\n",
              err_deq);
  std::printf("  vs a loop over the float32 operands:     relative error %.2e (quantization)\n",
              err_fp32);
  std::printf("  y[0][0..3] = %g %g %g %g\n", y[0], y[1], y[2], y[3]);
  return err_deq < 1e-5 ? 0 : 1;
}
