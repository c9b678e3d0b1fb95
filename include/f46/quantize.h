// Quantization to NVFP4 with Four Over Six block selection. Numbers follow docs/numerics.md;
// section numbers below (e.g. N3) refer to it.
#pragma once

#include <cstdint>

#include "f46/tensor.h"

namespace f46 {

// How a block picks between the map-to-6 and map-to-4 scale (N3).
enum class Rule : uint8_t { kMAE, kMSE, kAbsMax, kAll6, kAll4 };

// Block shape: 1x16 along the contraction dim, or 16x16 tiles for weights (N1.4).
enum class Block : uint8_t { k1x16, k16x16 };

// Granularity of the global (second-level) scale (N2): one amax for the tensor, one per row,
// or one per token group (rows split by int32 group-end offsets).
enum class AmaxScope : uint8_t { kTensor, kRow, kGroup };

enum class Rounding : uint8_t { kNearestEven, kStochastic };

const char* rule_name(Rule r);
const char* scope_name(AmaxScope s);

struct QuantizeConfig {
  Rule rule = Rule::kMAE;
  float scale_bound = 256.0f;  // 256 (4/6 default) or 448
  Block block = Block::k1x16;
  // Standard NVFP4 gradient arithmetic (N4): bound must be 448, rule must be kAll6.
  bool gradient = false;
  Rounding rounding = Rounding::kNearestEven;  // stochastic needs rule kAll6 or kAll4 (N6)
  uint64_t seed = 0;
  uint64_t offset = 0;
  // Random Hadamard transform of each 16-element block along the quantized dim (N7), applied
  // to the rowwise output, the columnwise output, or both.
  bool rht_rowwise = false;
  bool rht_columnwise = false;
  bool rowwise = true;      // emit codes/scales of x (R, C)
  bool columnwise = false;  // emit codes/scales of x^T (C, R), quantized along R
};

// Outputs of quantize. Unused outputs may be left undefined.
struct QuantizedOutputs {
  TensorView codes;      // (R, C/2) uint8, element 2i low nibble, 2i+1 high nibble
  TensorView scales;     // (R, C/16) uint8 E4M3 bytes, linear row-major
  TensorView codes_t;    // (C, R/2) uint8, quantization of x^T
  TensorView scales_t;   // (C, R/16) uint8
};

// Global amaxes: `amax` (float32) is (1) for kTensor, (R) for kRow, (E) for kGroup with
// `offsets` (E) int32 cumulative group ends over rows. The columnwise output uses
// `amax_columnwise` when defined (e.g. an amax taken after the RHT), else `amax`.
// `source_offsets` (E) int32, optional, kGroup only: virtual token-group padding (N12). x then
// holds M unpadded rows split by source_offsets, and the call quantizes, bitwise, the
// R = padded_rows(M, E, 16) rows pad_token_groups(x, source_offsets, 16) would hold, without
// writing them; `offsets` must be the padded ends that call writes. Columnwise output only,
// 1x16 blocks, no RHT.
struct GlobalAmax {
  AmaxScope scope = AmaxScope::kTensor;
  TensorView amax;
  TensorView amax_columnwise;
  TensorView offsets;
  TensorView source_offsets;
};

// x: (R, C) bf16/fp16/fp32, 2-D, last dim contiguous.
void quantize(const TensorView& x, const GlobalAmax& amax, const QuantizeConfig& cfg,
              QuantizedOutputs& out, const Context& ctx = {});

// Grouped weights w (E, N, K), expert g quantized with amax[g] as its per-tensor amax: the
// numbers of quantize with scope kGroup over the (E*N, K) view and offsets N, 2N, ... (N2),
// bitwise. amax (E) float32. out: codes (E, N, K/2), scales (E, N, K/16) when cfg.rowwise,
// codes_t (E, K, N/2), scales_t (E, K, N/16) (each expert's x^T) when cfg.columnwise. Every
// expert must be a valid quantize input on its own. On CUDA the bf16 16x16 weight kernel takes
// all experts in one launch.
void quantize_experts(const TensorView& w, const TensorView& amax, const QuantizeConfig& cfg,
                      QuantizedOutputs& out, const Context& ctx = {});

// quantize_experts with the amaxes computed too: amax (E) float32 (contiguous) receives each
// expert's N9 amax (AmaxScope::kTensor of w[g]), then the experts are quantized with it;
// bitwise amax + quantize_experts. On CUDA the bf16 16x16 weights take one pass that reads
// each expert for its tiles again while it is still in L2 (small experts: half the DRAM reads).
void amax_quantize_experts(const TensorView& w, TensorView& amax, const QuantizeConfig& cfg,
                           QuantizedOutputs& out, const Context& ctx = {});

// Dequantize codes/scales (rows, cols/2)/(rows, cols/16) with the global amax used to make them
// (scope/offsets over rows as in quantize; N8). out: (rows, cols) bf16/fp16/fp32.
void dequantize(const TensorView& codes, const TensorView& scales, const GlobalAmax& amax,
                float scale_bound, TensorView& out, const Context& ctx = {});

struct AmaxConfig {
  AmaxScope scope = AmaxScope::kTensor;
  TensorView offsets;        // (E) int32, for kGroup
  bool rht_columns = false;  // amax of the RHT of each 16-row block of every column (N7)
};

// NaN-propagating amax of |x| (N9). x: (R, C). out float32: (1) tensor, (R) rows, (E) groups.
void amax(const TensorView& x, const AmaxConfig& cfg, TensorView& out, const Context& ctx = {});

}  // namespace f46
