"""Two M-grouped NVFP4 GEMMs of one A, as one autograd Function: the SwiGLU experts' A B1[g]^T
and A B3[g]^T (gate and up projections).

Both GEMMs read the same quantized A, so its amax, its 1x16 quantization and (quantized
backward) its padded columnwise copy for the wgrads are computed once instead of twice, and
the GEMM pairs (ops.grouped_gemm_m_pair forward, ops.grouped_gemm_k_pair wgrads) make A's BF16
operand copy once; the dequantized backward dequantizes A once. Everything else is what two
f46.grouped_mm calls do (stochastic-rounding offsets included), so the results and every
gradient are bitwise those of the two calls (tests/python/test_gate_up_pair.py); dA = dA1 +
dA3 is the sum autograd forms for the two calls.
"""

from __future__ import annotations

import torch

from ..functional import _check_grouped, _needs_grad, grouped_mm
from ..grouped_steps import (
    _dequantized_a,
    _dequantized_b,
    _grouped_backward_bf16,
    _grouped_backward_quantized_many,
    _grouped_gemm_pair,
    _quantize_a_grouped,
    _x_columnwise,
)
from ..quantized import cached_weight, next_sr_offset
from ..recipe import Recipe


def _sum(x, y):
    if x is None:
        return y
    return x if y is None else x + y


def pair_forward(ctx, a, b1, b3, offs, recipe, sr1, sr3, needs, caches=(None, None)):
    """Forward of the pair: sets ctx's fields, returns (y1, y3, tensors to save) where the
    tensors' last entry is offs (pair_backward reads them back in that order). caches: the
    WeightCaches of b1 and b3, or None each."""
    need_da, need_db1, need_db3 = needs
    mode = recipe.grouped_backward()
    quant_bw = mode == "quantized"
    ac, as_, a_amax, scope = _quantize_a_grouped(a, offs, recipe)  # once for both GEMMs
    qw1 = cached_weight(b1, recipe, quant_bw and need_da, caches[0])
    qw3 = cached_weight(b3, recipe, quant_bw and need_da, caches[1])
    y1, y3 = _grouped_gemm_pair(ac, as_, a_amax, scope, qw1, qw3, offs, recipe, a.dtype)
    ctx.recipe, ctx.mode, ctx.scope, ctx.needs = recipe, mode, scope, needs
    ctx.sr = (sr1, sr3)
    ctx.dtypes = (a.dtype, b1.dtype)
    if mode == "high_precision":
        return y1, y3, [a, b1, b3, offs]
    if mode == "dequantized":
        return y1, y3, [ac, as_, a_amax, qw1.codes, qw1.scales, qw1.amax, qw3.codes, qw3.scales,
                        qw3.amax, offs]  # fmt: skip
    empty = a.new_empty(0, dtype=torch.uint8)
    need_x = need_db1 or need_db3
    xt = _x_columnwise(a, offs, a_amax, recipe) if need_x else (empty, empty, a_amax, offs)
    w = []
    for qw in (qw1, qw3):
        w += [qw.codes_t if qw.codes_t is not None else empty]
        w += [qw.scales_t if qw.scales_t is not None else empty, qw.amax]
    return y1, y3, [*xt, *w, offs]


def pair_backward(ctx, saved, dy1, dy3, g_amax1=None, g_amax3=None):
    """(dA, dB1, dB3) from pair_forward's saved tensors; g_amax1 / g_amax3: the per-group amaxes
    of dy1 / dy3 when the caller has them (quantized backward)."""
    recipe, mode = ctx.recipe, ctx.mode
    need_da, need_db1, need_db3 = ctx.needs
    dy1, dy3 = dy1.contiguous(), dy3.contiguous()  # (M, N)
    if mode == "quantized":
        s = saved
        (da1, db1), (da3, db3) = _grouped_backward_quantized_many(
            [
                (dy1, s[4:7], ctx.sr[0], need_db1, g_amax1),
                (dy3, s[7:10], ctx.sr[1], need_db3, g_amax3),
            ],
            s[0:4],
            s[10],
            recipe,
            need_da,
            ctx.dtypes,
        )
    else:
        if mode == "high_precision":
            a, b1, b3, offs = saved
        else:
            ac, as_, a_amax, c1, s1, m1, c3, s3, m3, offs = saved
            a = _dequantized_a(ac, as_, a_amax, ctx.scope, offs, recipe)  # (M, K), once
            b1 = _dequantized_b(c1, s1, m1, recipe)  # (E, N, K)
            b3 = _dequantized_b(c3, s3, m3, recipe)
        da1, db1 = _grouped_backward_bf16(dy1, a, b1, offs, need_da, need_db1, *ctx.dtypes)
        da3, db3 = _grouped_backward_bf16(dy3, a, b3, offs, need_da, need_db3, *ctx.dtypes)
    return _sum(da1, da3), db1, db3


class _GroupedMMPair(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b1, b3, offs, recipe, sr1, sr3, needs, caches=(None, None)):
        y1, y3, saved = pair_forward(ctx, a, b1, b3, offs, recipe, sr1, sr3, needs, caches)
        ctx.save_for_backward(*saved)
        return y1, y3

    @staticmethod
    def backward(ctx, dy1, dy3):
        da, db1, db3 = pair_backward(ctx, ctx.saved_tensors, dy1, dy3)
        return da, db1, db3, None, None, None, None, None, None


def pair_applies(a, b1, b3, recipe) -> bool:
    """The shared form applies: two (E, N, K) tensors of one shape and dtype, no token-group
    padding, 2-D A with tokens."""
    return (
        isinstance(b1, torch.Tensor)
        and isinstance(b3, torch.Tensor)
        and b1.dim() == 3
        and b1.shape == b3.shape
        and b1.dtype == b3.dtype
        and recipe.pad_token_groups is None
        and a.dim() == 2
        and a.shape[0] > 0
    )


def grouped_mm_pair(
    a: torch.Tensor,
    b1: torch.Tensor,
    b3: torch.Tensor,
    offs: torch.Tensor,
    recipe: Recipe = Recipe(),
    weight_caches: tuple = (None, None),
) -> tuple[torch.Tensor, torch.Tensor]:
    """(f46.grouped_mm(a, b1, offs, recipe=recipe), f46.grouped_mm(a, b3, offs, recipe=recipe)),
    bitwise, with A quantized once. b1, b3: (E, N, K) tensors of one shape and dtype, no bias.
    weight_caches: the f46.WeightCache of b1 and b3 (or None each). Falls back to the two calls
    where the shared form does not apply (prequantized weights, token-group padding, zero
    tokens)."""
    c1, c3 = weight_caches
    if not pair_applies(a, b1, b3, recipe):
        return (grouped_mm(a, b1, offs, recipe=recipe, weight_cache=c1),
                grouped_mm(a, b3, offs, recipe=recipe, weight_cache=c3))  # fmt: skip
    e, n, k = b1.shape
    _check_grouped(a, e, n, k, offs, None, recipe)
    sr1 = next_sr_offset(recipe)  # the two calls' offsets, in their order
    sr3 = next_sr_offset(recipe)
    needs = _needs_grad(a, b1, b3)  # (dA, dB1, dB3)
    return _GroupedMMPair.apply(a.contiguous(), b1, b3, offs, recipe, sr1, sr3, needs, (c1, c3))
