// f46::cuda::gemm, grouped_gemm_m, grouped_gemm_k (N10, N11): dequantize both operands to
// exact BF16, one CUTLASS grouped GEMM with FP32 accumulation into scratch, then the N10
// epilogue. The dense GEMM is the M-grouped GEMM with one group. Arguments were validated by
// the public layer (src/gemm.cpp); offsets are never read on the host.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>

#include "backend.h"
#include "cuda/common/cuda_check.h"
#include "cuda/common/scratch_pool.h"
#include "cuda/gemm/gemm_choice.h"
#include "fused_fp4_gemm.h"
#include "gemm_kernels.h"
#include "gemm_scale.h"
#include "grouped_bf16_gemm.h"
#include "w4_gemm.h"

namespace f46::cuda {
namespace {

using gemm_detail::DequantArgs;
using gemm_detail::EpilogueArgs;
using gemm_detail::GroupedProblem;
using gemm_detail::GroupMode;

// Makes `device` current for the call and restores the previous device afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    F46_CHECK_CUDA(cudaGetDevice(&prev_));
    if (prev_ != device) F46_CHECK_CUDA(cudaSetDevice(device));
  }
  ~DeviceGuard() {
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur != prev_) cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = 0;
};

// The call's scratch: ctx.workspace when given, else a stream-ordered allocation from the
// library's pool (graph capturable), freed stream-ordered at the end of the call.
class Scratch {
 public:
  Scratch(const Context& ctx, int64_t bytes, int device, cudaStream_t stream) : stream_(stream) {
    if (ctx.workspace != nullptr) {
      F46_CHECK(ctx.workspace_bytes >= bytes, "ctx.workspace: the GEMM needs ", bytes,
                " bytes, got ", ctx.workspace_bytes);
      F46_CHECK(reinterpret_cast<uintptr_t>(ctx.workspace) % 256 == 0,
                "ctx.workspace must be 256-byte aligned, got address ", ctx.workspace);
      base_ = static_cast<char*>(ctx.workspace);
    } else {
      void* p = nullptr;
      F46_CHECK_CUDA(
          cudaMallocFromPoolAsync(&p, static_cast<size_t>(bytes), scratch_pool(device), stream));
      base_ = static_cast<char*>(p);
      owned_ = true;
    }
  }
  ~Scratch() {
    if (owned_) cudaFreeAsync(base_, stream_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  // From its start again (the next GEMM of a pair carves it anew; the shared copy stays first).
  void reset() { used_ = 0; }
  // Next `bytes` (rounded up to 256) of the scratch.
  char* take(int64_t bytes) {
    char* p = base_ + used_;
    used_ += detail::gemm_ws_round(bytes);
    return p;
  }

 private:
  cudaStream_t stream_;
  char* base_ = nullptr;
  int64_t used_ = 0;
  bool owned_ = false;
};

// Scratch pieces in the order of detail::gemm_ws_bytes.
struct Buffers {
  __nv_bfloat16* a;
  __nv_bfloat16* b;
  float* d;
  int32_t* ends;
  void* meta;
  void* cutlass_ws;
};
Buffers carve(Scratch& s, int64_t a_elems, int64_t b_elems, int64_t d_elems, int groups) {
  F46_CHECK(gemm_detail::grouped_meta_bytes(groups) ==
                    static_cast<size_t>(9 * detail::gemm_ws_round(int64_t{groups} * 16)) &&
                gemm_detail::grouped_cutlass_workspace_bytes() == (size_t{4} << 20),
            "GEMM workspace layout out of sync with f46/gemm.h");
  Buffers b;
  b.a = reinterpret_cast<__nv_bfloat16*>(s.take(a_elems * 2));
  b.b = reinterpret_cast<__nv_bfloat16*>(s.take(b_elems * 2));
  b.d = reinterpret_cast<float*>(s.take(d_elems * 4));
  b.ends = reinterpret_cast<int32_t*>(s.take(int64_t{groups} * 16));
  b.meta = s.take(9 * detail::gemm_ws_round(int64_t{groups} * 16));
  b.cutlass_ws = s.take(int64_t{4} << 20);
  return b;
}

// Dequantization of one operand viewed as (groups, rows, k): codes/scales 2-D or 3-D.
DequantArgs dequant_args(const QuantizedOperand& op, int groups, int64_t rows, int64_t out_rows,
                         int64_t k, __nv_bfloat16* out) {
  DequantArgs d;
  d.codes = op.codes.ptr<const uint8_t>();
  d.scales = op.scales.ptr<const uint8_t>();
  const int nd = op.codes.ndim;
  d.code_row_stride = op.codes.strides[nd - 2];
  d.scale_row_stride = op.scales.strides[nd - 2];
  d.code_group_stride = nd == 3 ? op.codes.strides[0] : 0;
  d.scale_group_stride = nd == 3 ? op.scales.strides[0] : 0;
  d.groups = groups;
  d.rows = rows;
  d.out_rows = out_rows;
  d.k = k;
  d.out = out;
  return d;
}

// The GEMM epilogue applies N10 itself (alpha[g] = gA * gB, one cast to the output dtype)
// when that is the whole formula: tensor/group scopes, no bias, and D rows 16-byte aligned.
// Otherwise the GEMM writes FP32 scratch and launch_gemm_epilogue applies N10. (With no
// source operand the CUTLASS epilogue computes exactly alpha * acc, then one RNE conversion.)
bool fused_epilogue(const QuantizedOperand& a, const TensorView& bias, const TensorView& out,
                    int64_t row_elems) {
  const int64_t es = dtype_size(out.dtype);
  return a.scope != AmaxScope::kRow && !(bias.defined() && bias.data != nullptr) &&
         (row_elems * es) % 16 == 0 && reinterpret_cast<uintptr_t>(out.data) % 16 == 0;
}

EpilogueArgs epilogue_args(GroupMode mode, const Buffers& buf, const TensorView& out, int groups,
                           const QuantizedOperand& a, const QuantizedOperand& b) {
  EpilogueArgs e;
  e.mode = mode;
  e.acc = buf.d;
  e.out = out.data;
  e.out_bf16 = out.dtype == DType::kBFloat16;
  e.groups = groups;
  e.ends = buf.ends;
  e.scale = gemm_detail::group_alpha(a, b);
  return e;
}

// An M-grouped GEMM's route and the scratch it takes.
struct RowsPlan {
  gemm_detail::GemmRoute route;
  int64_t bytes;  // scratch (0: plan (b), none)
};

RowsPlan plan_rows(const QuantizedOperand& a, const QuantizedOperand& b, int groups,
                   const TensorView& bias, const TensorView& out, const Context& ctx) {
  const int64_t m = a.codes.size(0), k = a.codes.size(1) * 2, n = b.codes.size(-2);
  gemm_detail::GemmCase c;
  c.plan = ctx.gemm.plan;
  c.epilogue_fusable = k > 0 && fused_epilogue(a, bias, out, n);
  c.fp4_supported = c.epilogue_fusable && gemm_detail::fused_fp4_supported(a, b, groups, out);
  // Plan (c)'s scope is checked where it can be chosen (forced, or the automatic rule).
  c.w4_supported = (c.plan == GemmPlan::kWeight4 || c.plan == GemmPlan::kAuto) &&
                   c.epilogue_fusable && gemm_detail::w4_supported(a, b, groups, out);
  c.m = m;
  c.n = n;
  c.k = k;
  c.groups = groups;
  RowsPlan rp;
  rp.route = gemm_detail::choose_gemm_route(c);
  if (rp.route == gemm_detail::GemmRoute::kFusedFp4)
    rp.bytes = 0;
  else if (rp.route == gemm_detail::GemmRoute::kWeight4)  // A's copy and the group metadata only
    rp.bytes = detail::gemm_ws_bytes(m * k, 0, 0, groups);
  else
    rp.bytes = grouped_gemm_m_workspace_bytes(m, n, k, groups);
  return rp;
}

// Whether the route reads A's BF16 copy (the first piece of the scratch).
bool reads_a_copy(const RowsPlan& rp, int64_t k) {
  return rp.route == gemm_detail::GemmRoute::kWeight4 ||
         (rp.route != gemm_detail::GemmRoute::kFusedFp4 && k > 0);
}

// M-grouped core in `scratch` (at least rp.bytes); offs == nullptr means one group covering all
// rows (the dense GEMM). a_copied: A's BF16 copy is already at the scratch's start (a pair's
// second GEMM).
void run_rows_in(const QuantizedOperand& a, const QuantizedOperand& b, const int32_t* offs,
                 int groups, const TensorView& bias, TensorView& out, const RowsPlan& rp,
                 Scratch* scratch, bool a_copied, const Context& ctx, cudaStream_t stream) {
  const int64_t m = a.codes.size(0);
  const int64_t k = a.codes.size(1) * 2;
  const int64_t n = b.codes.size(-2);
  if (rp.route == gemm_detail::GemmRoute::kFusedFp4) {  // plan (b), the fused 4-bit kernel
    gemm_detail::run_fused_fp4_gemm(a, b, offs, groups, out, stream);
    return;
  }
  scratch->reset();
  if (rp.route == gemm_detail::GemmRoute::kWeight4) {  // plan (c): only A gets a BF16 copy
    Buffers buf = carve(*scratch, m * k, 0, 0, groups);
    if (!a_copied) gemm_detail::launch_dequant_bf16(dequant_args(a, 1, m, m, k, buf.a), stream);
    gemm_detail::run_w4_gemm(a, buf.a, b, offs, groups, out, stream);
    return;
  }
  const bool fused = rp.route == gemm_detail::GemmRoute::kDequantFused;
  // Unfused: FP32 scratch with rows padded to 8 columns (TMA needs 16-byte row pitches).
  const int64_t n8 = fused ? n : detail::gemm_ws_pad8(n);
  Buffers buf = carve(*scratch, m * k, groups * n8 * k, fused ? 0 : m * n8, groups);

  GroupedProblem p;
  p.mode = GroupMode::kRows;
  p.offs = offs;
  p.groups = groups;
  p.limit = m;
  p.n = n8;
  p.k = k;
  p.a = buf.a;
  p.b = buf.b;
  p.b_group_stride = n8 * k;
  p.ends = buf.ends;
  p.schedule = gemm_detail::schedule_options(ctx.gemm);
  if (fused) {
    p.d = out.data;
    p.d_bf16 = out.dtype == DType::kBFloat16;
    p.ld_d = out.strides[0];
    p.alpha = gemm_detail::group_alpha(a, b);
  } else {
    p.d = buf.d;
    p.ld_d = n8;
  }
  if (k > 0) {
    if (!a_copied) gemm_detail::launch_dequant_bf16(dequant_args(a, 1, m, m, k, buf.a), stream);
    gemm_detail::launch_dequant_bf16(dequant_args(b, groups, n, n8, k, buf.b), stream);
    gemm_detail::run_grouped_bf16_gemm(p, buf.meta, buf.cutlass_ws, stream);
  } else {
    // Nothing to contract: the product is zero (N10); only the ends are needed.
    F46_CHECK_CUDA(cudaMemsetAsync(buf.d, 0, static_cast<size_t>(m * n8 * 4), stream));
    gemm_detail::run_group_ends(p, buf.meta, stream);
  }

  EpilogueArgs e = epilogue_args(GroupMode::kRows, buf, out, groups, a, b);
  e.acc_ld = n8;
  e.out_ld = out.strides[0];
  e.rows = m;
  e.cols = n;
  e.only_invalid = fused;                // fused: only the rows past the last group remain
  if (fused && offs == nullptr) return;  // dense: one group covers every row
  if (bias.defined() && bias.data != nullptr) {
    e.bias = bias.data;
    e.bias_bf16 = bias.dtype == DType::kBFloat16;
    e.bias_group_stride = bias.ndim == 2 ? bias.strides[0] : 0;
  }
  gemm_detail::launch_gemm_epilogue(e, stream);
}

// One M-grouped GEMM of A: its weight, bias and output.
struct RowsItem {
  const QuantizedOperand& b;
  const TensorView& bias;
  TensorView& out;
};

// The M-grouped GEMMs of one A (one, or a pair of one shape) in one scratch sized for the
// largest: A's BF16 copy is made by the first route that reads it and reused by the others.
void run_rows(const QuantizedOperand& a, std::initializer_list<RowsItem> items, const int32_t* offs,
              int groups, const Context& ctx) {
  const RowsItem& first = *items.begin();
  if (a.codes.size(0) == 0 || first.b.codes.size(-2) == 0) return;  // the items share N
  DeviceGuard guard(first.out.device_index);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.cuda_stream);
  F46_CHECK(items.size() <= 2, "run_rows: at most a pair");
  RowsPlan plans[2];
  int64_t bytes = 0;
  size_t n = 0;
  for (const RowsItem& it : items) {
    plans[n] = plan_rows(a, it.b, groups, it.bias, it.out, ctx);
    bytes = std::max(bytes, plans[n++].bytes);
  }
  std::optional<Scratch> scratch;
  if (bytes > 0) scratch.emplace(ctx, bytes, first.out.device_index, stream);
  bool a_copied = false;
  size_t i = 0;
  for (const RowsItem& it : items) {
    const RowsPlan& rp = plans[i++];
    run_rows_in(a, it.b, offs, groups, it.bias, it.out, rp, scratch ? &*scratch : nullptr, a_copied,
                ctx, stream);
    a_copied = a_copied || reads_a_copy(rp, a.codes.size(1) * 2);
  }
}

// No groups: every row of out is outside every group.
void zero_out(TensorView& out, const Context& ctx) {
  const int64_t m = out.size(0), n = out.size(1);
  if (m == 0 || n == 0) return;
  F46_CHECK_CUDA(cudaMemset2DAsync(out.data, out.strides[0] * dtype_size(out.dtype), 0,
                                   n * dtype_size(out.dtype), m,
                                   static_cast<cudaStream_t>(ctx.cuda_stream)));
}

// K-grouped core in `scratch` (grouped_gemm_k_workspace_bytes); b_copied: B's BF16 copy is
// already in its place (a pair's second GEMM; a1 and a2 of one shape put it at one offset).
void run_tokens_in(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& offs,
                   TensorView& out, Scratch& scratch, bool b_copied, const Context& ctx,
                   cudaStream_t stream) {
  const int groups = static_cast<int>(offs.size(0));
  const int64_t n = a.codes.size(0);
  const int64_t k = b.codes.size(0);
  const int64_t t = a.codes.size(1) * 2;
  const bool fused = t > 0 && fused_epilogue(a, TensorView{}, out, k);
  scratch.reset();
  Buffers buf = carve(scratch, n * t, k * t, fused ? 0 : groups * n * k, groups);

  GroupedProblem p;
  p.mode = GroupMode::kTokens;
  p.offs = offs.ptr<const int32_t>();
  p.groups = groups;
  p.limit = t;
  p.n = n;
  p.k = k;
  p.a = buf.a;
  p.b = buf.b;
  p.ends = buf.ends;
  p.schedule = gemm_detail::schedule_options(ctx.gemm);
  if (fused) {
    p.d = out.data;
    p.d_bf16 = out.dtype == DType::kBFloat16;
    p.alpha = gemm_detail::group_alpha(a, b);
  } else {
    p.d = buf.d;
  }
  if (t > 0) {
    gemm_detail::launch_dequant_bf16(dequant_args(a, 1, n, n, t, buf.a), stream);
    if (!b_copied) gemm_detail::launch_dequant_bf16(dequant_args(b, 1, k, k, t, buf.b), stream);
    gemm_detail::run_grouped_bf16_gemm(p, buf.meta, buf.cutlass_ws, stream);
  } else {
    gemm_detail::run_group_ends(p, buf.meta, stream);  // every group is empty
  }

  EpilogueArgs e = epilogue_args(GroupMode::kTokens, buf, out, groups, a, b);
  e.out_group_stride = out.strides[0];
  e.out_ld = out.strides[1];
  e.rows = n;
  e.cols = k;
  e.only_invalid = fused;  // fused: only the empty groups' zeros remain
  gemm_detail::launch_gemm_epilogue(e, stream);
}

// The K-grouped GEMMs against one B (one, or a pair of one shape) in one scratch: B's BF16 copy
// is made by the first and reused by the other.
void run_tokens(std::initializer_list<std::pair<const QuantizedOperand*, TensorView*>> items,
                const QuantizedOperand& b, const TensorView& offs, const Context& ctx) {
  const auto& [a0, out0] = *items.begin();
  const int64_t n = a0->codes.size(0), k = b.codes.size(0), t = a0->codes.size(1) * 2;
  if (offs.size(0) == 0 || n == 0 || k == 0) return;  // the items share N
  DeviceGuard guard(out0->device_index);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.cuda_stream);
  Scratch scratch(ctx, grouped_gemm_k_workspace_bytes(n, k, t, offs.size(0)), out0->device_index,
                  stream);
  bool b_copied = false;
  for (const auto& [a, out] : items) {
    run_tokens_in(*a, b, offs, *out, scratch, b_copied, ctx, stream);
    b_copied = t > 0;
  }
}

}  // namespace

