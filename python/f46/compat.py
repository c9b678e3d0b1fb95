"""torchao / TransformerEngine-style names over f46.

| anchor name (torchao four-over-six)              | f46                                      |
|--------------------------------------------------|------------------------------------------|
| four_over_six_quantize(x, global_amax, block,    | ops.amax + ops.quantize -> QuantizedTensor|
|   err_mode, e4m3_scale_bound)                    |   (block 1 = 1x16, 16 = 16x16 tiles)     |
| four_over_six_dequantize(q, dtype)               | ops.dequantize (QuantizedTensor.dequantize)|
| four_over_six_mm(a (M,K), b (K,N))               | f46.linear(a, b.t()), no bias            |
| four_over_six_linear(x, w (N,K), bias)           | f46.linear                               |
| four_over_six_grouped_mm(A (M,K), B (E,K,N),     | f46.grouped_mm(A, B.transpose(-2,-1),    |
|   offs, bias, *, err_mode, e4m3_scale_bound,     |   offs, bias, Recipe(err_mode,           |
|   row_scaled_activation, weight_block,           |   scale_bound, row_scaled_activation,    |
|   backward_override, pad_token_groups_for_...)   |   weight_block, backward_override,       |
|                                                  |   pad_token_groups=128 if True))         |
| pad_token_groups(x, offs, alignment=128)         | f46.pad_token_groups (differentiable)    |
| unpad_token_groups(y, offs, padded_offs, rows)   | f46.unpad_token_groups                   |
| TE GroupedLinear(m_splits)                       | offs = cumsum(m_splits) int32 + grouped_mm|
| torchtitan GroupedExperts                        | F46GroupedExperts / convert_model        |

B of four_over_six_grouped_mm follows torch._grouped_mm ((E, K, N), out = A_g @ B[g]);
f46.grouped_mm itself takes B as (E, N, K) like nn.Linear weights. weight_block takes 16
(16x16 tiles) or 1 (1x16 blocks); torchao's "1x16" / "16x16" strings are accepted too.
"""

from __future__ import annotations

from typing import Optional

import torch

from . import ops
from .functional import grouped_mm, linear
from .functional import pad_token_groups as pad_token_groups  # noqa: F401
from .functional import unpad_token_groups as unpad_token_groups  # noqa: F401
from .quantized import QuantizedTensor
from .recipe import Recipe

_BLOCKS = {1: 1, 16: 16, "1x16": 1, "16x16": 16}


def _block(v) -> int:
    if v not in _BLOCKS:
        raise ValueError(f"block must be 1 / '1x16' or 16 / '16x16', got {v!r}")
    return _BLOCKS[v]


def four_over_six_quantize(
    x: torch.Tensor,
    global_amax: Optional[torch.Tensor] = None,
    block=1,
    err_mode: str = "mae",
    e4m3_scale_bound: float = 256.0,
) -> QuantizedTensor:
    """4/6 quantization of x (R, C) with a per-tensor global amax (computed when None)."""
    Recipe(err_mode=err_mode, scale_bound=e4m3_scale_bound)  # validates both
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D (R, C), got shape {tuple(x.shape)}")
    amax = ops.amax(x) if global_amax is None else global_amax.reshape(1).float()
    c, s, _, _ = ops.quantize(
        x.contiguous(),
        amax,
        rule=err_mode,
        scale_bound=float(e4m3_scale_bound),
        block=_block(block),
    )
    return QuantizedTensor(c, s, amax, "tensor", float(e4m3_scale_bound))


def four_over_six_dequantize(q: QuantizedTensor, dtype: torch.dtype = torch.bfloat16):
    return q.dequantize(dtype)


def four_over_six_linear(
    x,
    w,
    bias=None,
    *,
    err_mode="mae",
    e4m3_scale_bound=256.0,
    weight_block=16,
    row_scaled_activation=False,
    backward_override=None,
):
    r = Recipe(
        err_mode=err_mode,
        scale_bound=e4m3_scale_bound,
        weight_block=_block(weight_block),
        row_scaled_activation=row_scaled_activation,
        backward_override=backward_override,
    )
    return linear(x, w, bias, r)


def four_over_six_mm(a, b, **kw):
    """a (M, K) @ b (K, N) -> (M, N); b is the weight transposed."""
    return four_over_six_linear(a, b.t(), None, **kw)


def four_over_six_grouped_mm(
    A: torch.Tensor,
    B: torch.Tensor,
    offs: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    *,
    err_mode: str = "mae",
    e4m3_scale_bound: float = 256.0,
    row_scaled_activation: bool = False,
    weight_block=16,
    backward_override: Optional[str] = None,
    pad_token_groups_for_grouped_mm: bool = False,
) -> torch.Tensor:
    """A (M, K), B (E, K, N) (torch._grouped_mm layout), offs (E) int32 -> (M, N)."""
    if B.dim() != 3:
        raise ValueError(f"B must be 3-D (E, K, N), got shape {tuple(B.shape)}")
    r = Recipe(
        err_mode=err_mode,
        scale_bound=e4m3_scale_bound,
        weight_block=_block(weight_block),
        row_scaled_activation=row_scaled_activation,
        backward_override=backward_override,
        pad_token_groups=128 if pad_token_groups_for_grouped_mm else None,
    )
    return grouped_mm(A, B.transpose(-2, -1), offs, bias, r)
