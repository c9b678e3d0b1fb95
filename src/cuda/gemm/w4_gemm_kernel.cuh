// The plan (c) kernel: the M-grouped GEMM with the weight read as 4-bit codes. Computed swapped,
// D^T = B A^T per tile: the weight (B) is WGMMA's register-sourced operand and the tokens (A, the
// exact BF16 copy plan (a) makes of them) its shared-memory operand. Persistent CTAs walk
// (group, token tile, weight tile) tiles of 256 tokens x 128 weight rows, K in steps of 64.
// Warp-specialised: a producer warpgroup fills a four-stage ring (the tokens by
// TMA, 128-byte swizzled as WGMMA reads them; the weight's codes and E4M3 scales by cp.async)
// guarded by full and empty mbarriers; two consumer warpgroups (64 weight rows each) only convert
// their fragment of the weight from the codes in shared memory to BF16 registers, code * scale *
// 2^-7 exactly, and issue the WGMMAs. The epilogue multiplies by 2^7 (exact) and alpha[g], stages
// the transposed tile in shared memory (128 tokens at a time) and stores whole 16-byte rows while
// the producer already loads the next tile.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>

#include <cstdint>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/tensor.hpp>

#include "common/numerics.h"
#include "cuda/common/cp_async.cuh"
#include "fused_fp4_dequant.cuh"
#include "gemm_scale.h"
#include "group_tiles.cuh"
#include "grouped_bf16_gemm.h"
#include "w4_convert.h"

namespace f46::cuda::gemm_detail {

// Kernel arguments (element or byte strides as named; validated by w4_supported).
struct W4Args {
  CUtensorMap tokens;  // TMA map of A's BF16 copy: (M, K), boxes of 256 rows x 64, 128B swizzle
  const uint8_t* b_codes = nullptr;   // (E, N, K/2): two E2M1 codes per byte
  const uint8_t* b_scales = nullptr;  // (E, N, K/16) E4M3
  int64_t b_code_ld = 0, b_scale_ld = 0, b_code_gs = 0, b_scale_gs = 0;  // bytes
  const int32_t* offs = nullptr;  // (groups) cumulative ends, device; null: one group, all rows
  int groups = 1;
  int m = 0, n = 0, k = 0;
  __nv_bfloat16* d = nullptr;  // (M, N) bf16, row stride ld_d
  int64_t ld_d = 0;
  GroupAlpha alpha;
};

struct W4Traits {
  static constexpr int kBW = 128;  // weight rows per tile (WGMMA M: 64 per warpgroup)
  static constexpr int kBT = 256;  // tokens per tile (WGMMA N)
  static constexpr int kBK = 64, kStages = 4;
  // Two consumer warpgroups and a producer warpgroup. The launch gives
  // every thread 168 registers (65536 / 384, rounded down to 8); setmaxnreg then moves them
  // from the producers to the consumers: 128 x (168 - 40) = 256 x (232 - 168), so the
  // consumers' allocation can always be granted.
  static constexpr int kConsumers = 256, kThreads = kConsumers + 128;
  static constexpr int kLaunchRegs = 168, kConsumerRegs = 232, kProducerRegs = 40;
  static_assert((kThreads - kConsumers) * (kLaunchRegs - kProducerRegs) ==
                    kConsumers * (kConsumerRegs - kLaunchRegs),
                "the registers the producers free are the ones the consumers take");
  static constexpr int kMaxGroups = 1024;     // group ends and tile prefix live in shared memory
  static constexpr int kCodePitch = 48;       // bytes per staged code row: conflict-free LDS.64
  static constexpr int kOutTokens = kBT / 2;  // tokens staged per epilogue half
  static constexpr int kOutPitch = kBW + 8;   // staged output row: 128 bf16 + 16 bytes
  static constexpr uint32_t kTokenBytes = kBT * kBK * 2;  // one TMA box
  static constexpr int kFullArrivals = 1 + 3 * 32;        // the TMA's expect_tx + 3 copy warps
  static constexpr int kEmptyArrivals = kConsumers;       // every consumer thread
  using Bf16 = cutlass::bfloat16_t;
  using Mma = decltype(cute::make_tiled_mma(
      cute::SM90_64x256x16_F32BF16BF16_RS<cute::GMMA::Major::K, cute::GMMA::Major::K>{},
      cute::Layout<cute::Shape<cute::_2, cute::_1, cute::_1>>{}));
  using LayoutT = decltype(cute::tile_to_shape(
      cute::GMMA::Layout_K_SW128_Atom<Bf16>{},
      cute::Shape<cute::Int<kBT>, cute::Int<kBK>, cute::Int<kStages>>{}));
  static_assert(kBK == 64, "one token row of a k-tile is one 128-byte swizzle row (TMA box)");
};

struct alignas(1024) W4Smem {
  cute::array_aligned<W4Traits::Bf16, cute::cosize_v<W4Traits::LayoutT>, 1024> t;  // token ring
  alignas(16) uint8_t codes[W4Traits::kStages][W4Traits::kBW][W4Traits::kCodePitch];
  alignas(16) uint32_t scales[W4Traits::kStages][W4Traits::kBW];  // the k-tile's 4 scale bytes
  alignas(16) __nv_bfloat16 out[W4Traits::kOutTokens * W4Traits::kOutPitch];
  uint32_t scale2[256];  // E4M3 byte b -> bf16x2 (S, S), S = scale(b) * 2^119
  uint64_t full[W4Traits::kStages], empty[W4Traits::kStages];
  int32_t ends[W4Traits::kMaxGroups];       // clamped group ends
  int32_t tile_ends[W4Traits::kMaxGroups];  // cumulative tile counts
  int32_t scan[W4Traits::kThreads / 32];
};

// A k-tile of this thread's weight fragment, converted: for every k16 step st and row r + 8 h,
// the BF16 bit pairs of code * 2^-126 (lo: k = 2t, 2t + 1; hi: k = 8 + 2t, 9 + 2t; w4_convert.h)
// and (S, S), S = scale * 2^119 (the CTA's table), so that a step only multiplies.
struct W4KTile {
  uint32_t bits[4][2][2];  // [step][h][lo, hi]
  uint32_t s2[4][2];       // [step][h]
};

// A k-tile's shared data for this thread (rows r and r + 8): its 32 code bytes (steps 0, 1 |
// 2, 3) and its 4 scale bytes, loaded into registers one k-tile ahead of their conversion.
struct W4Raw {
  uint4 c[2][2];
  uint32_t sw[2];
};

__device__ __forceinline__ uint4 lds128(uint32_t a) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(a));
  return v;
}
__device__ __forceinline__ uint32_t lds32(uint32_t a) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(a));
  return v;
}

