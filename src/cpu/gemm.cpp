// CPU reference NVFP4 GEMMs: dense, M-grouped and K-grouped (docs/numerics.md N10, N11).
// Operands are dequantized exactly to FP32 (deq = e2m1_value(code) * e4m3_to_float(scale)),
// multiplied by the FP32 kernel of gemm_kernel.cpp (fixed k-ascending order per element), and
// the global scales, bias and output cast are applied in one epilogue per row.
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "backend.h"
#include "common/numerics.h"
#include "cpu/gemm_kernel.h"

namespace f46::cpu {
namespace {

using gemm_detail::kPanelWidth;
using gemm_detail::MatmulJob;
using gemm_detail::PackedB;

// ---- dequantization to exact FP32 (N8, N10) -------------------------------------------------
struct Tables {
  std::array<float, 16> e2m1;   // code -> value (N1.1)
  std::array<float, 256> e4m3;  // scale byte -> value (N1.3)
};
const Tables& tables() {
  static const Tables t = [] {
    Tables r;
    for (int c = 0; c < 16; ++c) r.e2m1[c] = num::e2m1_value(static_cast<uint8_t>(c));
    for (int s = 0; s < 256; ++s) r.e4m3[s] = num::e4m3_to_float(static_cast<uint8_t>(s));
    return r;
  }();
  return t;
}

// A quantized matrix (rows, k): codes (rows, k/2) and scales (rows, k/16) with row strides.
struct CodeRows {
  const uint8_t* codes;
  int64_t codes_stride;
  const uint8_t* scales;
  int64_t scales_stride;
};

CodeRows code_rows(const QuantizedOperand& op, int64_t row0, int64_t col0) {
  const TensorView& c = op.codes;
  const TensorView& s = op.scales;
  const int64_t cs = c.strides[c.ndim - 2], ss = s.strides[s.ndim - 2];
  return {c.ptr<uint8_t>() + row0 * cs + col0 / 2, cs, s.ptr<uint8_t>() + row0 * ss + col0 / 16,
          ss};
}

// Row r of the quantized matrix -> dst[0 .. k) with element stride dst_step.
void dequantize_row(const CodeRows& q, int64_t r, int64_t k, float* dst, int64_t dst_step) {
  const Tables& t = tables();
  const uint8_t* codes = q.codes + r * q.codes_stride;
  const uint8_t* scales = q.scales + r * q.scales_stride;
  for (int64_t b = 0; b < k / 16; ++b) {
    const float scale = t.e4m3[scales[b]];
    for (int j = 0; j < 8; ++j) {
      const uint8_t byte = codes[b * 8 + j];  // element 2j low nibble, 2j+1 high (N1.2)
      dst[(b * 16 + 2 * j) * dst_step] = num::mul(t.e2m1[byte & 15], scale);
      dst[(b * 16 + 2 * j + 1) * dst_step] = num::mul(t.e2m1[byte >> 4], scale);
    }
  }
}

// (rows, k) fp32 row-major.
std::vector<float> dequantize_matrix(const CodeRows& q, int64_t rows, int64_t k) {
  std::vector<float> out(static_cast<size_t>(rows * k));
  constexpr int64_t kChunk = 64;
  const int64_t chunks = (rows + kChunk - 1) / kChunk;
  gemm_detail::parallel_for(chunks, 4.0 * rows * k, [&](int64_t i) {
    for (int64_t r = i * kChunk; r < std::min(rows, (i + 1) * kChunk); ++r)
      dequantize_row(q, r, k, out.data() + r * k, 1);
  });
  return out;
}

// B (n, k) dequantized into column panels.
PackedB pack_b(const CodeRows& q, int64_t n, int64_t k) {
  PackedB p;
  p.n = n;
  p.k = k;
  p.data.assign(static_cast<size_t>(p.panels() * k * kPanelWidth), 0.0f);
  for (int64_t j = 0; j < n; ++j)
    dequantize_row(q, j, k, p.panel(j / kPanelWidth) + j % kPanelWidth, kPanelWidth);
  return p;
}

// ---- epilogue (N10) --------------------------------------------------------------------------
float global_factor(float amax, float bound) { return num::div(amax, num::mul(6.0f, bound)); }

uint16_t bf16_rne(float x) {
  const uint32_t u = num::bits(x);
  if (num::is_nan(x)) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

std::vector<float> bias_row(const TensorView& bias, int64_t row, int64_t n) {
  std::vector<float> r;
  if (!bias.defined()) return r;
  r.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    if (bias.dtype == DType::kFloat32) {
      r[j] = bias.ptr<float>()[row * n + j];
    } else {
      const uint16_t h = bias.ptr<uint16_t>()[row * n + j];  // bf16
      r[j] = num::from_bits(static_cast<uint32_t>(h) << 16);
    }
  }
  return r;
}

// How one row's accumulators become outputs.
struct RowScale {
  float s;                         // tensor/group scope: mul(gA, gB); row scope: mul(1/(6bA), gB)
  const float* row_amax;           // row scope: amax[m] (indexed by output row), else null
  const std::vector<float>* bias;  // (n) or empty
};

// out rows [r0, r1) (row r at out row out_row0 + r - r0) from the accumulators c (rows, n).
void write_rows(const float* c, int64_t ldc, int64_t r0, int64_t r1, int64_t n, const RowScale& rs,
                TensorView& out, int64_t out_row0) {
  const int64_t os = out.strides[out.ndim - 2];
  const bool has_bias = !rs.bias->empty();
  const bool f32 = out.dtype == DType::kFloat32;
  constexpr int64_t kChunk = 16;
  const int64_t chunks = (r1 - r0 + kChunk - 1) / kChunk;
  gemm_detail::parallel_for(chunks, 4.0 * (r1 - r0) * n, [&](int64_t ci) {
    std::vector<float> y(static_cast<size_t>(n));
    for (int64_t r = r0 + ci * kChunk; r < std::min(r1, r0 + (ci + 1) * kChunk); ++r) {
      const float* acc = c + (r - r0) * ldc;
      const int64_t orow = out_row0 + (r - r0);
      for (int64_t j = 0; j < n; ++j) y[j] = num::mul(acc[j], rs.s);
      if (rs.row_amax) {
        const float amax_r = rs.row_amax[r];
        for (int64_t j = 0; j < n; ++j) y[j] = num::mul(y[j], amax_r);
      }
      if (has_bias)
        for (int64_t j = 0; j < n; ++j) y[j] = num::add(y[j], (*rs.bias)[j]);
      if (f32) {
        std::memcpy(out.ptr<float>() + orow * os, y.data(), static_cast<size_t>(n) * 4);
      } else {
        uint16_t* o = out.ptr<uint16_t>() + orow * os;
        for (int64_t j = 0; j < n; ++j) o[j] = bf16_rne(y[j]);
      }
    }
  });
}

void zero_rows(TensorView& out, int64_t r0, int64_t r1, int64_t n) {
  const int64_t os = out.strides[out.ndim - 2];
  const int64_t es = dtype_size(out.dtype);
  for (int64_t r = r0; r < r1; ++r)
    std::memset(static_cast<char*>(out.data) + r * os * es, 0, static_cast<size_t>(n * es));
}

float amax_at(const QuantizedOperand& op, int64_t i) { return op.amax.ptr<float>()[i]; }

// The scale of A's rows for group g (or the tensor): tensor/group scope -> gA; row -> 1/(6bA).
float a_factor(const QuantizedOperand& a, int64_t g) {
  switch (a.scope) {
    case AmaxScope::kTensor:
      return global_factor(amax_at(a, 0), a.scale_bound);
    case AmaxScope::kGroup:
      return global_factor(amax_at(a, g), a.scale_bound);
    case AmaxScope::kRow:
      return num::div(1.0f, num::mul(6.0f, a.scale_bound));
  }
  return 0.0f;
}
float b_factor(const QuantizedOperand& b, int64_t g) {
  return global_factor(amax_at(b, b.scope == AmaxScope::kGroup ? g : 0), b.scale_bound);
}

}  // namespace

void gemm(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& bias,
          TensorView& out, const Context&) {
  const int64_t m = a.codes.size(0), k = a.codes.size(1) * 2, n = b.codes.size(0);
  const std::vector<float> fa = dequantize_matrix(code_rows(a, 0, 0), m, k);  // (M, K)
  const PackedB pb = pack_b(code_rows(b, 0, 0), n, k);                        // (N, K)
  std::vector<float> c(static_cast<size_t>(m * n));                           // (M, N) fp32
  gemm_detail::matmul_f32({MatmulJob{fa.data(), k, m, &pb, c.data(), n}});
  const std::vector<float> bias_f = bias_row(bias, 0, n);
  const RowScale rs{num::mul(a_factor(a, 0), b_factor(b, 0)),
                    a.scope == AmaxScope::kRow ? a.amax.ptr<float>() : nullptr, &bias_f};
  write_rows(c.data(), n, 0, m, n, rs, out, 0);
}

void grouped_gemm_m(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& offs,
                    const TensorView& bias, TensorView& out, const Context&) {
  const int64_t m = a.codes.size(0), k = a.codes.size(1) * 2;
  const int64_t e = b.codes.size(0), n = b.codes.size(1);
  const int32_t* off = offs.ptr<int32_t>();  // (E) validated on the host: non-decreasing, <= M
  const int64_t used = e > 0 ? off[e - 1] : 0;
  const std::vector<float> fa = dequantize_matrix(code_rows(a, 0, 0), used, k);  // (used, K)
  std::vector<float> c(static_cast<size_t>(used * n));                           // (used, N)
  std::vector<PackedB> packed(static_cast<size_t>(e));
  gemm_detail::parallel_for(e, 4.0 * e * n * k, [&](int64_t g) {
    if (off[g] != (g == 0 ? 0 : off[g - 1]))
      packed[g] = pack_b(code_rows(b, g * n, 0), n, k);  // expert g: (N, K)
  });
  std::vector<MatmulJob> jobs;
  for (int64_t g = 0; g < e; ++g) {
    const int64_t lo = g == 0 ? 0 : off[g - 1], hi = off[g];
    if (hi == lo) continue;  // empty group: nothing to write
    jobs.push_back({fa.data() + lo * k, k, hi - lo, &packed[g], c.data() + lo * n, n});
  }
  gemm_detail::matmul_f32(jobs);
  for (int64_t g = 0; g < e; ++g) {
    const int64_t lo = g == 0 ? 0 : off[g - 1], hi = off[g];
    if (hi == lo) continue;
    const std::vector<float> bias_f = bias_row(bias, g, n);
    const RowScale rs{num::mul(a_factor(a, g), b_factor(b, g)),
                      a.scope == AmaxScope::kRow ? a.amax.ptr<float>() : nullptr, &bias_f};
    write_rows(c.data() + lo * n, n, lo, hi, n, rs, out, lo);
  }
  zero_rows(out, used, m, n);  // rows past offs[E-1] (N11)
}

void grouped_gemm_k(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& offs,
                    TensorView& out, const Context&) {
  const int64_t n = a.codes.size(0), t = a.codes.size(1) * 2, k = b.codes.size(0);
  const int64_t e = offs.size(0);
  const int32_t* off = offs.ptr<int32_t>();  // (E) validated: non-decreasing, % 16 == 0, <= T
  std::vector<float> c(static_cast<size_t>(e * n * k));  // (E, N, K)
  // Per group: tokens [lo, hi) of a as a contiguous (N, T_g) matrix (a short row stride keeps
  // the kernel's rows in distinct cache sets) and of b packed as (K, T_g).
  std::vector<std::vector<float>> fa(static_cast<size_t>(e));
  std::vector<PackedB> packed(static_cast<size_t>(e));
  gemm_detail::parallel_for(e, 4.0 * (n + k) * t, [&](int64_t g) {
    const int64_t lo = g == 0 ? 0 : off[g - 1], hi = off[g];
    if (hi == lo) return;
    const CodeRows qa = code_rows(a, 0, lo);
    fa[g].resize(static_cast<size_t>(n * (hi - lo)));
    for (int64_t r = 0; r < n; ++r) dequantize_row(qa, r, hi - lo, fa[g].data() + r * (hi - lo), 1);
    packed[g] = pack_b(code_rows(b, 0, lo), k, hi - lo);
  });
  std::vector<MatmulJob> jobs;
  for (int64_t g = 0; g < e; ++g) {
    const int64_t lo = g == 0 ? 0 : off[g - 1], hi = off[g];
    if (hi == lo) continue;
    jobs.push_back({fa[g].data(), hi - lo, n, &packed[g], c.data() + g * n * k, k});
  }
  gemm_detail::matmul_f32(jobs);
  // out viewed as (E * N, K): group g owns rows [g * N, (g + 1) * N).
  TensorView out2 = out;
  out2.ndim = 2;
  out2.shape[0] = e * n;
  out2.shape[1] = k;
  out2.strides[0] = k;
  out2.strides[1] = 1;
  const std::vector<float> no_bias;
  for (int64_t g = 0; g < e; ++g) {
    const int64_t lo = g == 0 ? 0 : off[g - 1], hi = off[g];
    if (hi == lo) {
      zero_rows(out2, g * n, (g + 1) * n, k);  // empty group -> zero matrix (N11)
      continue;
    }
    const RowScale rs{num::mul(a_factor(a, g), b_factor(b, g)), nullptr, &no_bias};
    write_rows(c.data() + g * n * k, k, 0, n, k, rs, out2, g * n);
  }
}

}  // namespace f46::cpu
