// CUDA dequantize (N8) vs the CPU reference, bitwise: every code and scale byte (NaN scales 0x7F
// and 0xFF, E4M3 sub-normals), global amaxes that make the decode factor zero, tiny (fp32 and
// fp16 sub-normal outputs), huge (fp16 overflow), Inf or NaN, tensor/row/group scopes, the three
// output dtypes, and padded rows of codes and outputs (src/cuda/dequantize/dequantize_kernels.cuh:
// the linear path for dense per-tensor operands, the hardware-conversion fast path for finite
// decode factors, the reference formula element by element otherwise). NaN outputs are compared
// as NaN (docs/numerics.md N8), everything else byte for byte.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"

namespace f46::test {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Random code bytes and scale bytes (every byte value in turn, so all 256 scales appear) of a
// (rows, cols) tensor, codes with row stride `codes_stride` (>= cols / 2).
struct Packed {
  HostTensor codes, scales;
};
Packed random_packed(int64_t rows, int64_t cols, int64_t codes_stride, uint32_t seed) {
  Packed p{HostTensor(DType::kUInt8, {rows, cols / 2}, codes_stride),
           HostTensor(DType::kUInt8, {rows, cols / 16})};
  std::mt19937 gen(seed);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols / 2; ++c) p.codes.set_at(r, c, static_cast<float>(gen() % 256));
    for (int64_t c = 0; c < cols / 16; ++c)
      p.scales.set_at(r, c, static_cast<float>((r * (cols / 16) + c + seed) % 256));
  }
  return p;
}

// Host and device outputs, (rows, cols) with row stride `out_stride`, compared byte for byte
// over the logical elements (padding excluded) except NaNs.
// NaN outputs (N8: NaN scale bytes, NaN amaxes, 0 * Inf) must be NaN on both; with `expect_nans`
// the case must have some.
void expect_same_dequantized(const Packed& p, const AmaxSpec& a, float bound, DType t,
                             int64_t out_stride, const std::string& what,
                             bool expect_nans = true) {
  const int64_t rows = p.codes.size(0), cols = p.codes.size(1) * 2;
  HostTensor host(t, {rows, cols}, out_stride), dev_like(t, {rows, cols}, out_stride);
  {
    GlobalAmaxOwner g(a);
    dequantize(p.codes.view(), p.scales.view(), g.get(), bound, host.view());
  }
  dev_like.fill_bytes(0xAB);
  DeviceTensor dc(p.codes), ds(p.scales), dout(dev_like);
  DeviceGlobalAmax g(a);
  dequantize(dc.view(), ds.view(), g.get(), bound, dout.view());
  const HostTensor dev = dout.to_host(dev_like);
  const int64_t es = dtype_size(t), stride = host.view().strides[0];
  int64_t nans = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* h = host.bytes().data() + r * stride * es;
    const uint8_t* d = dev.bytes().data() + r * stride * es;
    for (int64_t c = 0; c < cols; ++c) {
      const std::string at = what + " " + dtype_name(t) + " row " + std::to_string(r) + " col " +
                             std::to_string(c);
      if (std::isnan(host.at(r, c))) {  // N8: a NaN's sign and payload are not specified
        ASSERT_TRUE(std::isnan(dev.at(r, c))) << at << ": device " << dev.at(r, c);
        ++nans;
        continue;
      }
      ASSERT_EQ(std::memcmp(h + c * es, d + c * es, static_cast<size_t>(es)), 0)
          << at << ": host " << host.at(r, c) << " device " << dev.at(r, c);
    }
  }
  if (expect_nans) EXPECT_GT(nans, 0) << what;
}

const DType kOutTypes[] = {DType::kBFloat16, DType::kFloat16, DType::kFloat32};

TEST(CudaDequantize, TensorScopeAllBytesAndAmaxes) {
  F46_SKIP_WITHOUT_CUDA();
  const Packed p = random_packed(37, 208, 104, 1);
  for (float amax : {1.0f, 6.0f * 256.0f, 0.0f, 1e-30f, 3e-36f, 1e30f, 3e38f, kInf, kNaN})
    for (float bound : {256.0f, 448.0f})
      for (DType t : kOutTypes)
        expect_same_dequantized(p, tensor_amax(amax), bound, t, 0,
                                "amax " + std::to_string(amax) + " bound " + std::to_string(bound));
}

TEST(CudaDequantize, RowAndGroupScopes) {
  F46_SKIP_WITHOUT_CUDA();
  const int64_t rows = 37;
  const Packed p = random_packed(rows, 160, 80, 2);
  AmaxSpec row{AmaxScope::kRow, {}, {}, {}};
  std::mt19937 gen(3);
  for (int64_t r = 0; r < rows; ++r)
    row.amax.push_back(std::ldexp(1.0f + (gen() % 1000) / 1000.0f, static_cast<int>(gen() % 40) - 20));
  row.amax[3] = kNaN;
  row.amax[5] = kInf;
  row.amax[7] = 0.0f;
  row.amax[11] = 1e36f;
  AmaxSpec group{AmaxScope::kGroup, {2.5f, 7.0f, kNaN, 1e-20f}, {10, 10, 20, 30}, {}};
  for (DType t : kOutTypes) {
    expect_same_dequantized(p, row, 256.0f, t, 0, "row scope");
    expect_same_dequantized(p, group, 448.0f, t, 0, "group scope (rows 30.. in no group)");
  }
}

// Padded rows: codes with a row stride beyond cols / 2 and outputs with one beyond cols, aligned
// for whole-unit loads and 16-byte stores (the strided path) or not (element stores).
TEST(CudaDequantize, PaddedRows) {
  F46_SKIP_WITHOUT_CUDA();
  for (const int64_t codes_stride : {int64_t{48}, int64_t{51}}) {
    const Packed p = random_packed(29, 96, codes_stride, 4);
    for (DType t : kOutTypes)
      for (const int64_t out_stride : {int64_t{96}, int64_t{128}, int64_t{101}})
        expect_same_dequantized(p, tensor_amax(3.0f), 256.0f, t, out_stride,
                                "codes stride " + std::to_string(codes_stride) + " out stride " +
                                    std::to_string(out_stride));
  }
}

}  // namespace
}  // namespace f46::test