// codes / scales: shared addresses of this thread's row r in stage 0.
__device__ __forceinline__ void w4_load_ktile(uint32_t codes, uint32_t scales, int stage,
                                              W4Raw& k) {
  using T = W4Traits;
  constexpr uint32_t kCodeStage = T::kBW * T::kCodePitch, kScaleStage = T::kBW * 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint32_t row = codes + stage * kCodeStage + 8 * h * T::kCodePitch;
    k.c[h][0] = lds128(row);
    k.c[h][1] = lds128(row + 16);
    k.sw[h] = lds32(scales + stage * kScaleStage + 8 * h * 4);
  }
}

// The (S, S) words of a loaded k-tile (shared loads from the CTA's table).
__device__ __forceinline__ void w4_scale_pairs(const W4Smem& s, const W4Raw& k,
                                               uint32_t (&s2)[4][2]) {
#pragma unroll
  for (int st = 0; st < 4; ++st)
#pragma unroll
    for (int h = 0; h < 2; ++h) s2[st][h] = s.scale2[__byte_perm(k.sw[h], 0, 0x4440 | st)];
}

// The code bits of a loaded k-tile (register work only).
__device__ __forceinline__ void w4_code_bits(const W4Raw& k, uint32_t sel,
                                             uint32_t (&bits)[4][2][2]) {
#pragma unroll
  for (int st = 0; st < 4; ++st)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint4& q = k.c[h][st >> 1];
      const uint32_t w0 = (st & 1) ? q.z : q.x, w1 = (st & 1) ? q.w : q.y;
      w4::step_code_bits(w0, w1, sel, bits[st][h][0], bits[st][h][1]);
    }
}

