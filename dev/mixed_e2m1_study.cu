// Study (2026-12-06; first device run segfaulted before any output, with device-only problem shapes): CUTLASS 4.2 sm90 mixed-input grouped (ptr-array) GEMM with E2M1 weights.
// Build (CUTLASS headers from the unpacked nvidia-cutlass wheel, cutlass_library/source):
//   nvcc -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -O3 -DNDEBUG -I$C/include
//        -I$C/tools/util/include dev/mixed_e2m1_study.cu -o build-dev/mixed_e2m1_study
// (without -DNDEBUG CUTLASS's device asserts serialize the WGMMA pipeline). Run: `./a.out <chunk>
// [big]`; carry build-dev/ to the device.
// Weight W_g (Nw x K, K-major, e2m1 packed, low nibble = even element) is the collective "A" (register-sourced),
// activations X_g (T_g x K, K-major bf16) are the collective "B". D_coll = W X^T (Nw x T_g), col-major => Y (T_g x Nw) row-major.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cmath>
#include <cstring>
#include <cuda_runtime.h>

#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/group_array_problem_shape.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

using namespace cute;

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

using ProblemShape = cutlass::gemm::GroupProblemShape<Shape<int,int,int>>;
using MmaType = cutlass::bfloat16_t;
using QuantType = cutlass::float_e2m1_t;
#ifndef SCALE_T
#define SCALE_T cutlass::bfloat16_t
#endif
using ElementScale = SCALE_T;
using LayoutW = cutlass::layout::RowMajor;     // (Nw x K) K-major
using LayoutX = cutlass::layout::ColumnMajor;  // B operand (K x T) col-major == X (T x K) row-major
using LayoutD = cutlass::layout::ColumnMajor;  // (Nw x T) col-major == Y (T x Nw) row-major
using ElementC = float;
using ElementD = float;
using ElementAcc = float;
constexpr int AlignW = 128 / cutlass::sizeof_bits<QuantType>::value;
constexpr int AlignX = 128 / cutlass::sizeof_bits<MmaType>::value;
constexpr int AlignD = 128 / cutlass::sizeof_bits<ElementD>::value;
#ifndef TILE_N
#define TILE_N 128
#endif
using TileShape = Shape<_128, Int<TILE_N>, _64>;
using ClusterShape = Shape<_1,_1,_1>;
using KernelSchedule = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative;
using EpilogueSchedule = cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative;

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, ElementAcc, ElementAcc,
    ElementC, LayoutD*, AlignD, ElementD, LayoutD*, AlignD, EpilogueSchedule>::CollectiveOp;

using MainloopMixed = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    cute::tuple<QuantType, ElementScale>, LayoutW*, AlignW,
    MmaType, LayoutX*, AlignX, ElementAcc, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    KernelSchedule>::CollectiveOp;
using KernelMixed = cutlass::gemm::kernel::GemmUniversal<ProblemShape, MainloopMixed, CollectiveEpilogue>;
using GemmMixed = cutlass::gemm::device::GemmUniversalAdapter<KernelMixed>;

using MainloopRef = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    MmaType, LayoutW*, AlignX, MmaType, LayoutX*, AlignX, ElementAcc, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    KernelSchedule>::CollectiveOp;
using KernelRef = cutlass::gemm::kernel::GemmUniversal<ProblemShape, MainloopRef, CollectiveEpilogue>;
using GemmRef = cutlass::gemm::device::GemmUniversalAdapter<KernelRef>;

using StrideA = typename KernelMixed::InternalStrideA;
using StrideB = typename KernelMixed::InternalStrideB;
using StrideC = typename KernelMixed::InternalStrideC;
using StrideD = typename KernelMixed::InternalStrideD;
using StrideS = typename MainloopMixed::StrideScale;
using StrideARef = typename KernelRef::InternalStrideA;

