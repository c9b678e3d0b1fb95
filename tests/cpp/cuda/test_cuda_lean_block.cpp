// lean_block (src/cuda/quantize/lean_bf16_block.cuh), the 1x16 block function of the lean bf16
// kernels (rowwise, row+col, 16x16 quad), run on the CPU. It is the same source that the kernels
// compile, with host forms of its three PTX instructions. It is compared bytewise with the CPU
// reference (f46::quantize on the host, docs/numerics.md) for every mode, so CI checks the lean
// arithmetic without a GPU: the fast path, the table entries and their limits, the blocks whose
// approximate errors do not decide (lean_exact_four) and those that take the reference path
// (lean_reference). Counted once with a temporary probe (2026-12-05), each error-rule mode's
// 42240 blocks took the three branches about 10.5 K (decided on the fast path), 3.4 K
// (undecided, exact errors) and 28.3 K times (reference: the extreme amaxes and scales); the
// plain rules took the fast path for about 17.5 K blocks. Removing the undecided test, or
// a wrong bit in the unpacking or the fast-path limit, makes these tests fail. The device runs
// of the same function are in test_cuda_quantize*.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/numerics.h"
#include "cuda/quantize/lean_bf16_block.cuh"
#include "test_helpers.h"
#include "test_quantize_util.h"