// The A registers of k16 step `st`: rows r (f(4 st), f(4 st + 2)) and r + 8 (f(4 st + 1),
// f(4 st + 3)), each value code * scale * 2^-7.
template <class Frag>
__device__ __forceinline__ void w4_finish_step(const W4KTile& k, int st, Frag& f) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    f(4 * st + h) = fp4::bf16x2_mul(k.bits[st][h][0], k.s2[st][h]);
    f(4 * st + 2 + h) = fp4::bf16x2_mul(k.bits[st][h][1], k.s2[st][h]);
  }
}

// CUTLASS's mbarrier wait and arrive carry no "memory" clobber: these compiler fences keep the
// kernel's shared-memory loads and stores on their side of them.
__device__ __forceinline__ void mbar_wait(const uint64_t* bar, uint32_t parity) {
  cutlass::arch::ClusterBarrier::wait(bar, parity);
  asm volatile("" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive(const uint64_t* bar) {
  asm volatile("" ::: "memory");
  cutlass::arch::ClusterBarrier::arrive(bar);
}

// Named barriers 1 and 2: the 128 threads of consumer warpgroup `wg`.
__device__ __forceinline__ void w4_warpgroup_sync(int wg) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
}

// Four 8x8 bf16 matrices from the MMA fragment layout (register i: row lane / 4, columns
// 2 (lane % 4) and + 1 of matrix i) stored transposed: lane l gives the shared address of row
// l % 8 of the transposed matrix l / 8 (16 bytes, 16-byte aligned).
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, const uint32_t (&r)[4]) {
  asm volatile(
      "stmatrix.sync.aligned.x4.trans.m8n8.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
      "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
      : "memory");
}

// Epilogue (N10, tensor/group scope): y = (acc * 2^7) * alpha[g], one RNE cast (the products
// carried 2^-7), staged transposed as out[token][weight row] 128 tokens at a time, then stored as
// 16-byte row pieces; tokens past the group end and weight rows past N are not stored. The
// accumulator fragment of the 64 x 256 warpgroup tile: acc(4 j + 2 h + c) holds weight row
// lane / 4 + 8 h of the warp's 16 and token 8 j + 2 (lane % 4) + c; an n8 block j is thus two
// 8x8 matrices (h = 0, 1) in the fragment layout stmatrix takes, stored transposed: token 8 j + i
// gets the 8 weight rows of matrix h as one 16-byte row. Each warpgroup stages and stores its
// own 64 weight rows (columns of the staging buffer) behind its own barrier, so one warpgroup's
// epilogue runs while the other one's next mainloop keeps the tensor cores busy.
template <class Acc>
__device__ __forceinline__ void w4_store_tile(const W4Args& p, const GroupTile& tile, W4Smem& s,
                                              const Acc& acc) {
  using namespace cute;
  using T = W4Traits;
  static_assert(decltype(size(acc))::value == 4 * (T::kBT / 8), "2 x 2 values per n8 block");
  const float alpha = group_alpha_of(p.alpha, tile.g);
  const int wg = threadIdx.x >> 7, t = threadIdx.x & 127;
  const int lane = threadIdx.x & 31, mat = lane >> 3;
  const int wcol = wg * 64 + ((threadIdx.x >> 5) & 3) * 16 + (mat & 1) * 8;
  const uint32_t base = shared_addr(&s.out[((mat >> 1) * 8 + (lane & 7)) * T::kOutPitch + wcol]);
  auto value = [&](int i) { return num::mul(num::mul(acc(i), 128.0f), alpha); };
  constexpr int kPieces = 64 / 8;  // 16-byte pieces of a warpgroup's staged row
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    w4_warpgroup_sync(wg);  // the previous half's (or tile's) staged rows are stored
#pragma unroll
    for (int jj = 0; jj < T::kOutTokens / 16; ++jj) {  // n8 blocks j, j + 1 of this half
      const int j = half * (T::kOutTokens / 8) + 2 * jj;
      uint32_t r[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {  // matrices (j, h = 0), (j, 1), (j + 1, 0), (j + 1, 1)
        const int i = 4 * (j + (q >> 1)) + 2 * (q & 1);
        const __nv_bfloat162 v = __floats2bfloat162_rn(value(i), value(i + 1));
        r[q] = *reinterpret_cast<const uint32_t*>(&v);
      }
      stmatrix_x4_trans(base + jj * 16 * T::kOutPitch * 2, r);
    }
    w4_warpgroup_sync(wg);
    for (int idx = t; idx < T::kOutTokens * kPieces; idx += 128) {
      const int tk = idx / kPieces, pc = wg * kPieces + (idx - tk * kPieces);
      const int row = tk + half * T::kOutTokens, col = tile.col0 + pc * 8;
      if (row >= tile.rows || col >= p.n) continue;  // n % 8 == 0: a piece is all in or all out
      *reinterpret_cast<uint4*>(p.d + int64_t(tile.row0 + row) * p.ld_d + col) =
          *reinterpret_cast<const uint4*>(&s.out[tk * T::kOutPitch + pc * 8]);
    }
  }
}

