// f46::cuda::quantize: fills QuantizeParams from the (already validated) public arguments and
// launches the kernel for the mode (docs/numerics.md N2-N7). No host synchronisation; the one
// allocation (amax_quantize_experts' ticket counters) is stream-ordered from the library's pool:
// CUDA-graph capturable on ctx.cuda_stream.
#include "backend.h"
#include "cuda/common/cuda_check.h"
#include "cuda/common/element_types.h"
#include "cuda/common/launch_utils.h"
#include "cuda/common/scratch_pool.h"
#include "cuda/quantize/quantize_choice.h"
#include "cuda/quantize/quantize_launch.h"
#include "experts.h"

namespace f46::cuda {

namespace {

QuantMode mode_of(const QuantizeConfig& cfg) {
  if (cfg.gradient) return QuantMode::kGradient;
  switch (cfg.rule) {
    case Rule::kMAE:
      return QuantMode::kMAE;
    case Rule::kMSE:
      return QuantMode::kMSE;
    case Rule::kAbsMax:
      return QuantMode::kAbsMax;
    case Rule::kAll6:
      return QuantMode::kAll6;
    case Rule::kAll4:
      return QuantMode::kAll4;
  }
  return QuantMode::kMAE;
}

ScopeKind scope_of(AmaxScope s) {
  return s == AmaxScope::kRow ? ScopeKind::kRow
                              : (s == AmaxScope::kGroup ? ScopeKind::kGroup : ScopeKind::kTensor);
}

// Limits of this backend; the front (src/quantize.cpp) has checked the arguments themselves.
void check_cuda_limits(int64_t rows, int64_t cols, const GlobalAmax& amax,
                       const QuantizeConfig& cfg, const QuantizedOutputs& out) {
  F46_CHECK(rows < (int64_t{1} << 31) && cols < (int64_t{1} << 34),
            "quantize (CUDA backend limit): x must have fewer than 2^31 rows and 2^34 columns, "
            "got ",
            rows, " x ", cols);
  if (cfg.rowwise)
    F46_CHECK(aligned_to(out.codes.data, 8) && out.codes.strides[0] % 8 == 0,
              "quantize (CUDA backend limit): out.codes must be 8-byte aligned with a row stride "
              "% 8 == 0");
  if (cfg.columnwise)
    F46_CHECK(aligned_to(out.codes_t.data, 8) && out.codes_t.strides[0] % 8 == 0,
              "quantize (CUDA backend limit): out.codes_t must be 8-byte aligned with a row "
              "stride % 8 == 0");
}

// The kernels' parameters from the arguments: pointers, strides, the access widths they allow.
void fill_params(const TensorView& x, int64_t rows, const GlobalAmax& amax,
                 const QuantizeConfig& cfg, const QuantizedOutputs& out, QuantizeParams& p) {
  const int64_t cols = x.size(1);
  p.x = x.data;
  p.x_stride = x.strides[0];
  p.rows = rows;
  p.cols = cols;
  const int64_t esize = dtype_size(x.dtype);
  // 16-byte copies: aligned rows and whole 16-byte chunks (a chunk never reads past a row's end).
  p.vec_load = aligned_to(x.data, 16) && (x.size(0) <= 1 || (x.strides[0] * esize) % 16 == 0) &&
               (cols * esize) % 16 == 0;
  p.scope = scope_of(amax.scope);
  p.amax = amax.amax.ptr<float>();
  p.amax_t = amax.amax_columnwise.defined() ? amax.amax_columnwise.ptr<float>() : nullptr;
  if (amax.scope == AmaxScope::kGroup) {
    p.offsets = amax.offsets.ptr<int32_t>();
    p.num_groups = static_cast<int>(amax.offsets.size(0));
    if (amax.source_offsets.defined()) {  // virtual padding (N12): x holds the unpadded rows
      p.src_offsets = amax.source_offsets.ptr<int32_t>();
      p.src_rows = x.size(0);
    }
  }
  p.bound = cfg.scale_bound;  // gradient mode: the front requires 448 (N4)
  p.stochastic = cfg.rounding == Rounding::kStochastic;
  p.seed = cfg.seed;
  p.offset = cfg.offset;
  p.rht_rowwise = cfg.rht_rowwise;
  p.rht_columnwise = cfg.rht_columnwise;
  p.rowwise = cfg.rowwise;
  p.columnwise = cfg.columnwise;
  if (cfg.rowwise) {
    p.codes = out.codes.ptr<uint8_t>();
    p.codes_stride = out.codes.strides[0];
    p.scales = out.scales.ptr<uint8_t>();
    p.scales_stride = out.scales.strides[0];
    p.wide_rows = aligned_to(p.codes, 16) && p.codes_stride % 16 == 0 && aligned_to(p.scales, 4) &&
                  p.scales_stride % 4 == 0;
  }
  if (cfg.columnwise) {
    p.codes_t = out.codes_t.ptr<uint8_t>();
    p.codes_t_stride = out.codes_t.strides[0];
    p.scales_t = out.scales_t.ptr<uint8_t>();
    p.scales_t_stride = out.scales_t.strides[0];
    p.wide_cols = aligned_to(p.codes_t, 16) && p.codes_t_stride % 16 == 0 &&
                  aligned_to(p.scales_t, 2) && p.scales_t_stride % 2 == 0;
  }
}

// The kernel for the call (choose_quantize_kernel), its grid and dynamic shared memory; the
// tile kernel's band pairs (tile_pair_cols) into p.
QuantizeLaunch choose_launch(DType dtype, const QuantizeConfig& cfg, QuantizeParams& p) {
  QuantizeCase c;
  c.bf16 = dtype == DType::kBFloat16;
  c.rows = p.rows;
  c.cols = p.cols;
  c.scope = p.scope;
  c.num_groups = p.num_groups;
  c.mode = mode_of(cfg);
  c.stochastic = p.stochastic;
  c.rht_rowwise = p.rht_rowwise;
  c.rht_columnwise = p.rht_columnwise;
  c.rowwise = cfg.rowwise;
  c.columnwise = cfg.columnwise;
  c.tile16 = cfg.block == Block::k16x16;
  c.amax_columnwise = p.amax_t != nullptr;
  c.vec_load = p.vec_load;
  c.packed_x = p.x_stride == p.cols || p.rows == 1;
  c.packed_rowwise = cfg.rowwise && p.codes_stride * 2 == p.cols && p.scales_stride * 16 == p.cols;
  c.wide_rows = p.wide_rows;
  c.wide_cols = p.wide_cols;
  c.scale_words_t = cfg.columnwise && aligned_to(p.scales_t, 4) && p.scales_t_stride % 4 == 0;
  p.pair_cols = tile_pair_cols(c);
  QuantizeLaunch l;
  l.kernel = choose_quantize_kernel(c);
  l.mode = c.mode;
  l.tile16 = c.tile16;
  // Staged group offsets (and, with virtual padding, the source offsets after them), within
  // this backend's group limit.
  if (p.scope == ScopeKind::kGroup)
    l.shared_bytes =
        staged_offsets_bytes(p.num_groups, "quantize") * (p.src_offsets != nullptr ? 2 : 1);
  // Clamped to resident CTAs at launch.
  l.grid = dim3(grid_x(quantize_grid_items(l.kernel, c), quantize_items_per_cta(l.kernel)));
  return l;
}

// The kernel's parameters and the launch choice; false when there is nothing to do.
bool prepare(const TensorView& x, const GlobalAmax& amax, const QuantizeConfig& cfg,
             const QuantizedOutputs& out, QuantizeParams& p, QuantizeLaunch& l) {
  // x: (R, C); with virtual padding x holds the unpadded rows, R is the padded count.
  const bool virtual_pad = amax.source_offsets.defined();
  const int64_t rows = virtual_pad ? out.codes_t.size(1) * 2 : x.size(0), cols = x.size(1);
  if (rows == 0 || cols == 0 || (!cfg.rowwise && !cfg.columnwise)) return false;
  check_cuda_limits(rows, cols, amax, cfg, out);
  fill_params(x, rows, amax, cfg, out, p);
  l = choose_launch(x.dtype, cfg, p);
  return true;
}

void launch(DType dtype, const QuantizeParams& p, const QuantizeLaunch& l, const Context& ctx) {
  const cudaStream_t stream = stream_of(ctx);
  switch (dtype) {
    case DType::kBFloat16:
      launch_quantize<Bf16>(p, l, stream);
      break;
    case DType::kFloat16:
      launch_quantize<F16>(p, l, stream);
      break;
    case DType::kFloat32:
      launch_quantize<F32>(p, l, stream);
      break;
    default:
      F46_CHECK(false, "quantize: x must be bf16/fp16/fp32, got ", dtype_name(dtype));
  }
}

// quantize_experts' one launch: the experts' outputs at their strides, 16-byte aligned.
bool batch_aligned(const TensorView& w, const QuantizeConfig& cfg, const QuantizedOutputs& out) {
  return (w.strides[0] * dtype_size(w.dtype)) % 16 == 0 &&
         (!cfg.rowwise || (out.codes.strides[0] % 16 == 0 && out.scales.strides[0] % 4 == 0)) &&
         (!cfg.columnwise ||
          (out.codes_t.strides[0] % 16 == 0 && out.scales_t.strides[0] % 4 == 0));
}
void set_batch(const TensorView& w, const TensorView& amax, const QuantizeConfig& cfg,
               const QuantizedOutputs& out, QuantizeParams& p, QuantizeLaunch& l) {
  l.batch = static_cast<int>(w.size(0));
  p.x_batch = w.strides[0];
  p.amax_batch = amax.strides[0];
  if (cfg.rowwise) p.codes_batch = out.codes.strides[0], p.scales_batch = out.scales.strides[0];
  if (cfg.columnwise)
    p.codes_t_batch = out.codes_t.strides[0], p.scales_t_batch = out.scales_t.strides[0];
}

// Each expert's N9 amax: one group-scope launch over the (E*N, K) view when the experts' rows
// are packed (groups of N rows), else one per expert.
void amax_experts(const TensorView& w, TensorView& amax, const Context& ctx) {
  const int64_t e = w.size(0), n = w.size(1), k = w.size(2);
  if (w.strides[0] == n * w.strides[1]) {
    TensorView rows = w;  // (E*N, K)
    rows.ndim = 2;
    rows.shape[0] = e * n, rows.shape[1] = k, rows.shape[2] = 0;
    rows.strides[0] = w.strides[1], rows.strides[1] = w.strides[2], rows.strides[2] = 0;
    amax_row_groups(rows, n, amax, ctx);
    return;
  }
  for (int64_t g = 0; g < e; ++g) {
    TensorView a = narrow0(amax, g, 1);
    f46::cuda::amax(select0(w, g), AmaxConfig{}, a, ctx);
  }
}

}  // namespace

void quantize(const TensorView& x, const GlobalAmax& amax, const QuantizeConfig& cfg,
              QuantizedOutputs& out, const Context& ctx) {
  QuantizeParams p;
  QuantizeLaunch l;
  if (prepare(x, amax, cfg, out, p, l)) launch(x.dtype, p, l, ctx);
}

void quantize_experts(const TensorView& w, const TensorView& amax, const QuantizeConfig& cfg,
                      QuantizedOutputs& out, const Context& ctx) {
  const int64_t e = w.size(0);
  const ExpertViews v0 = expert_views(w, amax, out, cfg, 0);
  QuantizeParams p;
  QuantizeLaunch l;
  if (!prepare(v0.x, v0.amax, cfg, v0.out, p, l)) return;  // empty experts
  if (quad16_batched(l.kernel, e, batch_aligned(w, cfg, out), l.grid.x, sm_count_current())) {
    set_batch(w, amax, cfg, out, p, l);  // one launch
    launch(w.dtype, p, l, ctx);
    return;
  }
  for (int64_t g = 0; g < e; ++g) {
    ExpertViews v = expert_views(w, amax, out, cfg, g);
    f46::cuda::quantize(v.x, v.amax, cfg, v.out, ctx);
  }
}

void amax_quantize_experts(const TensorView& w, TensorView& amax, const QuantizeConfig& cfg,
                           QuantizedOutputs& out, const Context& ctx) {
  const int64_t e = w.size(0), n = w.size(1), k = w.size(2);
  const ExpertViews v0 = expert_views(w, amax, out, cfg, 0);
  QuantizeParams p;
  QuantizeLaunch l;
  // One pass: the bf16 16x16 weights kernels, experts of packed rows (16-byte vectors of a
  // chunk never straddle a row end: k % 16 == 0), < 2^31 vectors each, one launch's items.
  // (A quantize chunk covers as much of x as an amax chunk or more: tickets < 2^32.)
  const int64_t chunks = (n * k * 2 + kAmaxChunkBytes - 1) / kAmaxChunkBytes;
  const bool one_pass = n > 0 && k > 0 && (cfg.rowwise || cfg.columnwise) &&
                        w.dtype == DType::kBFloat16 && w.strides[1] == k && e <= 65535 &&
                        n * k / 8 < (int64_t{1} << 31) && e * chunks * 2 < (int64_t{1} << 32) &&
                        prepare(v0.x, v0.amax, cfg, v0.out, p, l) &&
                        l.kernel == QuantizeKernel::kQuad16 && batch_aligned(w, cfg, out);
  if (!one_pass) {
    amax_experts(w, amax, ctx);
    f46::cuda::quantize_experts(w, amax, cfg, out, ctx);
    return;
  }
  set_batch(w, amax, cfg, out, p, l);
  const cudaStream_t stream = stream_of(ctx);
  PoolBuffer sched(static_cast<size_t>(e + 1) * sizeof(uint32_t), w.device_index, stream);
  F46_CHECK_CUDA(cudaMemsetAsync(sched.get(), 0, static_cast<size_t>(e + 1) * 4, stream));
  F46_CHECK_CUDA(cudaMemsetAsync(amax.data, 0, static_cast<size_t>(e) * 4, stream));
  p.sched = static_cast<uint32_t*>(sched.get());
  p.amax_out = amax.ptr<uint32_t>();
  p.amax_items = static_cast<uint32_t>(e);
  p.amax_chunks = static_cast<uint32_t>(chunks);
  l.with_amax = true;  // the launcher sets quant_chunks and amax_ahead
  launch(w.dtype, p, l, ctx);
}

}  // namespace f46::cuda