static float e2m1_val(int c) { static const float t[8] = {0,0.5f,1,1.5f,2,3,4,6}; float v = t[c & 7]; return (c & 8) ? -v : v; }
static float e4m3_val(uint8_t b) {  // finite E4M3 (no NaN used here)
  int s = b >> 7, e = (b >> 3) & 15, m = b & 7; float v = e ? std::ldexp(1.f + m / 8.f, e - 7) : std::ldexp(m / 8.f, -6); return s ? -v : v; }

template <class T> T* dalloc(size_t n) { T* p; CK(cudaMalloc(&p, n * sizeof(T) + 256)); CK(cudaMemset(p, 0, n * sizeof(T) + 256)); return p; }

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);  // a crash keeps what was printed
  int chunk = argc > 1 ? atoi(argv[1]) : 128;
  // argv[2] == "big": 8 experts of a Mixtral-like w1 (Nw 14336, K 4096, 2048 tokens each),
  // no FP64 reference (the mixed output is compared with the BF16 GEMM on the dequantized weight)
  const bool big = argc > 2 && strcmp(argv[2], "big") == 0;
  const int G = big ? 8 : 3, Nw = big ? 14336 : 256, K = big ? 4096 : 1024;
  std::vector<int> T(G, 2048);
  if (!big) T = {128, 72, 8};
  printf("ElementScale bits=%d chunk=%d Stages=%d TileShape=(128,%d,64) sizeof(SharedStorage)=%zu\n",
         (int)cutlass::sizeof_bits<ElementScale>::value, chunk, (int)MainloopMixed::DispatchPolicy::Stages, TILE_N,
         sizeof(typename KernelMixed::SharedStorage));
  srand(1);
  int scale_k = (K + chunk - 1) / chunk;
  std::vector<std::vector<uint8_t>> Wq(G), Ws8(G);   // packed codes, e4m3 scales [Nw][scale_k]
  std::vector<std::vector<cutlass::bfloat16_t>> Wdq(G), X(G), S(G);
  std::vector<std::vector<double>> Yref(G);
  std::vector<float> alpha_h(G);
  for (int g = 0; g < G; ++g) {
    alpha_h[g] = 1.0f;
    Wq[g].assign(Nw * K / 2, 0); Ws8[g].resize(Nw * scale_k); Wdq[g].resize(Nw * K); S[g].resize(Nw * scale_k);
    for (int n = 0; n < Nw; ++n) for (int kg = 0; kg < scale_k; ++kg) {
      uint8_t b; do { b = rand() & 0x7f; } while (b == 0x7f || ((b >> 3) & 15) == 0); // positive normal e4m3
      if (n == 0 && kg == 0) b = 0x7e; // 448
      if (n == 1 && kg == 0) b = 0x01; // smallest subnormal 2^-9
      Ws8[g][n * scale_k + kg] = b;
      S[g][kg * Nw + n] = cutlass::bfloat16_t(e4m3_val(b));   // StrideScale = (_1, Nw): MN-major
      if (float(S[g][kg * Nw + n]) != e4m3_val(b)) { printf("scale not exact in bf16\n"); return 1; }
    }
    for (int n = 0; n < Nw; ++n) for (int k = 0; k < K; ++k) {
      int c = rand() & 15;
      Wq[g][(n * K + k) / 2] |= (uint8_t)(c << (4 * (k & 1)));
      float v = e2m1_val(c) * e4m3_val(Ws8[g][n * scale_k + k / chunk]);
      Wdq[g][n * K + k] = cutlass::bfloat16_t(v);
      if (float(Wdq[g][n * K + k]) != v) { printf("dq not exact\n"); return 1; }
    }
    X[g].resize(T[g] * K);
    for (auto& x : X[g]) x = cutlass::bfloat16_t((rand() % 2001 - 1000) / 256.0f);
    Yref[g].assign(big ? 0 : size_t(T[g]) * Nw, 0.0);
    for (int t = 0; t < (big ? 0 : T[g]); ++t) for (int n = 0; n < Nw; ++n) {
      double acc = 0; for (int k = 0; k < K; ++k) acc += double(float(Wdq[g][n * K + k])) * double(float(X[g][t * K + k]));
      Yref[g][t * Nw + n] = acc;
    }
  }
  // device buffers
  std::vector<uint8_t*> dWq(G); std::vector<MmaType*> dWdq(G), dX(G); std::vector<ElementScale*> dS(G);
  std::vector<float*> dC(G), dD(G), dDref(G), dAlpha(G);
  std::vector<typename ProblemShape::UnderlyingProblemShape> shapes(G);
  std::vector<StrideA> sA(G); std::vector<StrideARef> sAref(G); std::vector<StrideB> sB(G); std::vector<StrideC> sC(G); std::vector<StrideD> sD(G); std::vector<StrideS> sS(G);
  for (int g = 0; g < G; ++g) {
    dWq[g] = dalloc<uint8_t>(Wq[g].size()); CK(cudaMemcpy(dWq[g], Wq[g].data(), Wq[g].size(), cudaMemcpyHostToDevice));
    dWdq[g] = dalloc<MmaType>(Wdq[g].size()); CK(cudaMemcpy(dWdq[g], Wdq[g].data(), Wdq[g].size() * 2, cudaMemcpyHostToDevice));
    dX[g] = dalloc<MmaType>(X[g].size()); CK(cudaMemcpy(dX[g], X[g].data(), X[g].size() * 2, cudaMemcpyHostToDevice));
    std::vector<ElementScale> sc(S[g].size()); for (size_t i = 0; i < sc.size(); ++i) sc[i] = ElementScale(float(S[g][i]));
    dS[g] = dalloc<ElementScale>(sc.size()); CK(cudaMemcpy(dS[g], sc.data(), sc.size() * sizeof(ElementScale), cudaMemcpyHostToDevice));
    dC[g] = dalloc<float>(T[g] * Nw); dD[g] = dalloc<float>(T[g] * Nw); dDref[g] = dalloc<float>(T[g] * Nw);
    dAlpha[g] = dalloc<float>(1); CK(cudaMemcpy(dAlpha[g], &alpha_h[g], 4, cudaMemcpyHostToDevice));
    shapes[g] = {Nw, T[g], K};
    sA[g] = cutlass::make_cute_packed_stride(StrideA{}, {Nw, K, 1});
    sAref[g] = cutlass::make_cute_packed_stride(StrideARef{}, {Nw, K, 1});
    sB[g] = cutlass::make_cute_packed_stride(StrideB{}, {T[g], K, 1});
    sC[g] = cutlass::make_cute_packed_stride(StrideC{}, {Nw, T[g], 1});
    sD[g] = cutlass::make_cute_packed_stride(StrideD{}, {Nw, T[g], 1});
    sS[g] = cutlass::make_cute_packed_stride(StrideS{}, {Nw, scale_k, 1});
  }
  printf("host data and device buffers ready\n");
  auto up = [](auto const& v) { using T_ = typename std::decay_t<decltype(v)>::value_type; T_* p; CK(cudaMalloc(&p, v.size() * sizeof(T_))); CK(cudaMemcpy(p, v.data(), v.size() * sizeof(T_), cudaMemcpyHostToDevice)); return p; };
  auto d_shapes = up(shapes);
  auto d_Wq = up(dWq); auto d_Wdq = up(dWdq); auto d_X = up(dX); auto d_S = up(dS);
  auto d_C = up(dC); auto d_D = up(dD); auto d_Dref = up(dDref); auto d_alpha = up(dAlpha);
  auto d_sA = up(sA); auto d_sAref = up(sAref); auto d_sB = up(sB); auto d_sC = up(sC); auto d_sD = up(sD); auto d_sS = up(sS);

  printf("pointer arrays uploaded\n");
  cutlass::KernelHardwareInfo hw; hw.device_id = 0; hw.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0);
  auto make_fusion = [&](auto& f) {
    f.alpha = 0; f.beta = 0; f.alpha_ptr = nullptr; f.beta_ptr = nullptr; f.alpha_ptr_array = (float const* const*)d_alpha; f.beta_ptr_array = nullptr;
    f.dAlpha = {_0{}, _0{}, 1}; f.dBeta = {_0{}, _0{}, 0};
  };
  // Mixed, device-only problem shapes (host ptr nullptr)
  typename GemmMixed::Arguments am;
  make_fusion(am.epilogue.thread);
  am = typename GemmMixed::Arguments{cutlass::gemm::GemmUniversalMode::kGrouped, {G, d_shapes, nullptr},
      {(QuantType const**)d_Wq, d_sA, (MmaType const**)d_X, d_sB, (ElementScale const**)d_S, d_sS, chunk},
      {am.epilogue.thread, (ElementC const**)d_C, d_sC, d_D, d_sD}, hw};
  printf("mixed arguments built\n");
  GemmMixed gm;
  am.problem_shape.host_problem_shapes = shapes.data();  // can_implement reads them
  {
    // can_implement with host shapes available (checks chunk constraints)
    auto am2 = am; am2.problem_shape.host_problem_shapes = shapes.data();
    printf("mixed can_implement(host shapes) = %d\n", (int)gm.can_implement(am2));
    for (int c : {16, 32, 64, 128, K}) { auto a3 = am2; a3.mainloop.chunk_size = c; printf("  chunk=%d can_implement=%d\n", c, (int)gm.can_implement(a3)); }
  }
  size_t ws = GemmMixed::get_workspace_size(am); void* dws = dalloc<uint8_t>(ws);
  auto st = gm.initialize(am, dws); printf("mixed init %d\n", (int)st);
  st = gm.run(); CK(cudaDeviceSynchronize()); printf("mixed run %d\n", (int)st);

  typename GemmRef::Arguments ar;
  make_fusion(ar.epilogue.thread);
  ar = typename GemmRef::Arguments{cutlass::gemm::GemmUniversalMode::kGrouped, {G, d_shapes, shapes.data()},
      {(MmaType const**)d_Wdq, d_sAref, (MmaType const**)d_X, d_sB},
      {ar.epilogue.thread, (ElementC const**)d_C, d_sC, d_Dref, d_sD}, hw};
  GemmRef gr; size_t ws2 = GemmRef::get_workspace_size(ar); void* dws2 = dalloc<uint8_t>(ws2);
  st = gr.initialize(ar, dws2); printf("ref init %d\n", (int)st);
  st = gr.run(); CK(cudaDeviceSynchronize()); printf("ref run %d\n", (int)st);

  long long nbitdiff = 0, n = 0; double maxrel = 0, maxrel_ref = 0;
  for (int g = 0; g < G; ++g) {
    std::vector<float> y(T[g] * Nw), yr(T[g] * Nw);
    CK(cudaMemcpy(y.data(), dD[g], y.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(yr.data(), dDref[g], yr.size() * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < y.size(); ++i) {
      ++n; if (memcmp(&y[i], &yr[i], 4)) ++nbitdiff;
      if (big) continue;
      double r = Yref[g][i]; double den = std::max(1.0, std::fabs(r));
      maxrel = std::max(maxrel, std::fabs(y[i] - r) / den); maxrel_ref = std::max(maxrel_ref, std::fabs(yr[i] - r) / den);
    }
  }
  printf("RESULT chunk=%d: elements=%lld bitwise_diff_vs_bf16_gemm=%lld maxrel(mixed vs fp64)=%.3e maxrel(bf16gemm vs fp64)=%.3e\n",
         chunk, n, nbitdiff, maxrel, maxrel_ref);
  // quick timing of both (tiny problem, only indicative)
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int which = 0; which < 2; ++which) {
    for (int i = 0; i < 5; ++i) { if (which) gr.run(); else gm.run(); }
    const int iters = big ? 20 : 50;
    cudaEventRecord(e0); for (int i = 0; i < iters; ++i) { if (which) gr.run(); else gm.run(); } cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1);
    double flop = 0; for (int g = 0; g < G; ++g) flop += 2.0 * Nw * T[g] * double(K);
    printf("time %s: %.2f us/iter, %.1f TFLOP/s\n", which ? "bf16-ref" : "mixed", ms * 1000 / iters, flop / (ms / iters * 1e-3) / 1e12);
  }
  return 0;
}
