"""The top-level f46 names borrowed from torchao mean what torchao means.

f46.four_over_six_quantize, four_over_six_dequantize, nvfp4_dequantize, four_over_six_mm,
four_over_six_linear, four_over_six_grouped_mm and four_over_six_global_encode_scale are the
f46.torchao functions (torchao's signatures, layouts, returns and ValueErrors):

| torchao name                                   | meaning                                     |
|------------------------------------------------|---------------------------------------------|
| four_over_six_quantize(x, global_amax, *,      | (codes (R, C/2) uint8, scales (R, C/16)     |
|   block="1x16", err_mode, e4m3_scale_bound)    |  float8_e4m3fn); amax scalar or (R,)        |
| four_over_six_mm.apply / four_over_six_linear  | x (..., K) @ w (N, K).T + bias (N,), bf16   |
|   (x, w, bias, err_mode, bound, row_scaled,    |                                             |
|    backward_override, weight_block)            |                                             |
| four_over_six_grouped_mm(A (M, K),             | rows of group g: A_g @ B[g].T (+ bias (N,)) |
|   B (E, N, K), offs, bias, *, ...)             |                                             |

B of four_over_six_grouped_mm is (E, N, K), as in torchao and f46.grouped_mm; a B whose last
dim is not A's K raises ValueError. f46.pad_token_groups / unpad_token_groups are torchao's
(input_act, group_end_offsets, alignment_size=32, kernel_preference) -> (padded, padded group
start offsets, padded group end offsets) and its inverse; f46's own (x, offs, alignment) ->
(padded, padded_offs) pair is f46.functional.pad_token_groups / unpad_token_groups.
f46-native entry points: f46.linear, f46.grouped_mm with an f46.Recipe.
"""

from .torchao.four_over_six import (  # noqa: F401
    four_over_six_dequantize,
    four_over_six_global_encode_scale,
    four_over_six_linear,
    four_over_six_mm,
    four_over_six_quantize,
    nvfp4_dequantize,
)
from .torchao.four_over_six_grouped import four_over_six_grouped_mm  # noqa: F401
from .torchao.utils import pad_token_groups, unpad_token_groups  # noqa: F401
