// An M-grouped NVFP4 GEMM on a CUDA stream, the forward pass of routed experts: tokens x (M, K)
// sorted by expert into ragged groups (one empty), group ends in a device int32 tensor, expert
// weights w (E, N, K). Everything is enqueued on one stream; the host never reads the offsets.
// The same calls on host memory run the CPU reference backend; the codes must match it
// bitwise and the GEMM within the contract's 1e-5 (docs/numerics.md N10, N11).
// Without a CUDA build of f46 or without a GPU it prints why and exits 0.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <random>
#include <vector>

#include "f46/f46.h"

#if defined(F46_WITH_CUDA)
#include <cuda_runtime.h>

#define CHECK_CUDA(call)                                                           \
  do {                                                                             \
    const cudaError_t status_ = (call);                                            \
    if (status_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(status_)); \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

namespace {

constexpr int64_t kE = 4, kN = 64, kK = 128;
const std::vector<int32_t> kGroupRows = {5, 0, 17, 10};  // tokens per expert; expert 1 has none
constexpr int64_t kM = 36;  // 32 routed tokens + 4 padding rows, which the GEMM writes as zeros

// Buffers of one run, on the host (the CPU backend) or on the device (the CUDA backend).
struct Run {
  f46::Device device;
  std::vector<void*> owned;  // device allocations, freed at the end
  std::vector<std::vector<uint8_t>> host;

  f46::TensorView alloc(f46::DType t, std::initializer_list<int64_t> shape) {
    int64_t bytes = f46::dtype_size(t);
    for (int64_t s : shape) bytes *= s;
    void* p = nullptr;
    if (device == f46::Device::kCUDA) {
      CHECK_CUDA(cudaMalloc(&p, static_cast<size_t>(bytes)));
      owned.push_back(p);
    } else {
      host.emplace_back(static_cast<size_t>(bytes));
      p = host.back().data();
    }
    return f46::make_view(p, t, shape, device);
  }
};

// Group-scope amax and quantization of v (rows, k), rows split by offs (E) int32.
f46::QuantizedOperand quantize_groups(Run& run, const f46::TensorView& v,
                                      const f46::TensorView& offs, f46::Block block,
                                      const f46::Context& ctx) {
  const int64_t rows = v.size(0), k = v.size(1);
  f46::QuantizedOperand op;
  op.scope = f46::AmaxScope::kGroup;
  op.amax = run.alloc(f46::DType::kFloat32, {kE});  // (E) one amax per group
  f46::AmaxConfig acfg;
  acfg.scope = f46::AmaxScope::kGroup;
  acfg.offsets = offs;
  f46::amax(v, acfg, op.amax, ctx);

  f46::GlobalAmax global;
  global.scope = f46::AmaxScope::kGroup;
  global.amax = op.amax;
  global.offsets = offs;
  f46::QuantizeConfig cfg;  // 4/6, MAE, bound 256
  cfg.block = block;
  f46::QuantizedOutputs out;
  out.codes = run.alloc(f46::DType::kUInt8, {rows, k / 2});
  out.scales = run.alloc(f46::DType::kUInt8, {rows, k / 16});
  f46::quantize(v, global, cfg, out, ctx);
  op.codes = out.codes;
  op.scales = out.scales;
  return op;
}

// Copies host bytes into a new tensor of the run (cudaMemcpyAsync on the stream for CUDA).
template <typename T>
f46::TensorView upload(Run& run, const std::vector<T>& v, f46::DType t,
                       std::initializer_list<int64_t> shape, cudaStream_t stream) {
  f46::TensorView view = run.alloc(t, shape);
  if (run.device == f46::Device::kCUDA)
    CHECK_CUDA(
        cudaMemcpyAsync(view.data, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
  else
    std::copy(v.begin(), v.end(), view.ptr<T>());
  return view;
}

template <typename T>
std::vector<T> download(const Run& run, const f46::TensorView& t, cudaStream_t stream) {
  std::vector<T> v(static_cast<size_t>(t.numel()));
  if (run.device == f46::Device::kCUDA) {
    CHECK_CUDA(
        cudaMemcpyAsync(v.data(), t.data, v.size() * sizeof(T), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
  } else {
    std::copy(t.ptr<T>(), t.ptr<T>() + v.size(), v.begin());
  }
  return v;
}

struct Result {
  std::vector<uint8_t> codes_x;  // (M, K/2)
  std::vector<float> y;          // (M, N)
};

Result forward(f46::Device device, const std::vector<float>& x, const std::vector<float>& w,
               cudaStream_t stream) {
  Run run{device, {}, {}};
  f46::Context ctx;
  ctx.cuda_stream = stream;  // ignored by the CPU backend

  std::vector<int32_t> offs(kE), w_offs(kE);  // cumulative group ends over tokens / weight rows
  for (int64_t g = 0, end = 0; g < kE; ++g) {
    offs[g] = static_cast<int32_t>(end += kGroupRows[g]);
    w_offs[g] = static_cast<int32_t>((g + 1) * kN);
  }
  const f46::TensorView xv = upload(run, x, f46::DType::kFloat32, {kM, kK}, stream);
  const f46::TensorView wv = upload(run, w, f46::DType::kFloat32, {kE * kN, kK}, stream);
  const f46::TensorView offs_v = upload(run, offs, f46::DType::kInt32, {kE}, stream);
  const f46::TensorView w_offs_v = upload(run, w_offs, f46::DType::kInt32, {kE}, stream);

  // Activations: one amax per expert's tokens. Weights: the (E*N, K) stack split every N rows,
  // so each expert has its own amax, in 16x16 scale tiles.
  f46::QuantizedOperand a = quantize_groups(run, xv, offs_v, f46::Block::k1x16, ctx);
  f46::QuantizedOperand b = quantize_groups(run, wv, w_offs_v, f46::Block::k16x16, ctx);
  b.codes = f46::make_view(b.codes.data, f46::DType::kUInt8, {kE, kN, kK / 2}, device);
  b.scales = f46::make_view(b.scales.data, f46::DType::kUInt8, {kE, kN, kK / 16}, device);

  f46::Context gemm_ctx = ctx;  // a caller-owned workspace avoids an allocation per call
  if (device == f46::Device::kCUDA) {
    gemm_ctx.workspace_bytes = f46::grouped_gemm_m_workspace_bytes(kM, kN, kK, kE);
    gemm_ctx.workspace = run.alloc(f46::DType::kUInt8, {gemm_ctx.workspace_bytes}).data;
  }
  f46::TensorView y = run.alloc(f46::DType::kFloat32, {kM, kN});
  f46::grouped_gemm_m(a, b, offs_v, f46::TensorView{}, y, gemm_ctx);

  Result r{download<uint8_t>(run, a.codes, stream), download<float>(run, y, stream)};
  for (void* p : run.owned) CHECK_CUDA(cudaFree(p));
  return r;
}

}  // namespace

int main() {
  std::printf("f46 %s\n", f46::version());
  if (!f46::cuda_available()) {
    std::printf("skipped: no CUDA device\n");
    return 0;
  }
  std::mt19937 gen(46);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(kM * kK), w(kE * kN * kK);  // x (M, K); w (E, N, K) float32
  for (float& v : x) v = normal(gen);
  for (float& v : w) v = 0.05f * normal(gen);

  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const Result gpu = forward(f46::Device::kCUDA, x, w, stream);
  const Result cpu = forward(f46::Device::kCPU, x, w, nullptr);
  CHECK_CUDA(cudaStreamDestroy(stream));

  const bool codes_equal = gpu.codes_x == cpu.codes_x;
  double num = 0.0, den = 0.0, pad = 0.0;
  for (int64_t i = 0; i < kM * kN; ++i) {
    num += (double{gpu.y[i]} - cpu.y[i]) * (double{gpu.y[i]} - cpu.y[i]);
    den += double{cpu.y[i]} * cpu.y[i];
    if (i >= 32 * kN) pad += std::fabs(gpu.y[i]);
  }
  const double err = std::sqrt(num / den);
  std::printf("grouped_gemm_m, %lld experts, tokens per expert 5 0 17 10 (+4 padding rows)\n",
              static_cast<long long>(kE));
  std::printf("  activation codes CUDA == CPU bitwise: %s\n", codes_equal ? "yes" : "NO");
  std::printf("  output CUDA vs CPU relative error %.2e (contract < 1e-5); padding rows %s\n", err,
              pad == 0.0 ? "zero" : "NOT zero");
  return codes_equal && err < 1e-5 && pad == 0.0 ? 0 : 1;
}

#else  // f46 built without CUDA

int main() {
  std::printf("f46 %s\n", f46::version());
  std::printf("skipped: f46 was built without CUDA\n");
  return 0;
}

#endif
