// The BF16 grouped GEMM driver: a device prep kernel turns int32 group offsets into CUTLASS
// problem shapes, pointers, strides and per-group alphas, then one CUTLASS ptr-array grouped
// kernel launch. Dense GEMMs run through the same kernel with one group, so a group's rows of a
// grouped GEMM are bitwise equal to the dense GEMM on those rows (N11: same kernel, same K
// order, no split-K).

#include "common/numerics.h"
#include "cuda/common/cuda_check.h"
#include "cuda/common/launch_utils.h"
#include "f46/error.h"
#include "gemm_scale.h"
#include "grouped_bf16_gemm.h"
#include "grouped_bf16_gemm_meta.h"

namespace f46::cuda::gemm_detail {
namespace {

using BF16 = cutlass::bfloat16_t;

// One block. Thread 0 clamps the offsets: end[g] = min(max(offs[g], end[g-1]), limit) (so no
// offset can address outside the operands), rounded down to a multiple of 16 for token groups
// (valid offsets already are; the columnwise quantization blocks never straddle groups).
// Then one thread per group writes its problem shape, pointers, strides and alpha.
__global__ void prep_groups_kernel(GroupedProblem p, Meta m) {
  if (threadIdx.x == 0) {
    int64_t prev = 0;
    for (int g = 0; g < p.groups; ++g) {
      int64_t e = p.offs ? static_cast<int64_t>(p.offs[g]) : p.limit;
      e = e < prev ? prev : (e > p.limit ? p.limit : e);
      if (p.mode == GroupMode::kTokens) e &= ~int64_t{15};
      if (e < prev) e = prev;
      p.ends[g] = static_cast<int32_t>(e);
      prev = e;
    }
  }
  __syncthreads();
  const int64_t es = p.d_bf16 ? 2 : 4;
  char* d = static_cast<char*>(p.d);
  const BF16* a = reinterpret_cast<const BF16*>(p.a);
  const BF16* b = reinterpret_cast<const BF16*>(p.b);
  for (int g = threadIdx.x; g < p.groups; g += blockDim.x) {
    const int64_t start = g == 0 ? 0 : p.ends[g - 1];
    const int64_t count = p.ends[g] - start;
    RowStride sa{}, sb{}, sd{};
    if (p.mode == GroupMode::kRows) {
      m.shapes[g] =
          GroupShape{static_cast<int>(count), static_cast<int>(p.n), static_cast<int>(p.k)};
      m.ptr_a[g] = a + start * p.k;
      m.ptr_b[g] = b + g * p.b_group_stride;
      m.ptr_d[g] = d + start * p.ld_d * es;
      cute::get<0>(sa) = p.k;
      cute::get<0>(sb) = p.k;
      cute::get<0>(sd) = p.ld_d;
    } else {
      // An empty token group gets no tiles (M = 0); its zeros are written separately.
      m.shapes[g] = GroupShape{count > 0 ? static_cast<int>(p.n) : 0, static_cast<int>(p.k),
                               static_cast<int>(count)};
      m.ptr_a[g] = a + start;
      m.ptr_b[g] = b + start;
      m.ptr_d[g] = d + g * p.n * p.k * es;
      cute::get<0>(sa) = p.limit;
      cute::get<0>(sb) = p.limit;
      cute::get<0>(sd) = p.k;
    }
    m.stride_a[g] = sa;
    m.stride_b[g] = sb;
    m.stride_d[g] = sd;
    // N10, tensor/group scope: s = gA * gB, y = acc * s.
    const GroupAlpha& al = p.alpha;
    m.alpha[g] = al.amax_a == nullptr ? 1.0f : group_alpha_of(al, g);
    m.ptr_alpha[g] = m.alpha + g;
  }
}

}  // namespace

ScheduleOptions schedule_options(const GemmTuning& t) {
  ScheduleOptions o;
  if (t.max_swizzle != 0) o.max_swizzle = t.max_swizzle;  // validated by the front (src/gemm.cpp)
  o.raster_along_n = t.raster_along_n;
  return o;
}

size_t grouped_meta_bytes(int groups) { return kMetaArrays * meta_array_bytes(groups); }
size_t grouped_cutlass_workspace_bytes() { return kCutlassWorkspace; }

void run_group_ends(const GroupedProblem& p, void* meta, cudaStream_t stream) {
  prep_groups_kernel<<<1, 256, 0, stream>>>(p, carve_meta(meta, p.groups));
  F46_CHECK_CUDA(cudaGetLastError());
}

void run_grouped_bf16_gemm(const GroupedProblem& p, void* meta, void* cutlass_ws,
                           cudaStream_t stream) {
  F46_CHECK(p.groups >= 1, "grouped GEMM: groups must be >= 1, got ", p.groups);
  F46_CHECK(p.limit <= INT32_MAX && p.n <= INT32_MAX && p.k <= INT32_MAX,
            "grouped GEMM: sizes must fit int32: limit=", p.limit, " n=", p.n, " k=", p.k);
  run_group_ends(p, meta, stream);
  int device = 0;
  F46_CHECK_CUDA(cudaGetDevice(&device));
  const Meta m = carve_meta(meta, p.groups);
  if (p.d_bf16) {
    launch_cutlass_grouped_bf16(m, p.groups, p.schedule, cutlass_ws, device, sm_count(device),
                                stream);
  } else {
    launch_cutlass_grouped_f32(m, p.groups, p.schedule, cutlass_ws, device, sm_count(device),
                               stream);
  }
}

}  // namespace f46::cuda::gemm_detail
