// Ragged token groups end to end (N12 + N11): padding, per-group quantization and the grouped
// GEMMs give, bitwise, what the aligned construction (each group on its own) gives.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "gemm_test_util.h"

namespace f46::test {
namespace {

// Quantized outputs of x (rows, cols): rowwise (rows, cols) and/or columnwise (cols, rows).
struct Quantized {
  QMatrix rowwise, columnwise;
};

Quantized quantize_host(const TensorView& x, const GlobalAmax& amax, const QuantizeConfig& cfg) {
  const int64_t r = x.size(0), c = x.size(1);
  Quantized q;
  QuantizedOutputs out;
  if (cfg.rowwise) {
    q.rowwise.rows = r;
    q.rowwise.k = c;
    q.rowwise.codes = HostTensor(DType::kUInt8, {r, c / 2});
    q.rowwise.scales = HostTensor(DType::kUInt8, {r, c / 16});
    out.codes = q.rowwise.codes.view();
    out.scales = q.rowwise.scales.view();
  }
  if (cfg.columnwise) {
    q.columnwise.rows = c;
    q.columnwise.k = r;
    q.columnwise.codes = HostTensor(DType::kUInt8, {c, r / 2});
    q.columnwise.scales = HostTensor(DType::kUInt8, {c, r / 16});
    out.codes_t = q.columnwise.codes.view();
    out.scales_t = q.columnwise.scales.view();
  }
  quantize(x, amax, cfg, out);
  return q;
}

HostTensor group_amax(const TensorView& x, const HostTensor& offs) {
  HostTensor a(DType::kFloat32, {offs.size(0)});
  AmaxConfig cfg;
  cfg.scope = AmaxScope::kGroup;
  cfg.offsets = offs.view();
  amax(x, cfg, a);
  return a;
}

std::vector<int32_t> cumulative(const std::vector<int32_t>& sizes) {
  std::vector<int32_t> offs(sizes.size());
  std::partial_sum(sizes.begin(), sizes.end(), offs.begin());
  return offs;
}

struct PaddedCase {
  int64_t m, k, n;
  std::vector<int32_t> sizes;  // sum <= m; rows past the sum are non-zero junk
  int64_t alignment;
};

class PaddedGroups : public testing::TestWithParam<PaddedCase> {};

// Forward: pad -> group-scope quantize -> grouped_gemm_m -> unpad == the same on ragged groups.
TEST_P(PaddedGroups, ForwardOnPaddedGroupsEqualsRaggedGroups) {
  const PaddedCase& pc = GetParam();
  const int64_t e = static_cast<int64_t>(pc.sizes.size());
  HostTensor x = random_matrix(DType::kBFloat16, pc.m, pc.k, 1, Dist::kStudentT);
  HostTensor offs = int_tensor(cumulative(pc.sizes));
  QMatrix w = random_qmatrix(pc.n, pc.k, 2, e);
  HostTensor w_amax = float_tensor(random_amax(e, 3));
  QuantizeConfig cfg;  // 4/6 MAE, bound 256, rowwise

  // Ragged groups directly.
  HostTensor amax_r = group_amax(x, offs);
  Quantized qr = quantize_host(x, {AmaxScope::kGroup, amax_r.view(), {}, offs.view()}, cfg);
  HostTensor y_ragged(DType::kBFloat16, {pc.m, pc.n});
  grouped_gemm_m(operand(qr.rowwise, amax_r, AmaxScope::kGroup, 256),
                 operand(w, w_amax, AmaxScope::kGroup, 256), offs, {}, y_ragged);

  // Padded groups.
  const int64_t p = padded_rows(pc.m, e, pc.alignment);
  HostTensor xp(DType::kBFloat16, {p, pc.k}), poffs(DType::kInt32, {e});
  pad_token_groups(x, offs, pc.alignment, xp, poffs);
  HostTensor amax_p = group_amax(xp, poffs);
  for (int64_t g = 0; g < e; ++g)
    ASSERT_TRUE(same_bits(amax_p.ptr<float>()[g], amax_r.ptr<float>()[g])) << "amax " << g;
  Quantized qp = quantize_host(xp, {AmaxScope::kGroup, amax_p.view(), {}, poffs.view()}, cfg);
  HostTensor yp(DType::kBFloat16, {p, pc.n});
  grouped_gemm_m(operand(qp.rowwise, amax_p, AmaxScope::kGroup, 256),
                 operand(w, w_amax, AmaxScope::kGroup, 256), poffs, {}, yp);
  HostTensor y(DType::kBFloat16, {pc.m, pc.n});
  unpad_token_groups(yp, offs, poffs, y);

  EXPECT_EQ(0, std::memcmp(y.bytes().data(), y_ragged.bytes().data(), y.bytes().size()));
  // The padded rows of the GEMM output are zero (zero rows quantize to zero codes).
  HostTensor y_again(DType::kBFloat16, {p, pc.n});
  pad_token_groups(y, offs, pc.alignment, y_again, poffs);
  EXPECT_EQ(0, std::memcmp(y_again.bytes().data(), yp.bytes().data(), yp.bytes().size()));
}

// Wgrad: pad to 16 -> columnwise group-scope quantize of dY and X -> grouped_gemm_k == each
// group padded and quantized on its own, then a dense GEMM.
TEST_P(PaddedGroups, WgradOnPaddedGroupsEqualsPerGroupConstruction) {
  const PaddedCase& pc = GetParam();
  const int64_t e = static_cast<int64_t>(pc.sizes.size());
  const std::vector<int32_t> offs_v = cumulative(pc.sizes);
  HostTensor dy = random_matrix(DType::kBFloat16, pc.m, pc.n, 4, Dist::kGaussian, 0.01f);
  HostTensor x = random_matrix(DType::kBFloat16, pc.m, pc.k, 5, Dist::kStudentT);
  HostTensor offs = int_tensor(offs_v);
  const int64_t a = 16;  // columnwise blocks must not straddle groups
  const int64_t p = padded_rows(pc.m, e, a);
  HostTensor dyp(DType::kBFloat16, {p, pc.n}), xp(DType::kBFloat16, {p, pc.k});
  HostTensor poffs(DType::kInt32, {e}), poffs2(DType::kInt32, {e});
  pad_token_groups(dy, offs, a, dyp, poffs);
  pad_token_groups(x, offs, a, xp, poffs2);
  QuantizeConfig gcfg;  // standard NVFP4 gradients (N4)
  gcfg.gradient = true;
  gcfg.rule = Rule::kAll6;
  gcfg.scale_bound = 448;
  gcfg.rowwise = false;
  gcfg.columnwise = true;
  QuantizeConfig xcfg;  // 4/6 MAE bound 256
  xcfg.rowwise = false;
  xcfg.columnwise = true;
  HostTensor amax_dy = group_amax(dyp, poffs), amax_x = group_amax(xp, poffs);
  Quantized qdy = quantize_host(dyp, {AmaxScope::kGroup, amax_dy.view(), {}, poffs.view()}, gcfg);
  Quantized qx = quantize_host(xp, {AmaxScope::kGroup, amax_x.view(), {}, poffs.view()}, xcfg);
  HostTensor dw(DType::kBFloat16, {e, pc.n, pc.k});
  dw.fill_bytes(0x77);
  grouped_gemm_k(operand(qdy.columnwise, amax_dy, AmaxScope::kGroup, 448),
                 operand(qx.columnwise, amax_x, AmaxScope::kGroup, 256), poffs, dw);

  const size_t mat = static_cast<size_t>(pc.n * pc.k * 2);
  for (int64_t g = 0; g < e; ++g) {
    const int64_t lo = g ? offs_v[g - 1] : 0, size = offs_v[g] - lo;
    const uint8_t* got = dw.bytes().data() + g * mat;
    if (size == 0) {
      for (size_t i = 0; i < mat; ++i) ASSERT_EQ(got[i], 0) << "empty group " << g;
      continue;
    }
    const int64_t rows = (size + 15) / 16 * 16;  // the group alone, zero-padded to 16
    HostTensor dyg(DType::kBFloat16, {rows, pc.n}), xg(DType::kBFloat16, {rows, pc.k});
    std::memcpy(dyg.data(), dy.bytes().data() + lo * pc.n * 2, size * pc.n * 2);
    std::memcpy(xg.data(), x.bytes().data() + lo * pc.k * 2, size * pc.k * 2);
    HostTensor ady(DType::kFloat32, {1}), ax(DType::kFloat32, {1});
    amax(dyg, AmaxConfig{}, ady);
    amax(xg, AmaxConfig{}, ax);
    Quantized gdy = quantize_host(dyg, {AmaxScope::kTensor, ady.view(), {}, {}}, gcfg);
    Quantized gx = quantize_host(xg, {AmaxScope::kTensor, ax.view(), {}, {}}, xcfg);
    HostTensor dense(DType::kBFloat16, {pc.n, pc.k});
    gemm(operand(gdy.columnwise, ady, AmaxScope::kTensor, 448),
         operand(gx.columnwise, ax, AmaxScope::kTensor, 256), {}, dense);
    ASSERT_EQ(0, std::memcmp(dense.bytes().data(), got, mat)) << "group " << g;
  }
}

const PaddedCase kPaddedCases[] = {
    {50, 64, 32, {7, 0, 20, 13}, 8},
    {40, 32, 16, {1, 1, 1}, 128},
    {33, 48, 48, {33}, 16},
    {90, 128, 80, {0, 17, 16, 0, 31, 2}, 3},
};
INSTANTIATE_TEST_SUITE_P(Cases, PaddedGroups, testing::ValuesIn(kPaddedCases));

}  // namespace
}  // namespace f46::test
