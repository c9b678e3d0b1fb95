"""The routed SwiGLU experts' computation, out = (silu(x W1[g]^T) * (x W3[g]^T)) W2[g]^T, with
the gate/up pair (gate_up_pair) and the SwiGLU in one autograd Function on ops.swiglu.

ops.swiglu repeats PyTorch's CUDA arithmetic of `F.silu(h1) * h3` and its autograd (N13) and
writes the per-group amaxes of its outputs on the way: h's for the down projection's
activation quantization, dh1's and dh3's for the pair's quantized backward. So the fused form
is bitwise the composition grouped_mm_pair -> F.silu(h1) * h3 -> grouped_mm
(tests/python/test_swiglu.py) with fewer passes over the (T, F) intermediates and h1, h3 saved
instead of h1, silu(h1), h3. Where it does not apply (CPU, prequantized or mismatched weights,
token-group padding, row-scaled activations, zero tokens) the composition runs.
"""

from __future__ import annotations

from typing import Union

import torch
import torch.nn.functional as F

from .. import ops
from ..functional import _check_grouped, _needs_grad, grouped_mm, grouped_mm_amax
from ..quantized import QuantizedWeight, next_sr_offset
from ..recipe import Recipe
from .gate_up_pair import grouped_mm_pair, pair_applies, pair_backward, pair_forward


class _GroupedSwiGLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b1, b3, offs, recipe, sr1, sr3, needs, caches=(None, None)):
        h1, h3, saved = pair_forward(ctx, a, b1, b3, offs, recipe, sr1, sr3, needs, caches)
        h, h_amax = ops.swiglu(h1, h3, offs)  # (M, F), (E)
        ctx.save_for_backward(*saved, h1, h3)
        ctx.mark_non_differentiable(h_amax)
        return h, h_amax

    @staticmethod
    def backward(ctx, dh, _):
        *saved, h1, h3 = ctx.saved_tensors
        quant = ctx.mode == "quantized"  # its per-group gradient quantization needs the amaxes
        dh1, dh3, m1, m3 = ops.swiglu_backward(
            dh.contiguous(), h1, h3, saved[-1], amax_da=quant, amax_db=quant
        )
        da, db1, db3 = pair_backward(
            ctx, saved, dh1, dh3, m1 if quant else None, m3 if quant else None
        )
        return da, db1, db3, None, None, None, None, None, None


def fused_applies(x, w1, w2, w3, recipe: Recipe) -> bool:
    """ops.swiglu's form applies: CUDA, weight tensors of matching shapes and dtype, group-scope
    activations without token-group padding, tokens present."""
    return (
        x.is_cuda
        and isinstance(w2, torch.Tensor)
        and pair_applies(x, w1, w3, recipe)
        and w2.dim() == 3
        and w2.dtype == w1.dtype
        and not recipe.row_scaled_activation
    )


def swiglu_experts(
    x: torch.Tensor,
    w1: Union[torch.Tensor, QuantizedWeight],
    w2: Union[torch.Tensor, QuantizedWeight],
    w3: Union[torch.Tensor, QuantizedWeight],
    offs: torch.Tensor,
    recipe: Recipe = Recipe(),
    fused: bool = True,
    weight_caches: tuple = (None, None, None),
) -> torch.Tensor:
    """grouped_mm(silu(grouped_mm(x, w1)) * grouped_mm(x, w3), w2) over token groups offs (E)
    int32: x (T, D), w1/w3 (E, F, D), w2 (E, D, F) -> (T, D). fused=False (or where the fused
    form does not apply) runs the composition; the results are bitwise the same.
    weight_caches: the f46.WeightCache of w1, w2, w3 (or None each)."""
    c1, c2, c3 = weight_caches
    if not (fused and fused_applies(x, w1, w2, w3, recipe)):
        h1, h3 = grouped_mm_pair(x, w1, w3, offs, recipe, (c1, c3))  # (T, F)
        return grouped_mm(F.silu(h1) * h3, w2, offs, recipe=recipe, weight_cache=c2)  # (T, D)
    e, f, d = w1.shape
    _check_grouped(x, e, f, d, offs, None, recipe)
    sr1 = next_sr_offset(recipe)  # grouped_mm_pair's two offsets, in their order
    sr3 = next_sr_offset(recipe)
    needs = _needs_grad(x, w1, w3)
    h, h_amax = _GroupedSwiGLU.apply(
        x.contiguous(), w1, w3, offs, recipe, sr1, sr3, needs, (c1, c3)
    )
    return grouped_mm_amax(h, w2, offs, h_amax, recipe, c2)  # (T, D)
