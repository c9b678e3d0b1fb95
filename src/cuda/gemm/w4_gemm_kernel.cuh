// The plan (c) kernel: the M-grouped GEMM with the weight read as 4-bit codes. Computed swapped,
// D^T = B A^T per tile: the weight (B) is WGMMA's register-sourced operand and the tokens (A, the
// exact BF16 copy plan (a) makes of them) its shared-memory operand. Persistent CTAs walk
// (group, token tile, weight tile) tiles of 256 tokens x 128 weight rows, K in steps of 64; the
// 256 threads are two consumer warpgroups (64 weight rows each) that also issue the cp.async
// loads of a five-stage ring (tokens 128-byte swizzled as WGMMA reads them, the weight's codes
// and E4M3 scales raw). Each k-tile, a thread converts its fragment of the weight (2 rows x 4
// k16 steps x 4 codes) from the codes in shared memory to BF16 registers, code * scale * 2^-7
// exactly, while the previous k-tile's WGMMAs run; the epilogue multiplies by 2^7 (exact) and
// alpha[g], stages the transposed tile in shared memory and stores whole 16-byte rows.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
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
  const cutlass::bfloat16_t* a = nullptr;  // (M, K) exact BF16 values of A, row stride lda
  int64_t lda = 0;
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
  static constexpr int kBK = 64, kStages = 5, kThreads = 256;
  static constexpr int kAhead = kStages - 2;  // k-tiles in flight ahead of the one consumed
  static constexpr int kMaxGroups = 1024;     // group ends and tile prefix live in shared memory
  static constexpr int kOutPitch = kBW + 8;   // staged output row: 128 bf16 + 16 bytes
  using Bf16 = cutlass::bfloat16_t;
  using Mma = decltype(cute::make_tiled_mma(
      cute::SM90_64x256x16_F32BF16BF16_RS<cute::GMMA::Major::K, cute::GMMA::Major::K>{},
      cute::Layout<cute::Shape<cute::_2, cute::_1, cute::_1>>{}));
  using LayoutT = decltype(cute::tile_to_shape(
      cute::GMMA::Layout_K_SW128_Atom<Bf16>{},
      cute::Shape<cute::Int<kBT>, cute::Int<kBK>, cute::Int<kStages>>{}));
  static_assert(kThreads == 2 * kBW, "one code load (16 bytes) per thread and k-tile");
  static_assert(kBK == 64, "one token row of a k-tile is one 128-byte swizzle row");
};

struct alignas(1024) W4Smem {
  // Token tiles of the ring; after a tile's k loop, its staged output (kBT x kOutPitch bf16).
  cute::array_aligned<W4Traits::Bf16, cute::cosize_v<W4Traits::LayoutT>, 1024> t;
  alignas(16) uint8_t codes[W4Traits::kStages][W4Traits::kBW][W4Traits::kBK / 2];
  alignas(16) uint8_t scales[W4Traits::kStages][W4Traits::kBW][W4Traits::kBK / 16];
  int32_t ends[W4Traits::kMaxGroups];       // clamped group ends
  int32_t tile_ends[W4Traits::kMaxGroups];  // cumulative tile counts
  int32_t scan[W4Traits::kThreads / 32];
};
static_assert(W4Traits::kBT * W4Traits::kOutPitch <= cute::cosize_v<W4Traits::LayoutT>,
              "the output tile is staged in the token ring");

// One k16 step of a weight row for this thread (w4_convert.h): the WGMMA A registers lo (k = 2t,
// 2t + 1) and hi (k = 8 + 2t, 9 + 2t), each value code * scale * 2^-7; s2 = (S, S) with S =
// scale * 2^119 (fused_fp4_dequant.cuh).
__device__ __forceinline__ void w4_step_pairs(uint32_t w0, uint32_t w1, uint32_t sel, uint32_t s2,
                                              uint32_t& lo, uint32_t& hi) {
  uint32_t lo_bits, hi_bits;
  w4::step_code_bits(w0, w1, sel, lo_bits, hi_bits);
  lo = fp4::bf16x2_mul(lo_bits, s2);
  hi = fp4::bf16x2_mul(hi_bits, s2);
}

