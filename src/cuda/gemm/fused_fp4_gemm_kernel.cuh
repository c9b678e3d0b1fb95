// The plan (b) kernel: persistent CTAs over (group, m-tile, n-tile) tiles, each tile 128 x 256
// with K in steps of 64. Every thread loads 4-bit codes and E4M3 scales of its rows straight
// from global memory (two k-tiles in flight in registers) and dequantizes one k-tile into a
// ring of three BF16 shared tiles (K-major, 128-byte swizzle, one swizzle row = 64 BF16 = one
// k-tile row) while the two warpgroups' WGMMAs (64x256x16 each, FP32 accumulators) run on the
// previous ones: k-tile kt + 1 is written while WGMMAs kt (and kt - 1) run, so the tensor cores
// are never left without work at the block barrier. Epilogue: alpha[g] * acc, one cast,
// straight from the accumulators.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <cute/tensor.hpp>

#include "common/numerics.h"
#include "cuda/common/cp_async.cuh"
#include "f46/quantize.h"
#include "fused_fp4_dequant.cuh"
#include "gemm_scale.h"
#include "group_tiles.cuh"
#include "grouped_bf16_gemm.h"

namespace f46::cuda::gemm_detail {

// Kernel arguments (byte strides; validated by fused_fp4_supported).
struct FusedArgs {
  const uint8_t* a_codes = nullptr;   // (M, K/2): two E2M1 codes per byte
  const uint8_t* a_scales = nullptr;  // (M, K/16) E4M3
  int64_t a_code_ld = 0, a_scale_ld = 0;
  const uint8_t* b_codes = nullptr;   // (E, N, K/2)
  const uint8_t* b_scales = nullptr;  // (E, N, K/16)
  int64_t b_code_ld = 0, b_scale_ld = 0, b_code_gs = 0, b_scale_gs = 0;
  const int32_t* offs = nullptr;  // (groups) cumulative ends, device; null: one group, all rows
  int groups = 1;
  int m = 0, n = 0, k = 0;
  void* d = nullptr;  // (M, N) bf16 or float, row stride ld_d
  bool d_bf16 = true;
  int64_t ld_d = 0;
  GroupAlpha alpha;
};

struct FusedTraits {
  static constexpr int kBM = 128, kBN = 256, kBK = 64, kStages = 3, kThreads = 256;
  static constexpr int kMaxGroups = 1024;  // group ends and tile prefix live in shared memory
  using Bf16 = cutlass::bfloat16_t;
  using Mma = decltype(cute::make_tiled_mma(
      cute::SM90_64x256x16_F32BF16BF16_SS<cute::GMMA::Major::K, cute::GMMA::Major::K>{},
      cute::Layout<cute::Shape<cute::_2, cute::_1, cute::_1>>{}));
  using LayoutA = decltype(cute::tile_to_shape(
      cute::GMMA::Layout_K_SW128_Atom<Bf16>{},
      cute::Shape<cute::Int<kBM>, cute::Int<kBK>, cute::Int<kStages>>{}));
  using LayoutB = decltype(cute::tile_to_shape(
      cute::GMMA::Layout_K_SW128_Atom<Bf16>{},
      cute::Shape<cute::Int<kBN>, cute::Int<kBK>, cute::Int<kStages>>{}));
  static_assert(kThreads == 2 * kBM && kBN == 2 * kBM,
                "each thread dequantizes one half row of A and two of B per k-tile");
  static_assert(kBK == 64, "one k-tile row must be one 128-byte swizzle row of BF16");
  static_assert(kStages == 3, "the ring holds WGMMA kt - 1's, WGMMA kt's and the next k-tile");
};

struct alignas(1024) FusedSmem {
  cute::array_aligned<FusedTraits::Bf16, cute::cosize_v<FusedTraits::LayoutA>, 1024> a;
  cute::array_aligned<FusedTraits::Bf16, cute::cosize_v<FusedTraits::LayoutB>, 1024> b;
  int32_t ends[FusedTraits::kMaxGroups];       // clamped group ends
  int32_t tile_ends[FusedTraits::kMaxGroups];  // cumulative tile counts
  int32_t scan[8];
};

// The codes and scales of one k-tile for one thread: a half row (32 elements) of A and of two
// rows of B.
struct FusedFrag {
  uint4 a, b0, b1;
  uint32_t sa, sb0, sb1;  // two E4M3 scales each (bytes 0, 1)
};

// The persistent walk over (group, m-tile, n-tile) tiles (group_tiles.cuh).
__device__ int fused_schedule(const FusedArgs& p, FusedSmem& s, int n_tiles) {
  return group_tile_schedule<FusedTraits::kBM, FusedTraits::kThreads>(
      p.offs, p.groups, p.m, n_tiles, s.ends, s.tile_ends, s.scan);
}

using FusedTile = GroupTile;

__device__ __forceinline__ FusedTile fused_tile(const FusedSmem& s, int groups, int n_tiles,
                                                int t) {
  return group_tile_at<FusedTraits::kBM, FusedTraits::kBN>(s.ends, s.tile_ends, groups, n_tiles, t);
}

// Epilogue (N10, tensor/group scope): acc = 2^14 * sum (exact: the operands carried 2^-7 each),
// y = acc * (gA * gB) (gemm_scale.h, as plan (a)), one RNE cast; rows past the group end and
// columns past N are not stored.
template <class Acc, class Coord>
__device__ __forceinline__ void fused_store_tile(const FusedArgs& p, const FusedTile& tile,
                                                 const Acc& acc, const Coord& tCc) {
  using namespace cute;
  const float alpha = group_alpha_of(p.alpha, tile.g);
#pragma unroll
  for (int i = 0; i < size(acc); i += 2) {
    const int r = get<0>(tCc(i)), c = get<1>(tCc(i));
    if (r >= tile.rows || tile.col0 + c >= p.n) continue;  // n % 4 == 0: c even, c + 1 < n too
    const float y0 = num::mul(num::mul(acc(i), 16384.0f), alpha);
    const float y1 = num::mul(num::mul(acc(i + 1), 16384.0f), alpha);
    const int64_t o = int64_t(tile.row0 + r) * p.ld_d + tile.col0 + c;
    if (p.d_bf16) {
      *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(p.d) + o) =
          __floats2bfloat162_rn(y0, y1);
    } else {
      *reinterpret_cast<float2*>(static_cast<float*>(p.d) + o) = make_float2(y0, y1);
    }
  }
}

