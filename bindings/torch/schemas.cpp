// The f46 operator schemas (torch.ops.f46.*). Kernels: ops_cpu.cpp, ops_cuda.cpp, ops_meta.cpp.
#include <torch/library.h>

TORCH_LIBRARY(f46, m) {
  m.def(
      "quantize(Tensor x, Tensor amax, Tensor? offsets, str scope, str rule, float scale_bound, "
      "int block, bool gradient, bool stochastic, int seed, int offset, bool rht_rowwise, "
      "bool rht_columnwise, bool rowwise, bool columnwise, Tensor? amax_columnwise, "
      "Tensor? source_offsets=None) -> "
      "(Tensor codes, Tensor scales, Tensor codes_t, Tensor scales_t)");
  m.def(
      "quantize_experts(Tensor w, Tensor amax, str rule, float scale_bound, int block, "
      "bool columnwise) -> (Tensor codes, Tensor scales, Tensor codes_t, Tensor scales_t)");
  m.def(
      "amax_quantize_experts(Tensor w, str rule, float scale_bound, int block, bool columnwise) "
      "-> (Tensor amax, Tensor codes, Tensor scales, Tensor codes_t, Tensor scales_t)");
  m.def(
      "dequantize(Tensor codes, Tensor scales, Tensor amax, Tensor? offsets, str scope, "
      "float scale_bound, ScalarType dtype) -> Tensor");
  m.def("amax(Tensor x, str scope, Tensor? offsets, bool rht_columns) -> Tensor");
  m.def(
      "gemm(Tensor a_codes, Tensor a_scales, Tensor a_amax, str a_scope, float a_bound, "
      "Tensor b_codes, Tensor b_scales, Tensor b_amax, float b_bound, Tensor? bias, "
      "ScalarType out_dtype, str plan=\"auto\", int max_swizzle=0, str raster=\"m\") -> Tensor");
  m.def(
      "grouped_gemm_m(Tensor a_codes, Tensor a_scales, Tensor a_amax, str a_scope, "
      "float a_bound, Tensor b_codes, Tensor b_scales, Tensor b_amax, str b_scope, "
      "float b_bound, Tensor offs, Tensor? bias, ScalarType out_dtype, "
      "str plan=\"auto\", int max_swizzle=0, str raster=\"m\") -> Tensor");
  m.def(
      "grouped_gemm_k(Tensor a_codes, Tensor a_scales, Tensor a_amax, str a_scope, "
      "float a_bound, Tensor b_codes, Tensor b_scales, Tensor b_amax, str b_scope, "
      "float b_bound, Tensor offs, ScalarType out_dtype, "
      "str plan=\"auto\", int max_swizzle=0, str raster=\"m\") -> Tensor");
  m.def(
      "grouped_gemm_m_pair(Tensor a_codes, Tensor a_scales, Tensor a_amax, str a_scope, "
      "float a_bound, Tensor b1_codes, Tensor b1_scales, Tensor b1_amax, Tensor b2_codes, "
      "Tensor b2_scales, Tensor b2_amax, str b_scope, float b_bound, Tensor offs, "
      "ScalarType out_dtype, str plan=\"auto\", int max_swizzle=0, str raster=\"m\") -> "
      "(Tensor, Tensor)");
  m.def(
      "grouped_gemm_k_pair(Tensor a1_codes, Tensor a1_scales, Tensor a1_amax, Tensor a2_codes, "
      "Tensor a2_scales, Tensor a2_amax, str a_scope, float a_bound, Tensor b_codes, "
      "Tensor b_scales, Tensor b_amax, str b_scope, float b_bound, Tensor offs, "
      "ScalarType out_dtype, str plan=\"auto\", int max_swizzle=0, str raster=\"m\") -> "
      "(Tensor, Tensor)");
  m.def("pad_token_groups(Tensor x, Tensor offs, int alignment) -> (Tensor, Tensor)");
  m.def("unpad_token_groups(Tensor y, Tensor offs, Tensor padded_offs, int num_rows) -> Tensor");
  m.def("zero_rows_past_groups_(Tensor(a!) x, Tensor offs) -> ()");
  m.def("swiglu(Tensor a, Tensor b, Tensor? offsets) -> (Tensor out, Tensor amax)");
  m.def(
      "swiglu_backward(Tensor dout, Tensor a, Tensor b, Tensor? offsets, bool amax_da, "
      "bool amax_db) -> (Tensor da, Tensor db, Tensor amax_da, Tensor amax_db)");
}