namespace f46::test {
namespace {

using cuda::QuantMode;

QuantizeConfig config_of(QuantMode m, float bound) {
  QuantizeConfig cfg;
  cfg.scale_bound = bound;
  switch (m) {
    case QuantMode::kMAE:
      cfg.rule = Rule::kMAE;
      break;
    case QuantMode::kMSE:
      cfg.rule = Rule::kMSE;
      break;
    case QuantMode::kAbsMax:
      cfg.rule = Rule::kAbsMax;
      break;
    case QuantMode::kAll6:
      cfg.rule = Rule::kAll6;
      break;
    case QuantMode::kAll4:
      cfg.rule = Rule::kAll4;
      break;
    case QuantMode::kGradient:
      cfg.rule = Rule::kAll6;
      cfg.gradient = true;
      break;
  }
  return cfg;
}

// Rows of 16 bf16 bit patterns, each row one block.
using Rows = std::vector<uint16_t>;

// The amax a caller would pass for `x`: max |x|, NaN if any element is NaN (N9).
float tensor_amax_of(const Rows& x) {
  std::vector<float> v;
  for (uint16_t h : x) v.push_back(bf16_to_float(h));
  return host_amax(v);
}

// lean_block on every row of x against the reference; returns the number of blocks compared.
template <QuantMode M>
int64_t check_rows(const Rows& x, float amax, float bound, const std::string& what) {
  const int64_t rows = static_cast<int64_t>(x.size() / 16);
  HostTensor t(DType::kBFloat16, std::vector<int64_t>{rows, 16});
  std::memcpy(t.data(), x.data(), x.size() * 2);
  const Quantized ref = quantize_host(t, tensor_amax(amax), config_of(M, bound));
  const auto* ref_codes = static_cast<const uint8_t*>(ref.codes.view().data);
  const auto* ref_scales = static_cast<const uint8_t*>(ref.scales.view().data);

  const cuda::GlobalScale g = cuda::global_scale(amax, bound);
  const cuda::ErrorConsts c = cuda::error_consts(bound);
  std::vector<cuda::LeanEntry> tab(256);
  for (uint32_t s = 0; s < 256; ++s) tab[s] = cuda::lean_entry<M>(s, g, c);
  for (int64_t r = 0; r < rows; ++r) {
    uint32_t w[8];
    for (int j = 0; j < 8; ++j)
      w[j] = x[16 * r + 2 * j] | (static_cast<uint32_t>(x[16 * r + 2 * j + 1]) << 16);
    const cuda::BlockCodes b = cuda::lean_block<M>(w, tab.data(), g, c);
    uint64_t want = 0;
    std::memcpy(&want, ref_codes + 8 * r, 8);  // element i in bits [4i, 4i + 4) (N1.2)
    if (b.codes != want || b.scale != ref_scales[r]) {
      std::string vals;
      for (int i = 0; i < 16; ++i) vals += std::to_string(bf16_to_float(x[16 * r + i])) + " ";
      ADD_FAILURE() << what << " mode " << static_cast<int>(M) << " bound " << bound << " amax "
                    << amax << " row " << r << ": codes " << std::hex << b.codes << " want " << want
                    << ", scale " << int{b.scale} << " want " << int{ref_scales[r]} << std::dec
                    << "\n  x: " << vals;
      return -1;
    }
  }
  return rows;
}

uint16_t bf16_of(float v) { return float_to_bf16(v); }

// Gaussian blocks scaled by 2^k over the whole exponent range (E4M3 sub-normal and saturated
// scales among them, bf16 sub-normals at the bottom), each row its own k.
Rows gaussian_rows(uint64_t seed, int rows) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-135, 126);
  Rows x;
  for (int r = 0; r < rows; ++r) {
    const float s = std::ldexp(1.0f, expo(gen));
    for (int i = 0; i < 16; ++i) x.push_back(bf16_of(normal(gen) * s));
  }
  return x;
}
// Training-like blocks: Gaussian or Student-t (3 degrees of freedom) values with a per-row scale
// within 2^+-6, so that nearly every block takes the fast path under the tensor's own amax.
Rows activation_rows(uint64_t seed, int rows) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::student_t_distribution<float> student(3.0f);
  std::uniform_real_distribution<float> expo(-6.0f, 6.0f);
  Rows x;
  for (int r = 0; r < rows; ++r) {
    const float s = std::exp2(expo(gen));
    const bool heavy = r % 2 == 1;
    for (int i = 0; i < 16; ++i) x.push_back(bf16_of((heavy ? student(gen) : normal(gen)) * s));
  }
  return x;
}
// Exact rounding ties: with amax = 6 * bound (S_enc = 1) and a block amax of 6 * 2^j the map-to-6
// scale is exactly 2^j, so x * inv lands on E2M1 grid points and midpoints (N5); the other
// elements are drawn from those values. Also blocks of one repeated value (both candidates
// exact: equal errors, the undecided path) and of two values.
Rows tie_rows(uint64_t seed, int rows) {
  static const float kPts[] = {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f,
                               2.0f, 2.5f,  3.0f, 3.5f,  4.0f, 5.0f,  6.0f};
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> pick(0, 14), expo(-9, 8), pos(0, 15), coin(0, 1), kind(0, 3);
  Rows x;
  for (int r = 0; r < rows; ++r) {
    const float s = std::ldexp(1.0f, expo(gen));
    const int k = kind(gen);
    const float a = kPts[pick(gen)], b = kPts[pick(gen)];
    for (int i = 0; i < 16; ++i) {
      float v = k == 0 ? a : (k == 1 ? (coin(gen) ? a : b) : kPts[pick(gen)]);
      x.push_back(bf16_of((coin(gen) ? -v : v) * s));
    }
    if (k >= 2) x[16 * r + pos(gen)] = bf16_of(6.0f * s);
  }
  return x;
}
// Special values: zeros of both signs, NaN, +-Inf, bf16 sub-normals, the largest bf16, mixed into
// small normal values.
Rows special_rows(uint64_t seed, int rows) {
  static const uint16_t kSpecial[] = {0x0000, 0x8000, 0x7FC0, 0xFFC1, 0x7F80, 0xFF80,
                                      0x0001, 0x807F, 0x7F7F, 0xFF7F, 0x0080, 0x3F80};
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> pick(0, 11), pos(0, 15), count(0, 3), kind(0, 2);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Rows x;
  for (int r = 0; r < rows; ++r) {
    const int k = kind(gen);
    for (int i = 0; i < 16; ++i) x.push_back(k == 0 ? 0x0000 : bf16_of(normal(gen)));
    for (int n = count(gen); n > 0; --n) x[16 * r + pos(gen)] = kSpecial[pick(gen)];
  }
  return x;
}
// Uniformly random bit patterns: every exponent, NaN payloads and infinities.
Rows random_bit_rows(uint64_t seed, int rows) {
  std::mt19937_64 gen(seed);
  Rows x;
  for (int i = 0; i < 16 * rows; ++i) x.push_back(static_cast<uint16_t>(gen()));
  return x;
}

