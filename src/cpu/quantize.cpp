// CPU reference of f46::quantize: every mode of QuantizeConfig, written directly from
// docs/numerics.md (N2-N7) with the scalar functions of common/numerics.h.
#include <cstdint>
#include <vector>

#include "backend.h"
#include "common/numerics.h"
#include "cpu/quantize_io.h"

namespace f46::cpu {
namespace {

// One output to produce: the rowwise quantization of a float matrix `x` (rows, cols), which is
// x itself (rowwise output) or x^T (columnwise output), already RHT-transformed when enabled.
struct Job {
  const float* x = nullptr;  // (rows, cols) float32, contiguous
  int64_t rows = 0, cols = 0;
  const float* global = nullptr;  // (rows, cols/16) global amax of every block (N2)
  uint8_t* codes = nullptr;       // (rows, cols/2) two E2M1 codes per byte (N1.2)
  uint8_t* scales = nullptr;      // (rows, cols/16) E4M3 bytes (N1.3)
  uint64_t index_base = 0;        // SR element index of (0, 0) (N6)
};

// The block scale byte of a 1x16 block (nrows = 1) or a 16x16 tile (nrows = 16) whose rows start
// at `x` with row stride `ld`; `amax` is the global amax (uniform over the tile).
uint8_t choose_scale(const float* x, int64_t ld, int nrows, float amax, const QuantizeConfig& cfg) {
  uint32_t amax_bits = 0;  // N9: integer max of |x| patterns keeps NaN
  for (int r = 0; r < nrows; ++r)
    for (int i = 0; i < 16; ++i) amax_bits = std::max(amax_bits, num::abs_bits(x[r * ld + i]));
  const float block_amax = num::from_bits(amax_bits);
  const float bound = cfg.scale_bound;
  const float s_enc = num::encode_scale(amax, bound);               // N2
  if (cfg.gradient) return num::scale_gradient(block_amax, s_enc);  // N4
  const uint8_t s6 = num::scale_map6(block_amax, s_enc);            // N3.1
  if (cfg.rule == Rule::kAll6) return s6;
  const uint8_t s4 = num::scale_map4(block_amax, s_enc);
  if (cfg.rule == Rule::kAll4) return s4;
  const float s_dec = num::div(1.0f, s_enc);
  float e6[16] = {}, e4[16] = {};
  for (int r = 0; r < nrows; ++r) {  // N3.3
    e6[r] = num::row_error(x + r * ld, s6, s_dec, amax, bound, cfg.rule);
    e4[r] = num::row_error(x + r * ld, s4, s_dec, amax, bound, cfg.rule);
  }
  const float err6 = nrows == 16 ? num::tile_error(e6, cfg.rule) : e6[0];  // N3.4
  const float err4 = nrows == 16 ? num::tile_error(e4, cfg.rule) : e4[0];
  return num::pick_map4(err4, err6) ? s4 : s6;  // N3.5
}

// Codes of 16 elements of row `r` starting at column `c0` under scale byte `scale` (N3.2, N5, N6).
void write_codes(const Job& job, int64_t r, int64_t c0, uint8_t scale, float amax,
                 const QuantizeConfig& cfg) {
  const float* x = job.x + r * job.cols + c0;
  const float s_dec = num::div(1.0f, num::encode_scale(amax, cfg.scale_bound));
  const float inv = num::inverse_scale(scale, s_dec);
  uint8_t* out = job.codes + r * (job.cols / 2) + c0 / 2;
  const bool sr = cfg.rounding == Rounding::kStochastic;
  for (int i = 0; i < 16; i += 2) {
    uint8_t q[2];
    for (int k = 0; k < 2; ++k) {
      const float v = num::clamp6(num::mul(x[i + k], inv));
      uint8_t c;
      if (sr) {
        const uint64_t idx = job.index_base + static_cast<uint64_t>(r * job.cols + c0 + i + k);
        c = num::e2m1_from_float_stochastic(v, num::random_bits(cfg.seed, cfg.offset, idx));
      } else {
        c = num::e2m1_from_float(v);
      }
      q[k] = static_cast<uint8_t>((c & 7u) | num::code_sign(x[i + k], inv));  // N5 sign rule
    }
    out[i / 2] = static_cast<uint8_t>(q[0] | (q[1] << 4));
  }
}

void run_job(const Job& job, const QuantizeConfig& cfg) {
  const int64_t nb = job.cols / 16;
  const int tile = cfg.block == Block::k16x16 ? 16 : 1;
  const int64_t units = job.rows / tile;
  detail::parallel_for(units, 64 / tile + 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t r0 = u * tile;
      for (int64_t b = 0; b < nb; ++b) {
        const float amax = job.global[r0 * nb + b];
        const uint8_t s = choose_scale(job.x + r0 * job.cols + b * 16, job.cols, tile, amax, cfg);
        for (int64_t r = r0; r < r0 + tile; ++r) {
          job.scales[r * nb + b] = s;  // N1.4: a tile's scale is stored on all its rows
          write_codes(job, r, b * 16, s, job.global[r * nb + b], cfg);
        }
      }
    }
  });
}

