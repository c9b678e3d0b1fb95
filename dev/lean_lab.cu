// Lab for the bf16 lean quantizers (dev/, not built by CMake): the lean rows kernels
// (quantize_lean.cuh, with L2 prefetches) against the general rows kernel, and the src lean
// row+col kernel (quantize_rowcol.cuh, at 4 / 5 / 3 CTAs), its group form
// dev/lean_rowcol_group.cuh and the src quad kernel (run length and CTA variants) against the
// tile kernel, in one process. Every variant's codes and scales are compared bytewise with its
// reference's (which the CUDA test suite checks against the CPU reference), then timed like
// bench/bench_quantize.cu (CUDA events, median, two rotating inputs larger than L2) against a
// device copy measured in the same run.
//   nvcc -std=c++20 -arch=sm_90a -O3 --fmad=false --expt-relaxed-constexpr -Isrc -Iinclude \
//        dev/lean_lab.cu src/cuda/device.cpp -o /tmp/lean_lab && /tmp/lean_lab [iters]
// Sections (environment): LAB_MAE_ONLY (rowwise MAE, first shape), LAB_ROWS_ONLY (rowwise MAE
// and MSE), LAB_NO_RC (rowwise MAE, MSE, all6), LAB_RC_ONLY (row+col and 16x16),
// LAB_RC_GROUP_ONLY (row+col with the bench's 128 groups: the tile kernel against
// dev/lean_rowcol_group.cuh), LAB_T16_ONLY (16x16 only: the tile kernel against the quad
// kernel). The lab kernels measured before (table layouts, the 16x16 layouts, the TMA-staged
// rows kernel) are in docs/lab_log.md and git history. The binary can be built here and carried
// to the device (no nvcc run there): dev/ncu_lab.sh profiles one kernel.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../bench/bench_util.h"
#include "cuda/quantize/quantize_launch_impl.cuh"
#include "cuda/quantize/quantize_lean.cuh"
#include "lean_rowcol_group.cuh"

namespace {
using namespace f46::cuda;

double median_us(int iters, const std::function<void(int)>& fn) {  // default stream
  return f46::bench::median_us(0, iters, fn);
}
using f46::bench::fill_bf16;

template <typename K>
int resident(K kernel, int threads) {
  int dev = 0, sms = 0, per = 0;
  BENCH_CUDA(cudaGetDevice(&dev));
  BENCH_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  BENCH_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, threads, 0));
  return sms * per;
}

struct Variant {
  const char* name;
  std::function<void(const QuantizeParams&)> launch;
};

// One block per thread per step, the grid clamped to the CTAs resident at once.
template <int kThreads, typename K>
void launch_blocks(K kernel, const QuantizeParams& p) {
  const int64_t total = p.rows * (p.cols / 16);
  const int grid = std::min<int64_t>((total + kThreads - 1) / kThreads, resident(kernel, kThreads));
  kernel<<<grid, kThreads>>>(p);
}