template <QuantMode M>
void check_mode(float bound) {
  struct Family {
    const char* name;
    Rows x;
  };
  const Family families[] = {{"activations", activation_rows(10, 2048)},
                             {"gaussian", gaussian_rows(11, 768)},
                             {"ties", tie_rows(12, 768)},
                             {"special", special_rows(13, 384)},
                             {"random bits", random_bit_rows(14, 256)}};
  int64_t blocks = 0;
  for (const Family& f : families) {
    // The tensor's own amax, amaxes above and below it, and the edge cases of N2.
    const float own = tensor_amax_of(f.x);
    const float amaxes[] = {own,
                            num::mul(own, 1e-3f),
                            num::mul(own, 37.0f),
                            6.0f * bound,
                            0.0f,
                            1e-38f,
                            3.0e38f,
                            INFINITY,
                            num::from_bits(0x7FC00000u),  // +NaN and -NaN spelled out: the NAN
                            num::from_bits(0xFFC00000u),  // macro's sign differs by toolchain
                            1.0f};
    for (float a : amaxes) {
      const int64_t n = check_rows<M>(f.x, a, bound, f.name);
      ASSERT_GT(n, 0) << f.name << " amax " << a;
      blocks += n;
    }
  }
  EXPECT_EQ(blocks, (2048 + 768 + 768 + 384 + 256) * 11);
}

TEST(CudaLeanBlock, MaeEqualsReference) {
  check_mode<QuantMode::kMAE>(256.0f);
  check_mode<QuantMode::kMAE>(448.0f);
}
TEST(CudaLeanBlock, MseEqualsReference) {
  check_mode<QuantMode::kMSE>(256.0f);
  check_mode<QuantMode::kMSE>(448.0f);
}
TEST(CudaLeanBlock, AbsMaxEqualsReference) {
  check_mode<QuantMode::kAbsMax>(256.0f);
  check_mode<QuantMode::kAbsMax>(448.0f);
}
TEST(CudaLeanBlock, All6EqualsReference) {
  check_mode<QuantMode::kAll6>(256.0f);
  check_mode<QuantMode::kAll6>(448.0f);
}
TEST(CudaLeanBlock, All4EqualsReference) {
  check_mode<QuantMode::kAll4>(256.0f);
  check_mode<QuantMode::kAll4>(448.0f);
}
TEST(CudaLeanBlock, GradientEqualsReference) { check_mode<QuantMode::kGradient>(448.0f); }

// The host form of the packed bf16 maximum against unpacked FP32 maxima: NaN if either half is
// NaN, else the larger magnitude with the xor of the signs.
TEST(CudaLeanBlock, HostPackedBf16Max) {
  std::mt19937_64 gen(5);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t a = static_cast<uint32_t>(gen()), b = static_cast<uint32_t>(gen());
    const uint32_t r = cuda::bf16x2_absmax(a, b);
    for (int h = 0; h < 32; h += 16) {
      const float x = std::fabs(bf16_to_float(static_cast<uint16_t>(a >> h)));
      const float y = std::fabs(bf16_to_float(static_cast<uint16_t>(b >> h)));
      const float got = bf16_to_float(static_cast<uint16_t>((r >> h) & 0x7FFFu));
      if (x != x || y != y)
        ASSERT_TRUE(got != got) << std::hex << a << " " << b;
      else
        ASSERT_EQ(got, std::max(x, y)) << std::hex << a << " " << b;
      ASSERT_EQ((r >> h) & 0x8000u, x != x || y != y ? 0u : ((a ^ b) >> h) & 0x8000u);
    }
  }
}

}  // namespace
}  // namespace f46::test
