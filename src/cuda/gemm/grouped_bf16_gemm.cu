// The BF16 grouped GEMM: a device prep kernel that turns int32 group offsets into CUTLASS
// problem shapes, pointers and strides, then one CUTLASS ptr-array grouped kernel launch.
// Dense GEMMs run through the same kernel with one group, so a group's rows of a grouped GEMM
// are bitwise equal to the dense GEMM on those rows (N11: same kernel, same K order).
#include "grouped_bf16_gemm.h"

#include <mutex>

#include "cuda_check.h"
#include "f46/error.h"
#include "grouped_bf16_gemm_config.h"

namespace f46::cuda::gemm_detail {
namespace {

using Kernel = Bf16GroupedKernel<Bf16GroupedTraits>;
using Shape = Kernel::Shape;
using StrideA = Kernel::StrideA;
using StrideB = Kernel::StrideB;
using StrideD = Kernel::StrideD;
using BF16 = cutlass::bfloat16_t;

constexpr size_t kSlot = 16;  // bytes per group per metadata array
static_assert(sizeof(Shape) <= kSlot && sizeof(StrideA) <= kSlot && sizeof(StrideB) <= kSlot &&
                  sizeof(StrideD) <= kSlot,
              "metadata entries must fit a 16-byte slot");
constexpr size_t kCutlassWorkspace = size_t{4} << 20;

size_t array_bytes(int groups) { return (static_cast<size_t>(groups) * kSlot + 255) / 256 * 256; }

// The seven metadata arrays carved from `meta`, in order.
struct Meta {
  Shape* shapes;
  const BF16** ptr_a;
  const BF16** ptr_b;
  float** ptr_d;
  StrideA* stride_a;
  StrideB* stride_b;
  StrideD* stride_d;
};

Meta carve(void* meta, int groups) {
  char* p = static_cast<char*>(meta);
  const size_t s = array_bytes(groups);
  return Meta{reinterpret_cast<Shape*>(p),           reinterpret_cast<const BF16**>(p + s),
              reinterpret_cast<const BF16**>(p + 2 * s), reinterpret_cast<float**>(p + 3 * s),
              reinterpret_cast<StrideA*>(p + 4 * s),   reinterpret_cast<StrideB*>(p + 5 * s),
              reinterpret_cast<StrideD*>(p + 6 * s)};
}

// One block. Thread 0 clamps the offsets: end[g] = min(max(offs[g], end[g-1]), limit) (so no
// offset can address outside the operands), rounded down to a multiple of 16 for token groups
// (valid offsets already are; the columnwise quantization blocks never straddle groups).
// Then one thread per group writes its problem shape, pointers and strides.
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
  for (int g = threadIdx.x; g < p.groups; g += blockDim.x) {
    const int64_t start = g == 0 ? 0 : p.ends[g - 1];
    const int64_t count = p.ends[g] - start;
    const BF16* a = reinterpret_cast<const BF16*>(p.a);
    const BF16* b = reinterpret_cast<const BF16*>(p.b);
    StrideA sa{};
    StrideB sb{};
    StrideD sd{};
    if (p.mode == GroupMode::kRows) {
      m.shapes[g] = Shape{static_cast<int>(count), static_cast<int>(p.n), static_cast<int>(p.k)};
      m.ptr_a[g] = a + start * p.k;
      m.ptr_b[g] = b + g * p.b_group_stride;
      m.ptr_d[g] = p.d + start * p.n;
      cute::get<0>(sa) = p.k;
      cute::get<0>(sb) = p.k;
      cute::get<0>(sd) = p.n;
    } else {
      // An empty token group gets no tiles (M = 0); the epilogue writes its zeros.
      m.shapes[g] = Shape{count > 0 ? static_cast<int>(p.n) : 0, static_cast<int>(p.k),
                          static_cast<int>(count)};
      m.ptr_a[g] = a + start;
      m.ptr_b[g] = b + start;
      m.ptr_d[g] = p.d + g * p.n * p.k;
      cute::get<0>(sa) = p.limit;
      cute::get<0>(sb) = p.limit;
      cute::get<0>(sd) = p.k;
    }
    m.stride_a[g] = sa;
    m.stride_b[g] = sb;
    m.stride_d[g] = sd;
  }
}

int sm_count(int device) {
  static std::mutex mu;
  static int counts[64] = {0};
  std::lock_guard<std::mutex> lock(mu);
  if (device < 0 || device >= 64) return 0;
  if (counts[device] == 0) {
    F46_GEMM_CUDA_OK(
        cudaDeviceGetAttribute(&counts[device], cudaDevAttrMultiProcessorCount, device));
  }
  return counts[device];
}

}  // namespace

size_t grouped_meta_bytes(int groups) { return 7 * array_bytes(groups); }
size_t grouped_cutlass_workspace_bytes() { return kCutlassWorkspace; }

void run_group_ends(const GroupedProblem& p, void* meta, cudaStream_t stream) {
  prep_groups_kernel<<<1, 256, 0, stream>>>(p, carve(meta, p.groups));
  F46_GEMM_CUDA_OK(cudaGetLastError());
}

void run_grouped_bf16_gemm(const GroupedProblem& p, void* meta, void* cutlass_ws,
                           cudaStream_t stream) {
  F46_CHECK(p.groups >= 1, "grouped GEMM: groups must be >= 1, got ", p.groups);
  F46_CHECK(p.limit <= INT32_MAX && p.n <= INT32_MAX && p.k <= INT32_MAX,
            "grouped GEMM: sizes must fit int32: limit=", p.limit, " n=", p.n, " k=", p.k);
  const Meta m = carve(meta, p.groups);
  prep_groups_kernel<<<1, 256, 0, stream>>>(p, m);
  F46_GEMM_CUDA_OK(cudaGetLastError());

  int device = 0;
  F46_GEMM_CUDA_OK(cudaGetDevice(&device));
  typename Kernel::Gemm::Arguments args;
  args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
  args.problem_shape = {p.groups, m.shapes, nullptr};  // shapes stay on the device
  args.mainloop = {m.ptr_a, m.stride_a, m.ptr_b, m.stride_b};
  args.epilogue.thread.alpha = 1.0f;
  args.epilogue.thread.beta = 0.0f;
  args.epilogue.ptr_C = nullptr;
  args.epilogue.dC = m.stride_d;
  args.epilogue.ptr_D = m.ptr_d;
  args.epilogue.dD = m.stride_d;
  args.hw_info.device_id = device;
  args.hw_info.sm_count = sm_count(device);

  typename Kernel::Gemm gemm;
  const size_t need = Kernel::Gemm::get_workspace_size(args);
  F46_CHECK(need <= kCutlassWorkspace, "grouped GEMM: CUTLASS workspace of ", need,
            " bytes exceeds the reserved ", kCutlassWorkspace);
  cutlass::Status st = gemm.can_implement(args);
  F46_CHECK(st == cutlass::Status::kSuccess, "grouped GEMM: CUTLASS cannot implement: ",
            cutlassGetStatusString(st));
  st = gemm.initialize(args, cutlass_ws, stream);
  F46_CHECK(st == cutlass::Status::kSuccess, "grouped GEMM: CUTLASS initialize failed: ",
            cutlassGetStatusString(st));
  st = gemm.run(stream);
  F46_CHECK(st == cutlass::Status::kSuccess, "grouped GEMM: CUTLASS run failed: ",
            cutlassGetStatusString(st));
  F46_GEMM_CUDA_OK(cudaGetLastError());
}

}  // namespace f46::cuda::gemm_detail