// The producer warpgroup: for every k-tile of every tile of this CTA each warp waits until the
// stage is free, then warp 0 loads the token box by TMA (lane 0), warps 1 and 2 the 128 weight
// rows' codes (two 16-byte pieces per row, 64 rows each) and warp 3 their scale words by
// cp.async; a lane arrives on a stage's full barrier once its copies of that stage have landed,
// checked when its next k-tile's copies are issued (one k-tile in flight). The source rows are
// fixed per tile, so each lane keeps its four source pointers and shared addresses. Token rows past
// the group end come from the next group or are TMA's zeros past M, and weight rows past N repeat
// row N - 1: they only meet outputs that are not stored.
__device__ __forceinline__ void w4_produce(const W4Args& p, W4Smem& s, int total, int n_tiles) {
  using T = W4Traits;
  using cutlass::arch::ClusterTransactionBarrier;
  const int lane = threadIdx.x & 31, warp = (threadIdx.x - T::kConsumers) >> 5;
  const int kt_count = p.k / T::kBK;
  const uint64_t hint = static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_NORMAL);
  // This lane's four copies of a k-tile: rows, shared addresses (stage 0) and source steps.
  const bool codes = warp == 1 || warp == 2;
  int rows[4];
  uint32_t dst[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    rows[j] = codes ? (lane >> 1) + 16 * (j + 4 * (warp - 1)) : lane + 32 * j;
    dst[j] = codes ? shared_addr(&s.codes[0][rows[j]][(lane & 1) * 16])
                   : shared_addr(&s.scales[0][rows[j]]);
  }
  const uint32_t stage_bytes = codes ? sizeof(s.codes[0]) : sizeof(s.scales[0]);
  const int64_t k_step = codes ? T::kBK / 2 : T::kBK / 16;  // source bytes per k-tile
  uint32_t it = 0;   // k-tiles loaded so far: stage it % kStages, use it / kStages
  int pending = -1;  // the stage whose copies this lane has issued but not yet published
  for (int t = blockIdx.x; t < total; t += gridDim.x) {
    const GroupTile tile = group_tile_at<T::kBT, T::kBW>(s.ends, s.tile_ends, p.groups, n_tiles, t);
    const int last = p.n - 1 - tile.col0;  // the last weight row of the tile inside N
    const uint8_t* src[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t row = tile.col0 + min(rows[j], last);
      src[j] = codes ? p.b_codes + tile.g * p.b_code_gs + row * p.b_code_ld + (lane & 1) * 16
                     : p.b_scales + tile.g * p.b_scale_gs + row * p.b_scale_ld;
    }
    for (int kt = 0; kt < kt_count; ++kt, ++it) {
      const int stage = static_cast<int>(it % T::kStages);
      mbar_wait(&s.empty[stage], ((it / T::kStages) & 1) ^ 1);
      if (warp == 0) {
        if (lane == 0) {
          ClusterTransactionBarrier::arrive_and_expect_tx(&s.full[stage], T::kTokenBytes);
          cute::SM90_TMA_LOAD_2D::copy(&p.tokens, &s.full[stage], hint,
                                       s.t.data() + stage * T::kBT * T::kBK, kt * T::kBK,
                                       tile.row0);
        }
        continue;
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (codes) {
          cp_async16(dst[j] + stage * stage_bytes, src[j] + kt * k_step);
        } else {
          cp_async4(dst[j] + stage * stage_bytes, src[j] + kt * k_step);
        }
      }
      // This lane's copies of the previous k-tile have landed: publish them (release).
      cp_async_commit();
      if (pending >= 0) {
        cp_async_wait<1>();
        mbar_arrive(&s.full[pending]);
      }
      pending = stage;
    }
  }
  if (pending >= 0) {
    cp_async_wait<0>();
    mbar_arrive(&s.full[pending]);
  }
}

