// One M-grouped (or dense) NVFP4 GEMM problem run with a forced CUDA plan, and the checks every
// plan owes (docs/numerics.md N10, N11): the FP64 reference, plan (a)'s bits, rows past the last
// offset zero, each group equal to the dense GEMM on its rows. Used by the plan (b) and plan (c)
// tests (test_cuda_gemm_fused.cpp, test_cuda_gemm_w4.cpp).
#pragma once

#include <string>
#include <vector>

#include "cuda/test_cuda_gemm_util.h"

namespace f46::test {

inline Context forced_plan(GemmPlan p) {
  Context ctx;
  ctx.gemm.plan = p;
  return ctx;
}

struct PlanProblemSpec {
  int64_t m, n, k;
  std::vector<int32_t> sizes;  // rows per group; empty: the dense GEMM
  AmaxScope a_scope, b_scope;
  int scale_lo, scale_hi;  // E4M3 scale bytes drawn from [lo, hi] (0: subnormals occur)
  uint64_t seed;           // operands: seed + m (A), seed + 100 + n (B); amaxes seed + 1, + 2
};

class PlanProblem {
 public:
  explicit PlanProblem(const PlanProblemSpec& s) : spec(s) {
    dense = s.sizes.empty();
    e = dense ? 1 : static_cast<int64_t>(s.sizes.size());
    offs_v = dense ? std::vector<int32_t>{static_cast<int32_t>(s.m)} : cumulative(s.sizes);
    a = random_qmatrix(s.m, s.k, s.seed + s.m, 0, s.scale_lo, s.scale_hi);
    b = random_qmatrix(s.n, s.k, s.seed + 100 + s.n, dense ? 0 : e, s.scale_lo, s.scale_hi);
    amax_a = float_tensor(random_amax(s.a_scope == AmaxScope::kGroup ? e : 1, s.seed + 1));
    amax_b = float_tensor(random_amax(s.b_scope == AmaxScope::kGroup ? e : 1, s.seed + 2));
  }

  HostTensor run(GemmPlan plan, DType out_dtype) const {
    DeviceOperand da(a, amax_a, spec.a_scope, 256), db(b, amax_b, spec.b_scope, 448);
    GemmDeviceTensor dout(garbage(out_dtype, {spec.m, spec.n}));
    if (dense) {
      gemm(da.op, db.op, TensorView{}, dout.view(), forced_plan(plan));
    } else {
      GemmDeviceTensor doffs(int_tensor(offs_v));
      grouped_gemm_m(da.op, db.op, doffs.view(), TensorView{}, dout.view(), forced_plan(plan));
    }
    cuda_ok(cudaDeviceSynchronize());
    return dout.download();
  }

  // Relative Frobenius error of out against the FP64 reference (every row for small cases, a
  // spread of rows, each tile row position, for large ones).
  double fp64_error(const HostTensor& out) const {
    const int64_t step = spec.m * spec.n * spec.k > (int64_t{1} << 26) ? 37 : 1;
    std::vector<float> got;
    std::vector<double> want;
    for (int64_t i = 0; i < spec.m; i += step) {
      const int g = group_of(i);
      for (int64_t j = 0; j < spec.n; ++j) {
        got.push_back(out.at(i, j));
        want.push_back(g < 0 ? 0.0 : global(g) * dot_ref(a, 0, i, b, dense ? 0 : g, j, 0, spec.k));
      }
    }
    return rel_frobenius(got, want);
  }

  // Rows whose bytes differ between x and y; first: the first such row (-1: none).
  int64_t differing_rows(const HostTensor& x, const HostTensor& y, int64_t& first) const {
    const int64_t row = spec.n * dtype_size(x.dtype());
    int64_t count = 0;
    first = -1;
    for (int64_t i = 0; i < spec.m; ++i) {
      if (!bytes_equal(x, i * row, y, i * row, row)) {
        if (first < 0) first = i;
        ++count;
      }
    }
    return count;
  }

  // The first nonzero byte of the rows past the last offset (-1: all zero).
  int64_t nonzero_past_groups(const HostTensor& out) const {
    const int64_t es = dtype_size(out.dtype());
    for (int64_t i = offs_v.back() * spec.n * es; i < spec.m * spec.n * es; ++i)
      if (out.bytes()[i] != 0) return i;
    return -1;
  }

  // Each nonempty group of out equals the dense GEMM on its rows (same plan), bitwise.
  void expect_groups_equal_dense(const HostTensor& out, GemmPlan plan) const {
    const int64_t es = dtype_size(out.dtype()), row = spec.n * es;
    int64_t lo = 0;
    for (int64_t g = 0; g < e; ++g) {
      const int64_t hi = offs_v[g];
      if (hi == lo) continue;
      QMatrix ag = slice_rows(a, lo, hi), bg = slice_rows(b, 0, spec.n, g);
      HostTensor am =
          float_tensor({amax_a.ptr<float>()[spec.a_scope == AmaxScope::kGroup ? g : 0]});
      HostTensor bm =
          float_tensor({amax_b.ptr<float>()[spec.b_scope == AmaxScope::kGroup ? g : 0]});
      DeviceOperand da(ag, am, AmaxScope::kTensor, 256), db(bg, bm, AmaxScope::kTensor, 448);
      GemmDeviceTensor dout(garbage(out.dtype(), {hi - lo, spec.n}));
      gemm(da.op, db.op, TensorView{}, dout.view(), forced_plan(plan));
      const HostTensor d = dout.download();
      for (int64_t i = 0; i < hi - lo; ++i)
        ASSERT_TRUE(bytes_equal(d, i * row, out, (lo + i) * row, row))
            << "group " << g << " row " << lo + i;
      lo = hi;
    }
  }

  int group_of(int64_t row) const {
    for (int g = 0; g < e; ++g)
      if (row < offs_v[g]) return g;
    return -1;
  }

  PlanProblemSpec spec;
  bool dense = false;
  int64_t e = 0;
  std::vector<int32_t> offs_v;
  QMatrix a, b;
  HostTensor amax_a, amax_b;

 private:
  // gA * gB of group g (N10).
  double global(int g) const {
    const double ga = amax_a.ptr<float>()[spec.a_scope == AmaxScope::kGroup ? g : 0] / (6.0 * 256);
    const double gb = amax_b.ptr<float>()[spec.b_scope == AmaxScope::kGroup ? g : 0] / (6.0 * 448);
    return ga * gb;
  }
};

}  // namespace f46::test