// The A registers of k16 step `st` for rows r (f(4 st), f(4 st + 2)) and r + 8 (f(4 st + 1),
// f(4 st + 3)) from the k-tile's codes and scales in shared memory.
template <class Frag>
__device__ __forceinline__ void w4_convert_step(const W4Smem& s, int stage, int r, int st,
                                                uint32_t sel, Frag& f) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = r + 8 * h;
    const uint2 c = *reinterpret_cast<const uint2*>(&s.codes[stage][row][8 * st]);
    const uint32_t sc = s.scales[stage][row][st];
    const uint32_t s1 = fp4::e4m3x2_to_bf16x2_scaled(sc);  // (S, 0): S in the low half
    uint32_t lo, hi;
    w4_step_pairs(c.x, c.y, sel, __byte_perm(s1, 0, 0x1010), lo, hi);
    f(4 * st + h) = lo;
    f(4 * st + 2 + h) = hi;
  }
}

// Epilogue (N10, tensor/group scope): y = (acc * 2^7) * alpha[g], one RNE cast (the products
// carried 2^-7), staged transposed as out[token][weight row] in the ring, then stored as 16-byte
// row pieces; tokens past the group end and weight rows past N are not stored. The caller
// synchronises before and after.
template <class Acc, class Coord>
__device__ __forceinline__ void w4_store_tile(const W4Args& p, const GroupTile& tile, W4Smem& s,
                                              const Acc& acc, const Coord& tCc) {
  using namespace cute;
  using T = W4Traits;
  const float alpha = group_alpha_of(p.alpha, tile.g);
  __nv_bfloat16* so = reinterpret_cast<__nv_bfloat16*>(s.t.data());
#pragma unroll
  for (int i = 0; i < size(acc); ++i) {
    const int wr = get<0>(tCc(i)), tk = get<1>(tCc(i));
    so[tk * T::kOutPitch + wr] = __float2bfloat16_rn(num::mul(num::mul(acc(i), 128.0f), alpha));
  }
  __syncthreads();
  constexpr int kPieces = T::kBW / 8;  // 16-byte pieces per staged row
  for (int idx = threadIdx.x; idx < T::kBT * kPieces; idx += T::kThreads) {
    const int tk = idx / kPieces, pc = idx - tk * kPieces;
    const int col = tile.col0 + pc * 8;
    if (tk >= tile.rows || col >= p.n) continue;  // n % 8 == 0: a piece is all in or all out
    *reinterpret_cast<uint4*>(p.d + int64_t(tile.row0 + tk) * p.ld_d + col) =
        *reinterpret_cast<const uint4*>(so + tk * T::kOutPitch + pc * 8);
  }
}