// The consumer warpgroups: per tile, the k loop over the ring with one commit group per k16
// step and at most kInFlight of them pending: when step j is issued, step j - kInFlight (same
// registers, previous k-tile) is complete, so step j + 1's registers can be written while three
// steps run (CUTLASS's RS mainloop schedule). Step 2 of k-tile kt completes k-tile kt - 1, whose
// stage is then released to the producer. The next k-tile (of this tile or of the CTA's next one)
// is prepared across the steps, each part behind three running steps: its stage awaited and its
// codes and scales loaded after step 0, its scale pairs looked up after step 1, its code bits
// formed and its step 0 finished after step 3; no step waits on shared memory.
__device__ __forceinline__ void w4_consume(const W4Args& p, W4Smem& s, int total, int n_tiles) {
  using namespace cute;
  using T = W4Traits;
  constexpr int kSteps = T::kBK / 16, kInFlight = kSteps - 1;
  const int tid = threadIdx.x, kt_count = p.k / T::kBK;
  Tensor sT = make_tensor(make_smem_ptr(s.t.data()), T::LayoutT{});  // (BT, BK, stage)
  typename T::Mma mma;
  auto thr = mma.get_thread_slice(tid);
  Tensor tCrB = thr.make_fragment_B(thr.partition_B(sT));  // GMMA descriptors of the tokens
  // The A registers, ((2, 2, 2), 1, k16 steps) bf16 in the atom's value order
  // (ALayout_64x16: k + 1, row + 8, k + 8), compact: register 4 s + j holds values 2j, 2j + 1
  // of step s, as the PTX fragment (a0..a7) wants them.
  using FragLayout = Layout<Shape<Shape<_2, _2, _2>, _1, Int<kSteps>>>;
  Tensor tCrA = make_tensor<T::Bf16>(FragLayout{});
  Tensor fA = recast<uint32_t>(tCrA);                                         // 4 per k16 step
  Tensor acc = partition_fragment_C(mma, Shape<Int<T::kBW>, Int<T::kBT>>{});  // FP32

  // This thread's weight rows in the tile (WGMMA A layout: warp w of warpgroup g holds rows
  // 64g + 16w + lane / 4 and + 8, k pairs 2 * (lane % 4) and + 8 of every k16 step). Their
  // shared addresses and the code selector are opaque to the compiler, which would otherwise
  // recompute them from the thread index at every k-tile (a slow special-register read on the
  // critical path).
  const int lane = tid & 31;
  const int wrow = (tid >> 7) * 64 + ((tid >> 5) & 3) * 16 + (lane >> 2);
  uint32_t sel = w4::pair_selector(lane & 3);
  uint32_t codes_addr = shared_addr(&s.codes[0][wrow][0]);
  uint32_t scales_addr = shared_addr(&s.scales[0][wrow]);
  asm volatile("" : "+r"(codes_addr), "+r"(scales_addr), "+r"(sel));
  auto release = [&](uint32_t i) {  // this thread is done with k-tile i's stage
    mbar_arrive(&s.empty[i % T::kStages]);
  };
  W4Raw raw;                      // the next k-tile's codes and scales
  W4KTile cur;                    // the current k-tile, converted
  uint32_t next_s2[4][2];         // the next k-tile's scale pairs
  auto fetch = [&](uint32_t i) {  // wait for k-tile i's stage and load its codes and scales
    const int stage = static_cast<int>(i % T::kStages);
    mbar_wait(&s.full[stage], (i / T::kStages) & 1);
    w4_load_ktile(codes_addr, scales_addr, stage, raw);
  };

  uint32_t it = 0;     // k-tiles consumed so far
  bool ready = false;  // k-tile it is converted and its step 0 finished
  for (int t = blockIdx.x; t < total; t += gridDim.x) {
    const GroupTile tile = group_tile_at<T::kBT, T::kBW>(s.ends, s.tile_ends, p.groups, n_tiles, t);
    const bool more_tiles = t + static_cast<int>(gridDim.x) < total;
    mma.accumulate_ = GMMA::ScaleOut::Zero;  // the first k16 step writes, the others add
    warpgroup_fence_operand(acc);
    if (!ready) {
      fetch(it);
      w4_scale_pairs(s, raw, cur.s2);
      w4_code_bits(raw, sel, cur.bits);
      w4_finish_step(cur, 0, fA);
    }
    for (int kt = 0; kt < kt_count; ++kt) {
      const uint32_t i = it + kt;
      const int stage = static_cast<int>(i % T::kStages);
      const bool next = kt + 1 < kt_count || more_tiles;
#pragma unroll
      for (int kb = 0; kb < kSteps; ++kb) {
        warpgroup_arrive();
        cute::gemm(mma, tCrA(_, _, kb), tCrB(_, _, kb, stage), acc);
        mma.accumulate_ = GMMA::ScaleOut::One;
        warpgroup_commit_batch();
        warpgroup_wait<kInFlight>();
        if (kb == 2 && kt > 0) release(i - 1);
        if (kb == 0 && next) fetch(i + 1);
        if (kb == 0 && next) w4_scale_pairs(s, raw, next_s2);
        if (kb + 1 < kSteps) {
          w4_finish_step(cur, kb + 1, fA);
        } else if (next) {
          w4_code_bits(raw, sel, cur.bits);
#pragma unroll
          for (int st = 0; st < 4; ++st)
            cur.s2[st][0] = next_s2[st][0], cur.s2[st][1] = next_s2[st][1];
          w4_finish_step(cur, 0, fA);
        }
      }
    }
    ready = more_tiles;
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);
    it += kt_count;
    release(it - 1);
    w4_store_tile(p, tile, s, acc);
  }
}