void gemm(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& bias,
          TensorView& out, const Context& ctx) {
  run_rows(a, {{b, bias, out}}, nullptr, 1, ctx);
}

void grouped_gemm_m(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& offs,
                    const TensorView& bias, TensorView& out, const Context& ctx) {
  const int groups = static_cast<int>(offs.size(0));
  if (groups == 0) return zero_out(out, ctx);
  run_rows(a, {{b, bias, out}}, offs.ptr<const int32_t>(), groups, ctx);
}

void grouped_gemm_m_pair(const QuantizedOperand& a, const QuantizedOperand& b1,
                         const QuantizedOperand& b2, const TensorView& offs, TensorView& out1,
                         TensorView& out2, const Context& ctx) {
  const int groups = static_cast<int>(offs.size(0));
  if (groups == 0) return zero_out(out1, ctx), zero_out(out2, ctx);
  const TensorView none;
  run_rows(a, {{b1, none, out1}, {b2, none, out2}}, offs.ptr<const int32_t>(), groups, ctx);
}

void grouped_gemm_k(const QuantizedOperand& a, const QuantizedOperand& b, const TensorView& offs,
                    TensorView& out, const Context& ctx) {
  run_tokens({{&a, &out}}, b, offs, ctx);
}

void grouped_gemm_k_pair(const QuantizedOperand& a1, const QuantizedOperand& a2,
                         const QuantizedOperand& b, const TensorView& offs, TensorView& out1,
                         TensorView& out2, const Context& ctx) {
  run_tokens({{&a1, &out1}, {&a2, &out2}}, b, offs, ctx);
}

}  // namespace f46::cuda
