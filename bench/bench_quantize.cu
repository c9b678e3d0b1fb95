// Quantization benchmark on the GPU: every main mode of f46::quantize (plus amax and
// dequantize) on bf16 inputs, against the device-copy bandwidth measured in the same run.
// Bytes = minimal bytes read + written. CUDA events, warm-up, median of many launches,
// inputs rotated between launches (each larger than the 60 MB L2).
//   bench_quantize [iters] [mode-substring]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"
#include "f46/f46.h"

using f46::bench::device_alloc;
using f46::bench::fill_bf16;
using f46::bench::median_us;

int main(int argc, char** argv) {
  using namespace f46;
  const int iters = argc > 1 ? std::atoi(argv[1]) : 30;
  const char* only = argc > 2 ? argv[2] : nullptr;  // run the modes whose name contains it
  auto wanted = [&](const char* mode) { return only == nullptr || std::strstr(mode, only); };
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreate(&stream));
  Context ctx;
  ctx.cuda_stream = stream;

  // Device copy bandwidth: 512 MB buffer, bytes read + written.
  const size_t copy_bytes = size_t{512} << 20;
  void* ca = device_alloc(copy_bytes);
  void* cb = device_alloc(copy_bytes);
  const double copy_us = median_us(stream, iters, [&](int) {
    BENCH_CUDA(cudaMemcpyAsync(cb, ca, copy_bytes, cudaMemcpyDeviceToDevice, stream));
  });
  const double copy_gbs = 2.0 * copy_bytes / copy_us * 1e-3;
  cudaFree(ca);
  cudaFree(cb);
  std::printf("device copy: %.1f GB/s (cudaMemcpy D2D, %zu MB, read + write)\n\n", copy_gbs,
              copy_bytes >> 20);
  std::printf("| mode | shape | us | GB/s | fraction of copy |\n|---|---|---|---|---|\n");

  const int64_t shapes[][2] = {{8192, 5120}, {16384, 7168}, {65536, 2048}};
  std::vector<double> fractions;
  for (const auto& sh : shapes) {
    const int64_t R = sh[0], C = sh[1];
    const int64_t n = R * C;
    constexpr int kRot = 2;  // rotated inputs, each > L2
    void* x[kRot];
    for (int i = 0; i < kRot; ++i) {
      x[i] = device_alloc(static_cast<size_t>(n) * 2);
      fill_bf16(x[i], n, 17u + i);
    }
    auto* codes = static_cast<uint8_t*>(device_alloc(n / 2));
    auto* scales = static_cast<uint8_t*>(device_alloc(n / 16));
    auto* codes_t = static_cast<uint8_t*>(device_alloc(n / 2));
    auto* scales_t = static_cast<uint8_t*>(device_alloc(n / 16));
    auto* deq = device_alloc(static_cast<size_t>(n) * 2);
    constexpr int kGroups = 128;
    auto* amax = static_cast<float*>(device_alloc(kGroups * 4));
    auto* amax_t = static_cast<float*>(device_alloc(kGroups * 4));
    auto* offs = static_cast<int32_t*>(device_alloc(kGroups * 4));
    {
      std::vector<int32_t> h(kGroups);  // uneven group sizes, multiples of 16
      int64_t acc = 0;
      for (int g = 0; g < kGroups; ++g) {
        acc += (R / kGroups / 16) * 16 + ((g % 3) - 1) * 16;
        h[g] = static_cast<int32_t>(std::min<int64_t>(g == kGroups - 1 ? R : acc, R));
      }
      BENCH_CUDA(cudaMemcpy(offs, h.data(), kGroups * 4, cudaMemcpyHostToDevice));
    }
    const float one_amax = 3.0f;
    BENCH_CUDA(cudaMemcpy(amax, &one_amax, 4, cudaMemcpyHostToDevice));
    BENCH_CUDA(cudaMemcpy(amax_t, &one_amax, 4, cudaMemcpyHostToDevice));

    auto xview = [&](int i) {
      return make_view(x[i % kRot], DType::kBFloat16, {R, C}, Device::kCUDA);
    };
    QuantizedOutputs out;
    out.codes = make_view(codes, DType::kUInt8, {R, C / 2}, Device::kCUDA);
    out.scales = make_view(scales, DType::kUInt8, {R, C / 16}, Device::kCUDA);
    out.codes_t = make_view(codes_t, DType::kUInt8, {C, R / 2}, Device::kCUDA);
    out.scales_t = make_view(scales_t, DType::kUInt8, {C, R / 16}, Device::kCUDA);
    GlobalAmax ga;
    ga.amax = make_view(amax, DType::kFloat32, {1}, Device::kCUDA);
    const double in_b = 2.0 * n, q_b = n / 2.0 + n / 16.0;

    const std::string shape = std::to_string(R) + "x" + std::to_string(C);
    auto report = [&](const char* mode, double us, double bytes) {
      const double gbs = bytes / us * 1e-3;
      fractions.push_back(gbs / copy_gbs);
      std::printf("| %s | %s | %.1f | %.0f | %.2f |\n", mode, shape.c_str(), us, gbs,
                  gbs / copy_gbs);
      std::fflush(stdout);
    };
    auto run_q = [&](const char* mode, QuantizeConfig cfg, const GlobalAmax& g, double bytes) {
      if (!wanted(mode)) return;
      report(mode, median_us(stream, iters, [&](int i) { quantize(xview(i), g, cfg, out, ctx); }),
             bytes);
    };

    QuantizeConfig mae;  // rowwise 1x16 4/6 MAE, bound 256
    run_q("rowwise 1x16 4/6 MAE", mae, ga, in_b + q_b);
    QuantizeConfig mse = mae;
    mse.rule = Rule::kMSE;
    run_q("rowwise 1x16 4/6 MSE", mse, ga, in_b + q_b);
    QuantizeConfig rc = mae;
    rc.columnwise = true;
    run_q("rowwise+columnwise 1x16 MAE", rc, ga, in_b + 2 * q_b);
    QuantizeConfig w = mae;
    w.block = Block::k16x16;
    run_q("16x16 weights MAE (rowwise)", w, ga, in_b + q_b);
    QuantizeConfig wt = w;  // W and W^T (the dense quantized backward's dgrad operand)
    wt.columnwise = true;
    run_q("16x16 weights MAE row+col", wt, ga, in_b + 2 * q_b);
    QuantizeConfig grad;
    grad.rule = Rule::kAll6;
    grad.scale_bound = 448.0f;
    grad.gradient = true;
    grad.columnwise = true;
    QuantizeConfig grad_plain = grad;
    run_q("gradient RNE row+col", grad_plain, ga, in_b + 2 * q_b);
    grad.rounding = Rounding::kStochastic;
    grad.seed = 7;
    grad.rht_columnwise = true;
    GlobalAmax gg = ga;
    gg.amax_columnwise = make_view(amax_t, DType::kFloat32, {1}, Device::kCUDA);
    run_q("gradient SR row+col, RHT col", grad, gg, in_b + 2 * q_b);

    // Per-group amax (128 groups) then the group-scope quantize.
    GlobalAmax grp;
    grp.scope = AmaxScope::kGroup;
    grp.amax = make_view(amax, DType::kFloat32, {kGroups}, Device::kCUDA);
    grp.offsets = make_view(offs, DType::kInt32, {kGroups}, Device::kCUDA);
    AmaxConfig acfg;
    acfg.scope = AmaxScope::kGroup;
    acfg.offsets = grp.offsets;
    TensorView amax_out = grp.amax;
    if (wanted("group amax (128)"))
      report("group amax (128)",
             median_us(stream, iters, [&](int i) { f46::amax(xview(i), acfg, amax_out, ctx); }),
             in_b);
    if (wanted("group amax (128) + quantize MAE"))
      report("group amax (128) + quantize MAE",
             median_us(stream, iters,
                       [&](int i) {
                         f46::amax(xview(i), acfg, amax_out, ctx);
                         quantize(xview(i), grp, mae, out, ctx);
                       }),
             in_b + q_b);
    if (wanted("group (128) gradient RNE row+col")) {  // wgrad operands: group amax given
      f46::amax(xview(0), acfg, amax_out, ctx);        // input 0's (both have one distribution)
      report(
          "group (128) gradient RNE row+col",
          median_us(stream, iters, [&](int i) { quantize(xview(i), grp, grad_plain, out, ctx); }),
          in_b + 2 * q_b);
    }

    TensorView deq_v = make_view(deq, DType::kBFloat16, {R, C}, Device::kCUDA);
    if (wanted("dequantize -> bf16"))
      report("dequantize -> bf16",
             median_us(stream, iters,
                       [&](int) { dequantize(out.codes, out.scales, ga, 256.0f, deq_v, ctx); }),
             q_b + in_b);

    for (int i = 0; i < kRot; ++i) cudaFree(x[i]);
    for (void* p : {static_cast<void*>(codes), static_cast<void*>(scales),
                    static_cast<void*>(codes_t), static_cast<void*>(scales_t), deq,
                    static_cast<void*>(amax), static_cast<void*>(amax_t), static_cast<void*>(offs)})
      cudaFree(p);
  }
  double lg = 0;
  for (double f : fractions) lg += std::log(f);
  std::printf("\ngeometric mean fraction of copy: %.2f\n", std::exp(lg / fractions.size()));
  BENCH_CUDA(cudaStreamSynchronize(stream));
  return 0;
}