__global__ void __launch_bounds__(W4Traits::kThreads, 1) w4_gemm_kernel(W4Args p) {
  using namespace cute;
  using T = W4Traits;
  constexpr int kBW = T::kBW, kBT = T::kBT, kBK = T::kBK, kStages = T::kStages;
  extern __shared__ char smem_raw[];
  const uint32_t pad =
      (1024u - (static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw)) & 1023u)) & 1023u;
  W4Smem& s = *reinterpret_cast<W4Smem*>(smem_raw + pad);
  const int tid = threadIdx.x;
  const int n_tiles = (p.n + kBW - 1) / kBW;
  const int total = group_tile_schedule<kBT, T::kThreads>(p.offs, p.groups, p.m, n_tiles, s.ends,
                                                          s.tile_ends, s.scan);

  Tensor sT = make_tensor(make_smem_ptr(s.t.data()), T::LayoutT{});  // (BT, BK, stage)
  typename T::Mma mma;
  auto thr = mma.get_thread_slice(tid);
  Tensor tCrB = thr.make_fragment_B(thr.partition_B(sT));  // GMMA descriptors of the tokens
  // The A registers, ((2, 2, 2), 1, k16 steps) bf16 in the atom's value order
  // (ALayout_64x16: k + 1, row + 8, k + 8), compact: register 4 s + j holds values 2j, 2j + 1
  // of step s, as the PTX fragment (a0..a7) wants them.
  using FragLayout = Layout<Shape<Shape<_2, _2, _2>, _1, Int<kBK / 16>>>;
  Tensor tCrA = make_tensor<T::Bf16>(FragLayout{});
  Tensor fA = recast<uint32_t>(tCrA);                                   // 4 registers per k16 step
  Tensor acc = partition_fragment_C(mma, Shape<Int<kBW>, Int<kBT>>{});  // FP32, (weight, token)
  Tensor tCc = thr.partition_C(make_identity_tensor(Shape<Int<kBW>, Int<kBT>>{}));

  // This thread's weight rows in the tile (WGMMA A layout: warp w of warpgroup g holds rows
  // 64g + 16w + lane / 4 and + 8, k pairs 2 * (lane % 4) and + 8 of every k16 step).
  const int lane = tid & 31;
  const int wrow = (tid >> 7) * 64 + ((tid >> 5) & 3) * 16 + (lane >> 2);
  const uint32_t tq = lane & 3;
  const uint32_t sel = w4::pair_selector(tq);
  const int kt_count = p.k / kBK;
  // Loads: tokens tid / 8 + 32 i (i < 8), 16-byte chunk tid % 8; codes of weight row tid / 2,
  // half tid % 2; scales of weight row tid (tid < kBW).
  const int lrow = tid >> 3, lchunk = tid & 7;

  for (int t = blockIdx.x; t < total; t += gridDim.x) {
    const GroupTile tile = group_tile_at<kBT, kBW>(s.ends, s.tile_ends, p.groups, n_tiles, t);
    const int g = tile.g, row0 = tile.row0, col0 = tile.col0;
    // Rows past the group end and weight rows past N read the last valid row instead (in
    // bounds; they only meet outputs that are not stored).
    const uint8_t* bc = p.b_codes + g * p.b_code_gs +
                        int64_t(min(col0 + (tid >> 1), p.n - 1)) * p.b_code_ld + (tid & 1) * 16;
    const uint8_t* bs = p.b_scales + g * p.b_scale_gs +
                        int64_t(min(col0 + min(tid, kBW - 1), p.n - 1)) * p.b_scale_ld;

    auto load = [&](int kt, int stage) {
#pragma unroll
      for (int i = 0; i < kBT / 32; ++i) {
        const int r = lrow + 32 * i;
        const int64_t src_row = row0 + min(r, tile.rows - 1);
        cp_async16(shared_addr(&sT(r, lchunk * 8, stage)),
                   p.a + src_row * p.lda + kt * kBK + lchunk * 8);
      }
      cp_async16(shared_addr(&s.codes[stage][tid >> 1][(tid & 1) * 16]), bc + kt * (kBK / 2));
      if (tid < kBW) cp_async4(shared_addr(&s.scales[stage][tid][0]), bs + kt * (kBK / 16));
    };
    // One commit group per k16 step, at most kInFlight of them pending: when step j is issued,
    // step j - kInFlight (same registers, previous k-tile) is complete, so step j + 1's registers
    // can be written while three steps run (CUTLASS's RS mainloop schedule). At each k-tile
    // boundary the block barrier publishes the k-tile's copies and frees the stage that the
    // next copies overwrite (read by k-tile kt - 1, whose steps are complete).
    constexpr int kSteps = kBK / 16, kInFlight = kSteps - 1;
    auto enter_ktile = [&](int kt) {
      cp_async_wait<T::kAhead - 1>();  // this thread's copies of k-tile kt have landed
      fence_proxy_async_shared();
      __syncthreads();
      if (kt + T::kAhead < kt_count) load(kt + T::kAhead, (kt + T::kAhead) % kStages);
      cp_async_commit();
      w4_convert_step(s, kt % kStages, wrow, 0, sel, fA);
    };

#pragma unroll
    for (int i = 0; i < T::kAhead; ++i) {
      if (i < kt_count) load(i, i);
      cp_async_commit();
    }
    mma.accumulate_ = GMMA::ScaleOut::Zero;  // the first k16 step writes, the others add
    warpgroup_fence_operand(acc);
    enter_ktile(0);
    for (int kt = 0; kt < kt_count; ++kt) {
      const int stage = kt % kStages;
#pragma unroll
      for (int kb = 0; kb < kSteps; ++kb) {
        warpgroup_arrive();
        cute::gemm(mma, tCrA(_, _, kb), tCrB(_, _, kb, stage), acc);
        mma.accumulate_ = GMMA::ScaleOut::One;
        warpgroup_commit_batch();
        warpgroup_wait<kInFlight>();
        if (kb + 1 < kSteps) {
          w4_convert_step(s, stage, wrow, kb + 1, sel, fA);
        } else if (kt + 1 < kt_count) {
          enter_ktile(kt + 1);
        }
      }
    }
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);
    cp_async_wait<0>();
    __syncthreads();  // every WGMMA and copy of the tile is done: the ring becomes the output

    w4_store_tile(p, tile, s, acc, tCc);
    __syncthreads();  // the staged tile is read before the next tile's loads overwrite it
  }

  zero_rows_past_groups(p.d, p.ld_d * 2, p.n * 2, s.ends[p.groups - 1], p.m);
}

}  // namespace f46::cuda::gemm_detail