__global__ void __launch_bounds__(W4Traits::kThreads, 1)
    w4_gemm_kernel(const __grid_constant__ W4Args p) {
  using T = W4Traits;
  extern __shared__ char smem_raw[];
  W4Smem& s = smem_aligned_1024<W4Smem>(smem_raw);
  const int n_tiles = (p.n + T::kBW - 1) / T::kBW;
  if (threadIdx.x < 256) s.scale2[threadIdx.x] = fp4::e4m3x2_to_bf16x2_scaled(threadIdx.x * 0x101u);
  if (threadIdx.x == 0) {
    cute::prefetch_tma_descriptor(&p.tokens);
    for (int i = 0; i < T::kStages; ++i) {
      cutlass::arch::ClusterTransactionBarrier::init(&s.full[i], T::kFullArrivals);
      cutlass::arch::ClusterBarrier::init(&s.empty[i], T::kEmptyArrivals);
    }
  }
  // (its block barriers also publish the scale table and the mbarrier initialisation)
  const int total = group_tile_schedule<T::kBT, T::kThreads>(p.offs, p.groups, p.m, n_tiles, s.ends,
                                                             s.tile_ends, s.scan);
  if (threadIdx.x >= T::kConsumers) {
    cutlass::arch::warpgroup_reg_dealloc<T::kProducerRegs>();
    w4_produce(p, s, total, n_tiles);
  } else {
    cutlass::arch::warpgroup_reg_alloc<T::kConsumerRegs>();
    w4_consume(p, s, total, n_tiles);
  }
  zero_rows_past_groups(p.d, p.ld_d * 2, p.n * 2, s.ends[p.groups - 1], p.m);
}

}  // namespace f46::cuda::gemm_detail
