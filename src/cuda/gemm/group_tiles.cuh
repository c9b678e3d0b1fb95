// The persistent tile walk of the fused M-grouped kernels (plan (b), plan (c)): every CTA builds
// the clamped group ends (N11) and the cumulative tile counts of the groups in shared memory
// from the offsets on the device (no host synchronisation), then maps a tile index to its
// group, rows and first column. Row tiles of kRowTile rows never cross a group end.
#pragma once

#include <cstdint>

#include "cuda/common/group_offsets.cuh"

namespace f46::cuda::gemm_detail {

// Exclusive scan over the kThreads threads of the block (op: max or plus, identity id); buf
// holds kThreads / 32 ints.
template <int kThreads, class Op>
__device__ int block_exclusive_scan(int v, int id, Op op, int32_t* buf) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int x = v;
#pragma unroll
  for (int o = 1; o < 32; o *= 2) {
    const int y = __shfl_up_sync(0xFFFFFFFFu, x, o);
    if (lane >= o) x = op(x, y);
  }
  if (lane == 31) buf[warp] = x;
  __syncthreads();
  int pre = id;
  for (int w = 0; w < warp; ++w) pre = op(pre, buf[w]);
  __syncthreads();
  const int prev = __shfl_up_sync(0xFFFFFFFFu, x, 1);
  return lane == 0 ? pre : op(pre, prev);
}

// Clamped group ends (N11: end[g] = min(max(offs[g], end[g-1]), M) = min(running max, M)) into
// ends[], the cumulative tile counts (row tiles x n_tiles per group) into tile_ends[]; offs null:
// one group of all M rows. Returns the number of tiles. scan: kThreads / 32 ints.
template <int kRowTile, int kThreads>
__device__ int group_tile_schedule(const int32_t* offs, int groups, int m, int n_tiles,
                                   int32_t* ends, int32_t* tile_ends, int32_t* scan) {
  if (offs == nullptr) {
    if (threadIdx.x == 0) {
      ends[0] = m;
      tile_ends[0] = (m + kRowTile - 1) / kRowTile * n_tiles;
    }
    __syncthreads();
    return tile_ends[0];
  }
  const int per = (groups + kThreads - 1) / kThreads;
  const int g0 = min(groups, static_cast<int>(threadIdx.x) * per), g1 = min(groups, g0 + per);
  int cmax = 0;
  for (int g = g0; g < g1; ++g) cmax = max(cmax, offs[g]);
  int run = block_exclusive_scan<kThreads>(
      cmax, 0, [](int x, int y) { return max(x, y); }, scan);
  const int first_prev = min(run, m);
  int prev = first_prev, count = 0;
  for (int g = g0; g < g1; ++g) {
    run = max(run, offs[g]);
    const int e = min(run, m);
    ends[g] = e;
    count += (e - prev + kRowTile - 1) / kRowTile * n_tiles;
    prev = e;
  }
  int tiles = block_exclusive_scan<kThreads>(
      count, 0, [](int x, int y) { return x + y; }, scan);
  prev = first_prev;
  for (int g = g0; g < g1; ++g) {
    tiles += (ends[g] - prev + kRowTile - 1) / kRowTile * n_tiles;
    tile_ends[g] = tiles;
    prev = ends[g];
  }
  __syncthreads();
  return tile_ends[groups - 1];
}

// Host: an upper bound of the tile count, ceil(M / kRowTile) + groups row tiles (at most one
// partial tile per group boundary) times the column tiles; the persistent grid's size.
template <int kRowTile, int kColTile>
inline int64_t max_group_tiles(int64_t m, int64_t n, int groups) {
  return ((m + kRowTile - 1) / kRowTile + groups) * ((n + kColTile - 1) / kColTile);
}

// Tile t (< the tile count) of the persistent walk: its group (the first g with tile_ends[g] >
// t), its rows [row0, row0 + rows) inside the group and its first column; n-tiles run fastest.
struct GroupTile {
  int g, row0, rows, col0;
};

template <int kRowTile, int kColTile>
__device__ __forceinline__ GroupTile group_tile_at(const int32_t* ends, const int32_t* tile_ends,
                                                   int groups, int n_tiles, int t) {
  const int g = group_of_row(tile_ends, groups, t);  // < groups: t < tile_ends[groups - 1]
  const int g_start = g == 0 ? 0 : ends[g - 1];
  const int tl = t - (g == 0 ? 0 : tile_ends[g - 1]);
  const int mt = tl / n_tiles, nt = tl - mt * n_tiles;
  const int row0 = g_start + mt * kRowTile;
  return GroupTile{g, row0, min(kRowTile, ends[g] - row0), nt * kColTile};
}

// Rows [last, m) of the output d (row stride ld_bytes) are zeros (N11: rows past the last group
// end), a CTA per row in turn; row_bytes (the written part of a row) and ld_bytes are multiples
// of 16.
__device__ __forceinline__ void zero_rows_past_groups(void* d, int64_t ld_bytes, int row_bytes,
                                                      int last, int m) {
  const int row_vecs = row_bytes / 16;
  for (int r = last + blockIdx.x; r < m; r += gridDim.x) {
    uint4* row = reinterpret_cast<uint4*>(static_cast<char*>(d) + int64_t(r) * ld_bytes);
    for (int v = threadIdx.x; v < row_vecs; v += blockDim.x) row[v] = make_uint4(0, 0, 0, 0);
  }
}

}  // namespace f46::cuda::gemm_detail