// One half row of a k-tile (32 codes, two block scales) dequantized to exact BF16 (N10) into
// its four swizzled 8-element chunks. Both operands are written in the same paired K order
// inside every chunk, so the WGMMAs sum the same products per k16 step as plan (a) (verified
// bitwise by the tests).
__device__ __forceinline__ void fused_put_half_row(cutlass::bfloat16_t* base, const uint32_t* off,
                                                   uint4 c, uint32_t sc) {
  const uint32_t s01 = fp4::e4m3x2_to_bf16x2_scaled(sc);
  const uint32_t s0 = __byte_perm(s01, 0, 0x1010), s1 = __byte_perm(s01, 0, 0x3232);
  *reinterpret_cast<uint4*>(base + off[0]) = fp4::e2m1x8_to_bf16x8_paired(c.x, s0);
  *reinterpret_cast<uint4*>(base + off[1]) = fp4::e2m1x8_to_bf16x8_paired(c.y, s0);
  *reinterpret_cast<uint4*>(base + off[2]) = fp4::e2m1x8_to_bf16x8_paired(c.z, s1);
  *reinterpret_cast<uint4*>(base + off[3]) = fp4::e2m1x8_to_bf16x8_paired(c.w, s1);
}

__global__ void __launch_bounds__(FusedTraits::kThreads, 1) fused_fp4_gemm_kernel(FusedArgs p) {
  using namespace cute;
  using T = FusedTraits;
  constexpr int kBM = T::kBM, kBN = T::kBN, kBK = T::kBK;
  extern __shared__ char smem_raw[];
  FusedSmem& s = smem_aligned_1024<FusedSmem>(smem_raw);
  const int tid = threadIdx.x;
  const int n_tiles = (p.n + kBN - 1) / kBN;
  const int total = fused_schedule(p, s, n_tiles);

  Tensor sA = make_tensor(make_smem_ptr(s.a.data()), T::LayoutA{});  // (BM, BK, stage)
  Tensor sB = make_tensor(make_smem_ptr(s.b.data()), T::LayoutB{});  // (BN, BK, stage)
  typename T::Mma mma;
  auto thr = mma.get_thread_slice(tid);
  Tensor tCrA = thr.make_fragment_A(thr.partition_A(sA));  // GMMA descriptors
  Tensor tCrB = thr.make_fragment_B(thr.partition_B(sB));
  Tensor acc = partition_fragment_C(mma, Shape<Int<kBM>, Int<kBN>>{});  // FP32
  Tensor tCc = thr.partition_C(make_identity_tensor(Shape<Int<kBM>, Int<kBN>>{}));

  // This thread's dequantization units: row urow of A and rows urow, urow + 128 of B, elements
  // [uhalf * 32, uhalf * 32 + 32) of each k-tile; smem element offsets of their 8-element chunks.
  const int urow = tid >> 1, uhalf = tid & 1;
  uint32_t off_a[4], off_b0[4], off_b1[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    // Through the tensors: the swizzle acts on the (1024-byte aligned) shared address bits.
    off_a[j] = static_cast<uint32_t>(&sA(urow, uhalf * 32 + j * 8, 0) - s.a.data());
    off_b0[j] = static_cast<uint32_t>(&sB(urow, uhalf * 32 + j * 8, 0) - s.b.data());
    off_b1[j] = static_cast<uint32_t>(&sB(urow + kBM, uhalf * 32 + j * 8, 0) - s.b.data());
  }
  constexpr int kStageA = kBM * kBK, kStageB = kBN * kBK;  // elements per stage
  const int kt_count = p.k / kBK;

  for (int t = blockIdx.x; t < total; t += gridDim.x) {
    const FusedTile tile = fused_tile(s, p.groups, n_tiles, t);
    const int g = tile.g, row0 = tile.row0, col0 = tile.col0;

    // A row of A or B only meets its own output row or column: rows past the group end and
    // columns past N read the group's last row / B's last row instead (in bounds, not stored).
    const int ra = min(row0 + urow, s.ends[g] - 1);
    const int rb0 = min(col0 + urow, p.n - 1), rb1 = min(col0 + urow + kBM, p.n - 1);
    // Source pointers of the three units, advanced one k-tile per load (loads go in K order).
    const uint8_t* ac = p.a_codes + int64_t(ra) * p.a_code_ld + uhalf * 16;
    const uint8_t* as = p.a_scales + int64_t(ra) * p.a_scale_ld + uhalf * 2;
    const uint8_t* bc = p.b_codes + g * p.b_code_gs + int64_t(rb0) * p.b_code_ld + uhalf * 16;
    const uint8_t* bs = p.b_scales + g * p.b_scale_gs + int64_t(rb0) * p.b_scale_ld + uhalf * 2;
    const uint8_t* bc1 = p.b_codes + g * p.b_code_gs + int64_t(rb1) * p.b_code_ld + uhalf * 16;
    const uint8_t* bs1 = p.b_scales + g * p.b_scale_gs + int64_t(rb1) * p.b_scale_ld + uhalf * 2;

    auto load = [&](FusedFrag& f) {
      f.a = __ldg(reinterpret_cast<const uint4*>(ac));
      f.sa = __ldg(reinterpret_cast<const unsigned short*>(as));
      f.b0 = __ldg(reinterpret_cast<const uint4*>(bc));
      f.sb0 = __ldg(reinterpret_cast<const unsigned short*>(bs));
      f.b1 = __ldg(reinterpret_cast<const uint4*>(bc1));
      f.sb1 = __ldg(reinterpret_cast<const unsigned short*>(bs1));
      ac += kBK / 2, bc += kBK / 2, bc1 += kBK / 2;
      as += kBK / 16, bs += kBK / 16, bs1 += kBK / 16;
    };
    auto store = [&](const FusedFrag& f, int stage) {
      fused_put_half_row(s.a.data() + stage * kStageA, off_a, f.a, f.sa);
      fused_put_half_row(s.b.data() + stage * kStageB, off_b0, f.b0, f.sb0);
      fused_put_half_row(s.b.data() + stage * kStageB, off_b1, f.b1, f.sb1);
    };
    // k-tile kt: WGMMAs on stage kt % 3 while `cur` (k-tile kt + 1) is dequantized into stage
    // (kt + 1) % 3 (last read by WGMMA kt - 2, complete) and `nxt` receives k-tile kt + 2. After
    // the wait, only WGMMA kt may still run. K order is increasing, k16 steps in order.
    int stage = 0;
    auto step = [&](int kt, FusedFrag& cur, FusedFrag& nxt) {
      const int next_stage = stage == T::kStages - 1 ? 0 : stage + 1;
      warpgroup_fence_operand(acc);
      warpgroup_arrive();
#pragma unroll
      for (int kb = 0; kb < size<2>(tCrA); ++kb) {
        cute::gemm(mma, tCrA(_, _, kb, stage), tCrB(_, _, kb, stage), acc);
        mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      if (kt + 2 < kt_count) load(nxt);
      if (kt + 1 < kt_count) store(cur, next_stage);
      warpgroup_wait<1>();
      fence_proxy_async_shared();
      __syncthreads();
      stage = next_stage;
    };

    FusedFrag fx, fy;
    load(fx);
    if (kt_count > 1) load(fy);
    store(fx, 0);
    fence_proxy_async_shared();
    __syncthreads();
    mma.accumulate_ = GMMA::ScaleOut::Zero;  // the first k16 step writes, the others add
    for (int kt = 0; kt < kt_count; kt += 2) {
      step(kt, fy, fx);
      if (kt + 1 < kt_count) step(kt + 1, fx, fy);
    }
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);
    __syncthreads();  // both warpgroups' last WGMMAs are done before the next tile's stores

    fused_store_tile(p, tile, acc, tCc);
  }

  const int es = p.d_bf16 ? 2 : 4;
  zero_rows_past_groups(p.d, p.ld_d * es, p.n * es, s.ends[p.groups - 1], p.m);
}

}  // namespace f46::cuda::gemm_detail
