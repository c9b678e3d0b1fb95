// Quantize a small float32 tensor to NVFP4 with Four Over Six (4/6) block selection, print the
// packed E2M1 codes and E4M3 block scales of each 16-element block, dequantize, and show the
// f46::Error a bad shape gives. CPU only; the numbers are those of docs/numerics.md.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "f46/f46.h"

namespace {

// E2M1 value of a 4-bit code (N1.1): sign bit 3, magnitude index bits 0-2.
float e2m1_value(int code) {
  static const float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  return (code & 8) ? -kMagnitude[code & 7] : kMagnitude[code & 7];
}

// E4M3 value of a non-negative finite scale byte (N1.3): exponent bias 7, sub-normals m * 2^-9.
float e4m3_value(uint8_t byte) {
  const int e = (byte >> 3) & 15, m = byte & 7;
  return e == 0 ? std::ldexp(static_cast<float>(m), -9) : std::ldexp(8.0f + m, e - 10);
}

}  // namespace

int main() {
  std::printf("f46 %s\n", f46::version());
  constexpr int64_t kRows = 2, kCols = 32;  // two rows of two 16-element blocks each

  // x (2, 32) float32: a ramp in row 0; in row 1 a sine with one outlier per block.
  std::vector<float> x(kRows * kCols);
  for (int64_t c = 0; c < kCols; ++c) {
    x[c] = -3.0f + 0.2f * static_cast<float>(c);
    x[kCols + c] = c == 3 ? 6.0f : c == 19 ? 2.5f : std::sin(static_cast<float>(c));
  }
  const f46::TensorView xv = f46::make_view(x.data(), f46::DType::kFloat32, {kRows, kCols});

  // The global (second-level) scale comes from the tensor's amax (N2, N9).
  float amax = 0.0f;
  f46::TensorView amax_v = f46::make_view(&amax, f46::DType::kFloat32, {1});
  f46::amax(xv, f46::AmaxConfig{}, amax_v);
  std::printf("amax = %g\n", amax);

  // 4/6 with the MAE rule and scale bound 256: each block keeps the map-to-6 or map-to-4 scale,
  // whichever reconstructs it with the smaller absolute error (N3).
  f46::QuantizeConfig cfg;
  cfg.rule = f46::Rule::kMAE;
  cfg.scale_bound = 256.0f;
  f46::GlobalAmax global;
  global.scope = f46::AmaxScope::kTensor;
  global.amax = amax_v;

  std::vector<uint8_t> codes(kRows * kCols / 2);    // (R, C/2): element 2i low nibble, 2i+1 high
  std::vector<uint8_t> scales(kRows * kCols / 16);  // (R, C/16): one E4M3 byte per block
  f46::QuantizedOutputs out;
  out.codes = f46::make_view(codes.data(), f46::DType::kUInt8, {kRows, kCols / 2});
  out.scales = f46::make_view(scales.data(), f46::DType::kUInt8, {kRows, kCols / 16});
  f46::quantize(xv, global, cfg, out);

  // Dequantize: value = e2m1(code) * e4m3(scale) * amax / (6 * bound) (N8).
  std::vector<float> y(kRows * kCols);
  f46::TensorView yv = f46::make_view(y.data(), f46::DType::kFloat32, {kRows, kCols});
  f46::dequantize(out.codes, out.scales, global, cfg.scale_bound, yv);

  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t b = 0; b < kCols / 16; ++b) {
      const uint8_t s = scales[r * (kCols / 16) + b];
      float largest = 0.0f;  // 6 when the block kept map-to-6, 4 when it kept map-to-4
      std::printf("row %lld block %lld: scale byte 0x%02X (%g)\n  codes :",
                  static_cast<long long>(r), static_cast<long long>(b), s, e4m3_value(s));
      for (int64_t i = 0; i < 16; ++i) {
        const int64_t c = b * 16 + i;
        const uint8_t pair = codes[r * (kCols / 2) + c / 2];
        const int code = (c % 2) ? pair >> 4 : pair & 15;
        largest = std::fmax(largest, std::fabs(e2m1_value(code)));
        std::printf(" %x", code);
      }
      double err = 0.0;
      std::printf("\n  x     :");
      for (int64_t i = 0; i < 16; ++i) std::printf(" %5.2f", x[r * kCols + b * 16 + i]);
      std::printf("\n  deq(x):");
      for (int64_t i = 0; i < 16; ++i) {
        const int64_t k = r * kCols + b * 16 + i;
        std::printf(" %5.2f", y[k]);
        err += std::fabs(static_cast<double>(y[k]) - x[k]);
      }
      std::printf("\n  largest |code value| %g (map-to-%d), mean |error| %.4f\n", largest,
                  largest == 4.0f ? 4 : 6, err / 16);
    }
  }

  // Invalid arguments throw f46::Error naming the argument: rowwise output needs C % 16 == 0.
  try {
    const f46::TensorView bad = f46::make_view(x.data(), f46::DType::kFloat32, {4, 8});
    f46::quantize(bad, global, cfg, out);
    std::printf("expected an f46::Error\n");
    return 1;
  } catch (const f46::Error& e) {
    std::printf("f46::Error as expected: %s\n", e.what());
  }
  return 0;
}