template <QuantMode M>
std::vector<Variant> variants() {
  std::vector<Variant> v;
  v.push_back({"rows kernel (reference)", [](const QuantizeParams& p) {
                 launch_blocks<kRowThreads>(quantize_rows_kernel<Bf16, M>, p);
               }});
  v.push_back({"lean kernel (src)", [](const QuantizeParams& p) {
                 launch_blocks<kLeanThreads>(quantize_rows_lean_kernel<M>, p);
               }});
  v.push_back({"lean tensor kernel (src)", [](const QuantizeParams& p) {
                 launch_blocks<kLeanThreads>(quantize_rows_lean_tensor_kernel<M>, p);
               }});
  // The src tensor kernel asking L2 for the block 1 / 2 / 4 grid strides past its register load
  // (kL2Ahead; one grid stride is ~2.7 MB of x on an H200 at 5 CTAs per SM).
  v.push_back({"tensor kernel, L2 prefetch +1 stride", [](const QuantizeParams& p) {
                 launch_blocks<kLeanThreads>(quantize_rows_lean_tensor_kernel<M, 5, 1>, p);
               }});
  v.push_back({"tensor kernel, L2 prefetch +2 strides", [](const QuantizeParams& p) {
                 launch_blocks<kLeanThreads>(quantize_rows_lean_tensor_kernel<M, 5, 2>, p);
               }});
  v.push_back({"tensor kernel, L2 prefetch +4 strides", [](const QuantizeParams& p) {
                 launch_blocks<kLeanThreads>(quantize_rows_lean_tensor_kernel<M, 5, 4>, p);
               }});
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 30;
  const size_t cb = size_t{512} << 20;
  void *ca, *cc;
  BENCH_CUDA(cudaMalloc(&ca, cb));
  BENCH_CUDA(cudaMalloc(&cc, cb));
  BENCH_CUDA(cudaMemset(ca, 0, cb));
  const double copy_us = median_us(
      iters, [&](int) { BENCH_CUDA(cudaMemcpyAsync(cc, ca, cb, cudaMemcpyDeviceToDevice)); });
  const double copy_gbs = 2.0 * cb / copy_us * 1e-3;
  cudaFree(ca);
  cudaFree(cc);
  std::printf(
      "device copy %.1f GB/s\n\n| variant | mode | shape | us | fraction of copy | equal "
      "|\n|---|---|---|---|---|---|\n",
      copy_gbs);
  const int64_t shapes[][2] = {{8192, 5120}, {16384, 7168}, {65536, 2048}};
  bool all_equal = true;
  for (const auto& sh : shapes) {
    const int64_t R = sh[0], C = sh[1], n = R * C;
    void* x[2];
    for (int i = 0; i < 2; ++i) {
      BENCH_CUDA(cudaMalloc(&x[i], n * 2));
      fill_bf16(x[i], n, 17u + i);
    }
    uint8_t *codes, *scales, *ref_codes, *ref_scales;
    float* amax;
    BENCH_CUDA(cudaMalloc(&codes, n / 2));
    BENCH_CUDA(cudaMalloc(&scales, n / 16));
    BENCH_CUDA(cudaMalloc(&ref_codes, n / 2));
    BENCH_CUDA(cudaMalloc(&ref_scales, n / 16));
    BENCH_CUDA(cudaMalloc(&amax, 4));
    const float a = 3.0f;
    BENCH_CUDA(cudaMemcpy(amax, &a, 4, cudaMemcpyHostToDevice));
    auto params = [&](int i, uint8_t* c, uint8_t* s) {
      QuantizeParams p;
      p.x = x[i % 2];
      p.x_stride = C;
      p.rows = R;
      p.cols = C;
      p.vec_load = true;
      p.amax = amax;
      p.bound = 256.0f;
      p.codes = c;
      p.codes_stride = C / 2;
      p.scales = s;
      p.scales_stride = C / 16;
      return p;
    };
    auto run_mode = [&](const char* mode_name, std::vector<Variant> vs, float bound) {
      std::vector<uint8_t> rc(n / 2), rs(n / 16), vc(n / 2), vsc(n / 16);
      for (size_t k = 0; k < vs.size(); ++k) {
        BENCH_CUDA(cudaMemset(codes, 0xAB, n / 2));
        BENCH_CUDA(cudaMemset(scales, 0xAB, n / 16));
        QuantizeParams p = params(0, codes, scales);
        p.bound = bound;
        vs[k].launch(p);
        BENCH_CUDA(cudaGetLastError());
        BENCH_CUDA(cudaDeviceSynchronize());
        bool eq = true;
        if (k == 0) {
          BENCH_CUDA(cudaMemcpy(rc.data(), codes, n / 2, cudaMemcpyDeviceToHost));
          BENCH_CUDA(cudaMemcpy(rs.data(), scales, n / 16, cudaMemcpyDeviceToHost));
        } else {
          BENCH_CUDA(cudaMemcpy(vc.data(), codes, n / 2, cudaMemcpyDeviceToHost));
          BENCH_CUDA(cudaMemcpy(vsc.data(), scales, n / 16, cudaMemcpyDeviceToHost));
          eq = vc == rc && vsc == rs;
          all_equal = all_equal && eq;
        }
        const double us = median_us(iters, [&](int i) {
          QuantizeParams q = params(i, codes, scales);
          q.bound = bound;
          vs[k].launch(q);
        });
        const double bytes = 2.0 * n + n / 2.0 + n / 16.0;
        std::printf("| %s | %s | %lldx%lld | %.1f | %.3f | %s |\n", vs[k].name, mode_name,
                    (long long)R, (long long)C, us, bytes / us * 1e-3 / copy_gbs,
                    k == 0 ? "ref" : (eq ? "yes" : "NO"));
        std::fflush(stdout);
      }
    };
    const bool t16_only = std::getenv("LAB_T16_ONLY") != nullptr;         // 16x16 only
    const bool group_only = std::getenv("LAB_RC_GROUP_ONLY") != nullptr;  // group row+col only
    const bool rc_only = t16_only || group_only || std::getenv("LAB_RC_ONLY");
    if (!rc_only) {
      run_mode("MAE", variants<QuantMode::kMAE>(), 256.0f);
      if (std::getenv("LAB_MAE_ONLY")) return all_equal ? 0 : 1;  // (profiling: one shape, MAE)
      run_mode("MSE", variants<QuantMode::kMSE>(), 256.0f);
      if (std::getenv("LAB_ROWS_ONLY")) continue;  // rowwise MAE / MSE only
      run_mode("all6", variants<QuantMode::kAll6>(), 256.0f);
      if (std::getenv("LAB_NO_RC")) continue;  // rowwise modes only
    }
    // Row + col: the tile kernel (reference) against the lean row+col kernel.
    uint8_t *codes_t, *scales_t;
    BENCH_CUDA(cudaMalloc(&codes_t, n / 2));
    BENCH_CUDA(cudaMalloc(&scales_t, n / 16));
    // Row+col params of input i (codes_t, scales_t contiguous).
    auto rc_params = [&](int i, float bound, bool pair_cols) {
      QuantizeParams q = params(i, codes, scales);
      q.bound = bound;
      q.columnwise = true;
      q.codes_t = codes_t;
      q.codes_t_stride = R / 2;
      q.scales_t = scales_t;
      q.scales_t_stride = R / 16;
      q.wide_rows = q.wide_cols = true;
      q.pair_cols = pair_cols;
      return q;
    };
    // The tile kernel, every row+col variant's reference (`shared`: staged group offsets).
    auto launch_tile = [&](const QuantizeParams& q, QuantMode m, bool tile16, size_t shared) {
      QuantizeLaunch l;
      l.mode = m;
      l.tile_kernel = true;
      l.tile16 = tile16;
      l.shared_bytes = shared;
      const int64_t seg = (q.pair_cols ? 2 : 1) * kUnitRows;
      const int64_t units = (R + seg - 1) / seg * ((C + kUnitCols - 1) / kUnitCols);
      l.grid = dim3(static_cast<unsigned>((units + kTileWarps - 1) / kTileWarps));
      launch_quantize<Bf16>(q, l, 0);
    };
    // Variant k's four outputs (k == 0: the reference, kept in `ref`) compared bytewise with the
    // reference's, then its median time; printed as a table row.
    auto check_rc = [&](int k, const std::function<void(int)>& launch,
                        std::vector<uint8_t>(&ref)[4], const char* name, const std::string& mode) {
      uint8_t* bufs[4] = {codes, scales, codes_t, scales_t};
      const int64_t sizes[4] = {n / 2, n / 16, n / 2, n / 16};
      for (int b = 0; b < 4; ++b) BENCH_CUDA(cudaMemset(bufs[b], 0xAB, sizes[b]));
      launch(0);
      BENCH_CUDA(cudaDeviceSynchronize());
      bool eq = true;
      for (int b = 0; b < 4; ++b) {
        std::vector<uint8_t> got(sizes[b]);
        BENCH_CUDA(cudaMemcpy(got.data(), bufs[b], sizes[b], cudaMemcpyDeviceToHost));
        if (k == 0)
          ref[b] = got;
        else
          eq = eq && got == ref[b];
      }
      if (k >= 1) all_equal = all_equal && eq;
      const double us = median_us(iters, launch);
      const double bytes = 2.0 * n + 2 * (n / 2.0 + n / 16.0);
      std::printf("| %s | %s | %lldx%lld | %.1f | %.3f | %s |\n", name, mode.c_str(), (long long)R,
                  (long long)C, us, bytes / us * 1e-3 / copy_gbs,
                  k == 0 ? "ref" : (eq ? "yes" : "NO"));
      std::fflush(stdout);
    };
    // tile16: 16x16 row+col, the tile kernel against the src quad kernel (kCol).
    auto run_rc = [&](const char* mode_name, QuantMode m, float bound, bool tile16 = false) {
      std::vector<uint8_t> ref[4];
      // row+col: the src kernel (4 CTAs), at 5 and 3 CTAs; 16x16: the src quad
      // kernel (runs of 4 tile rows, 3 CTAs), runs of 2 at 3 CTAs, runs of 4 / 2 at 4 CTAs (the
      // last wave's tail).
      const int n_var = tile16 ? 5 : 4;
      const char* rc_names[] = {"lean row+col kernel (src)", "lean row+col, 5 CTAs",
                                "lean row+col, 3 CTAs"};
      const char* quad_names[] = {"quad kernel (src)", "quad, runs of 2, 3 CTAs",
                                  "quad, runs of 4, 4 CTAs", "quad, runs of 2, 4 CTAs"};
      for (int k = 0; k < n_var; ++k) {
        auto launch = [&](int i) {
          const QuantizeParams q = rc_params(i, bound, m != QuantMode::kMAE && !tile16);
          if (k >= 1 && tile16) {  // src/cuda/quantize/quantize_quad.cuh, MAE
            const int64_t steps = R / 16 * ((C + kQuadCols - 1) / kQuadCols);
            auto launch_quad = [&](auto kernel) {
              const int grid = std::min<int64_t>((steps + kQuadWarps - 1) / kQuadWarps,
                                                 resident(kernel, kLeanThreads));
              kernel<<<grid, kLeanThreads>>>(q);
            };
            constexpr QuantMode kM = QuantMode::kMAE;
            if (k == 1) launch_quad(quantize_tile16_quad_kernel<kM, true>);
            if (k == 2) launch_quad(quantize_tile16_quad_kernel<kM, true, 2, 3>);
            if (k == 3) launch_quad(quantize_tile16_quad_kernel<kM, true, 4, 4>);
            if (k == 4) launch_quad(quantize_tile16_quad_kernel<kM, true, 2, 4>);
            return;
          }
          if (k >= 1) {  // src/cuda/quantize/quantize_rowcol.cuh, 4 / 3 / 5 CTAs
            const int64_t runs = (R / 16 + kRowColRun - 1) / kRowColRun * (C / kRcUnitCols);
            auto launch_rc = [&](auto kernel) {
              const int grid = std::min<int64_t>((runs + kRcWarps - 1) / kRcWarps,
                                                 resident(kernel, kLeanThreads));
              kernel<<<grid, kLeanThreads>>>(q);
            };
            if (m == QuantMode::kMAE) {
              if (k == 1) launch_rc(quantize_rowcol_lean_kernel<QuantMode::kMAE>);
              if (k == 2) launch_rc(quantize_rowcol_lean_kernel<QuantMode::kMAE, 5>);
              if (k == 3) launch_rc(quantize_rowcol_lean_kernel<QuantMode::kMAE, 3>);
            } else {
              if (k == 1) launch_rc(quantize_rowcol_lean_kernel<QuantMode::kGradient>);
              if (k == 2) launch_rc(quantize_rowcol_lean_kernel<QuantMode::kGradient, 5>);
              if (k == 3) launch_rc(quantize_rowcol_lean_kernel<QuantMode::kGradient, 3>);
            }
            return;
          }
          launch_tile(q, m, tile16, 0);
        };
        check_rc(
            k, launch, ref,
            k == 0 ? "tile kernel (reference)" : (tile16 ? quad_names[k - 1] : rc_names[k - 1]),
            std::string(tile16 ? "16x16 MAE" : mode_name) + " row+col");
      }
    };
    // Group scope (the bench's 128 uneven groups, offsets % 16 == 0): the tile kernel (reference)
    // against dev/lean_rowcol_group.cuh.
    auto run_rc_group = [&](const char* mode_name, QuantMode m, float bound) {
      constexpr int kG = 128;
      std::vector<int32_t> ho(kG);
      std::vector<float> ha(kG);
      int64_t acc = 0;
      for (int g = 0; g < kG; ++g) {
        acc += (R / kG / 16) * 16 + ((g % 3) - 1) * 16;
        ho[g] = static_cast<int32_t>(std::min<int64_t>(g == kG - 1 ? R : acc, R));
        ha[g] = 2.0f + 0.0625f * static_cast<float>(g % 9);
      }
      int32_t* offs;
      float* gamax;
      BENCH_CUDA(cudaMalloc(&offs, kG * 4));
      BENCH_CUDA(cudaMalloc(&gamax, kG * 4));
      BENCH_CUDA(cudaMemcpy(offs, ho.data(), kG * 4, cudaMemcpyHostToDevice));
      BENCH_CUDA(cudaMemcpy(gamax, ha.data(), kG * 4, cudaMemcpyHostToDevice));
      std::vector<uint8_t> ref[4];
      for (int k = 0; k < 2; ++k) {
        auto launch = [&](int i) {
          QuantizeParams q = rc_params(i, bound, m != QuantMode::kMAE);
          q.scope = ScopeKind::kGroup;
          q.amax = gamax;
          q.offsets = offs;
          q.num_groups = kG;
          if (k == 1) {  // dev/lean_rowcol_group.cuh
            const size_t shared = lab_rowcol_group_shared(false, kG);
            const int64_t runs = (R / 16 + kRowColRun - 1) / kRowColRun * (C / kRcUnitCols);
            auto launch_g = [&](auto kernel) {
              int dev = 0, sms = 0, per = 0;
              BENCH_CUDA(cudaGetDevice(&dev));
              BENCH_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
              BENCH_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, kLeanThreads,
                                                                       shared));
              const int grid = std::min<int64_t>((runs + kRcWarps - 1) / kRcWarps, sms * per);
              kernel<<<grid, kLeanThreads, shared>>>(q);
            };
            if (m == QuantMode::kMAE)
              launch_g(lean_rowcol_group_kernel<QuantMode::kMAE>);
            else
              launch_g(lean_rowcol_group_kernel<QuantMode::kGradient>);
            return;
          }
          launch_tile(q, m, false, kG * 4);
        };
        check_rc(k, launch, ref,
                 k == 0 ? "tile kernel (reference)" : "lean row+col, group slots (dev)",
                 std::string(mode_name) + " group (128) row+col");
      }
      cudaFree(offs);
      cudaFree(gamax);
    };
    if (group_only) {
      run_rc_group("MAE", QuantMode::kMAE, 256.0f);
      run_rc_group("gradient RNE", QuantMode::kGradient, 448.0f);
    }
    if (!t16_only && !group_only) run_rc("MAE", QuantMode::kMAE, 256.0f);
    if (!group_only) run_rc("MAE", QuantMode::kMAE, 256.0f, true);  // 16x16 row+col
    if (!group_only) {  // 16x16 MAE rowwise: the tile kernel (reference) against the quad kernel
      std::vector<uint8_t> rc(n / 2), rs(n / 16);
      const char* names16[] = {"tile kernel (reference)", "quad kernel (src)"};
      for (int k = 0; k < 2; ++k) {
        auto launch = [&](int i) {
          QuantizeParams q = params(i, codes, scales);
          q.wide_rows = true;
          if (k == 1) {  // src/cuda/quantize/quantize_quad.cuh
            auto kernel = quantize_tile16_quad_kernel<QuantMode::kMAE, false>;
            const int64_t steps = R / 16 * ((C + kQuadCols - 1) / kQuadCols);
            const int grid = std::min<int64_t>((steps + kQuadWarps - 1) / kQuadWarps,
                                               resident(kernel, kLeanThreads));
            kernel<<<grid, kLeanThreads>>>(q);
            return;
          }
          QuantizeLaunch l;
          l.mode = QuantMode::kMAE;
          l.tile_kernel = l.tile16 = true;
          const int64_t units = (R + kUnitRows - 1) / kUnitRows * ((C + kUnitCols - 1) / kUnitCols);
          l.grid = dim3(static_cast<unsigned>((units + kTileWarps - 1) / kTileWarps));
          launch_quantize<Bf16>(q, l, 0);
        };
        BENCH_CUDA(cudaMemset(codes, 0xAB, n / 2));
        BENCH_CUDA(cudaMemset(scales, 0xAB, n / 16));
        launch(0);
        BENCH_CUDA(cudaDeviceSynchronize());
        std::vector<uint8_t> c(n / 2), sc(n / 16);
        BENCH_CUDA(cudaMemcpy(c.data(), codes, n / 2, cudaMemcpyDeviceToHost));
        BENCH_CUDA(cudaMemcpy(sc.data(), scales, n / 16, cudaMemcpyDeviceToHost));
        bool eq = true;
        if (k == 0)
          rc = c, rs = sc;
        else
          eq = c == rc && sc == rs, all_equal = all_equal && eq;
        const double us = median_us(iters, launch);
        const double bytes = 2.0 * n + n / 2.0 + n / 16.0;
        std::printf("| %s | 16x16 MAE | %lldx%lld | %.1f | %.3f | %s |\n", names16[k], (long long)R,
                    (long long)C, us, bytes / us * 1e-3 / copy_gbs,
                    k == 0 ? "ref" : (eq ? "yes" : "NO"));
        std::fflush(stdout);
      }
    }
    if (!t16_only && !group_only) run_rc("gradient RNE", QuantMode::kGradient, 448.0f);
    cudaFree(codes_t);
    cudaFree(scales_t);
    for (int i = 0; i < 2; ++i) cudaFree(x[i]);
    cudaFree(codes);
    cudaFree(scales);
    cudaFree(ref_codes);
    cudaFree(ref_scales);
    cudaFree(amax);
  }
  std::printf("\nall variants equal to the landed kernel: %s\n", all_equal ? "yes" : "NO");
  return all_equal ? 0 : 1;
}