// x as a contiguous float matrix (rows, cols), or its transpose, RHT-transformed per 16-block of
// each output row when `rht` (N7).
std::vector<float> materialize(const TensorView& x, bool transpose, bool rht) {
  const int64_t R = x.size(0), C = x.size(1);
  const int64_t rows = transpose ? C : R, cols = transpose ? R : C;
  std::vector<float> m(static_cast<size_t>(rows * cols));
  detail::parallel_for(R, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < C; ++c) {
        const float v = detail::load(x, r, c);
        m[static_cast<size_t>(transpose ? c * R + r : r * C + c)] = v;
      }
  });
  if (rht) {
    detail::parallel_for(rows, 64, [&](int64_t r0, int64_t r1) {
      float y[16];
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t b = 0; b < cols / 16; ++b) {
          float* p = m.data() + r * cols + b * 16;
          num::rht16(p, y);
          for (int i = 0; i < 16; ++i) p[i] = y[i];
        }
    });
  }
  return m;
}

}  // namespace

void quantize(const TensorView& x, const GlobalAmax& amax, const QuantizeConfig& cfg,
              QuantizedOutputs& out, const Context& ctx) {
  if (amax.source_offsets.defined()) {  // virtual padding (N12): the reference pads for real
    const int64_t rows = out.codes_t.size(1) * 2, cols = x.size(1);
    std::vector<uint8_t> buf(static_cast<size_t>(rows * cols * dtype_size(x.dtype)));
    TensorView padded = make_view(buf.data(), x.dtype, {rows, cols});
    std::vector<int32_t> poffs(static_cast<size_t>(amax.offsets.size(0)));
    TensorView pv = make_view(poffs.data(), DType::kInt32, {amax.offsets.size(0)});
    cpu::pad_token_groups(x, amax.source_offsets, 16, padded, pv, ctx);
    GlobalAmax a = amax;
    a.source_offsets = TensorView{};
    cpu::quantize(padded, a, cfg, out, ctx);
    return;
  }
  const int64_t R = x.size(0), C = x.size(1);
  if (cfg.rowwise) {
    const std::vector<float> m = materialize(x, false, cfg.rht_rowwise);  // (R, C)
    const std::vector<float> rows = detail::row_amaxes(amax.scope, amax.amax, amax.offsets, R);
    std::vector<float> global(static_cast<size_t>(R * (C / 16)));  // (R, C/16)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t b = 0; b < C / 16; ++b) global[r * (C / 16) + b] = rows[r];
    Job job{m.data(), R, C, global.data(), out.codes.ptr<uint8_t>(), out.scales.ptr<uint8_t>(), 0};
    run_job(job, cfg);
  }
  if (cfg.columnwise) {
    const std::vector<float> m = materialize(x, true, cfg.rht_columnwise);  // (C, R)
    const TensorView& a = amax.amax_columnwise.defined() ? amax.amax_columnwise : amax.amax;
    // Token block t (rows 16t..16t+15 of x) takes the amax of its group (N11: offsets % 16 == 0).
    const std::vector<float> rows = detail::row_amaxes(amax.scope, a, amax.offsets, R);
    std::vector<float> global(static_cast<size_t>(C * (R / 16)));  // (C, R/16)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t t = 0; t < R / 16; ++t) global[c * (R / 16) + t] = rows[t * 16];
    Job job{m.data(),
            C,
            R,
            global.data(),
            out.codes_t.ptr<uint8_t>(),
            out.scales_t.ptr<uint8_t>(),
            static_cast<uint64_t>(R * C)};
    run_job(job, cfg);
  }
}

}  // namespace f46::cpu
