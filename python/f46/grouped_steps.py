"""The steps of the grouped NVFP4 GEMM (N11, N12) that f46.grouped_mm's autograd Function and
the SwiGLU experts' gate/up pair (experts/gate_up_pair.py) share: A's quantization, the forward
GEMM (one weight, or two of one A through ops.grouped_gemm_m_pair), X's columnwise copy for the
wgrad, and the backward of each recipe mode (dequantized: BF16 GEMMs on the forward's
dequantized operands; quantized: the N4 gradients, dgrad and wgrad as separate steps so a pair
can share X's columnwise copy through ops.grouped_gemm_k_pair)."""

from __future__ import annotations

import torch

from . import ops
from .bf16_grouped_gemm import grouped_mm_k_bf16, grouped_mm_m_bf16
from .quantized import (
    QuantizedWeight,
    bias_for_gemm,
    gemm_out_dtype,
    quantize_activation,
    quantize_gradient,
)


def _cast(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """t in dtype, without a `.to` when t already has it: under torch.compile a no-op `.to` is
    an alias, and an autograd.Function output aliasing an intermediate loses its gradient."""
    return t if t.dtype == dtype else t.to(dtype)


def _quantize_a_grouped(a, offs, recipe, amax=None):
    """A (M, K): 1x16 4/6 with a per-group (N2) or per-row amax; `amax`: A's per-group amax
    when the caller has it (group scope only)."""
    scope = "row" if recipe.row_scaled_activation else "group"
    assert amax is None or scope == "group", "a precomputed amax is per group"
    c, s, amax = quantize_activation(a, recipe, scope, offs if scope == "group" else None, amax)
    return c, s, amax, scope  # amax (E) | (M)


def _forward_kwargs(scope, qw: QuantizedWeight, recipe, dtype) -> dict:
    """The keyword arguments of the forward GEMM of A (scope) against qw, grouped_gemm_m and the
    pair alike."""
    return dict(
        a_scope=scope,
        b_scope="group",
        a_bound=recipe.scale_bound,
        b_bound=qw.scale_bound,
        plan=recipe.gemm_plan,
        out_dtype=gemm_out_dtype(dtype),
    )


def _grouped_gemm(ac, as_, a_amax, scope, qw: QuantizedWeight, offs, bias, recipe, dtype):
    y = ops.grouped_gemm_m(
        ac, as_, a_amax, qw.codes, qw.scales, qw.amax, offs, bias=bias_for_gemm(bias),
        **_forward_kwargs(scope, qw, recipe, dtype),
    )  # (M, N); rows past offs[E-1] are zero  # fmt: skip
    return _cast(y, dtype)


def _grouped_gemm_pair(ac, as_, a_amax, scope, qw1, qw3, offs, recipe, dtype):
    """_grouped_gemm of one A against two weights quantized under one recipe (one shape, one
    scale bound), bitwise, A's operand copy made once (ops.grouped_gemm_m_pair)."""
    y1, y3 = ops.grouped_gemm_m_pair(
        ac, as_, a_amax, qw1.codes, qw1.scales, qw1.amax, qw3.codes, qw3.scales, qw3.amax, offs,
        **_forward_kwargs(scope, qw1, recipe, dtype),
    )  # (M, N) each; rows past offs[E-1] are zero  # fmt: skip
    return _cast(y1, dtype), _cast(y3, dtype)


def _token_groups16(x, offs, recipe):
    """x's token groups padded to 16 rows (N12) for a columnwise quantization: (operand, padded
    offsets, source offsets). Without the RHT the padding stays virtual (the quantizer reads x's
    rows; source offsets = offs); the RHT's amax needs the padded rows written (None)."""
    if recipe.wgrad_rht:
        xp, poffs = ops.pad_token_groups(x, offs, 16)  # (P, C), (E)
        return xp, poffs, None
    return x, ops.padded_offsets(offs, 16), offs


def _x_columnwise(a, offs, a_amax, recipe):
    """Columnwise X for the K-grouped wgrad: groups padded to 16 tokens (N12) so no quantization
    block straddles two groups (padded rows are zero). -> (codes_t (K, P/2), scales_t (K, P/16),
    amax_t, padded offsets)."""
    a16, poffs, src = _token_groups16(a, offs, recipe)
    amax_t = a_amax
    if recipe.wgrad_rht:  # N7: the amax of an RHT operand is taken after the RHT
        amax_t = ops.amax(a16, scope="group", offsets=poffs, rht_columns=True)
    _, _, xct, xst = ops.quantize(
        a16,
        a_amax,
        offsets=poffs,
        scope="group",
        **recipe.quantize_kwargs("activation"),
        rht_columnwise=recipe.wgrad_rht,
        rowwise=False,
        columnwise=True,
        amax_columnwise=amax_t,
        source_offsets=src,
    )
    return xct, xst, amax_t, poffs


def _dequantized_a(ac, as_, a_amax, scope, offs, recipe) -> torch.Tensor:
    """(M, K) bf16 dequantization of the forward's quantized A."""
    return ops.dequantize(
        ac,
        as_,
        a_amax,
        offsets=offs if scope == "group" else None,
        scope=scope,
        scale_bound=recipe.scale_bound,
        dtype=torch.bfloat16,
    )


def _dequantized_b(wc, ws, w_amax, recipe) -> torch.Tensor:
    """(E, N, K) bf16 dequantization of the forward's quantized grouped weight."""
    qw = QuantizedWeight(
        wc, ws, w_amax, None, None, recipe.scale_bound, recipe.weight_block, recipe.err_mode, True
    )
    return qw.dequantize(torch.bfloat16)


def _grouped_backward_bf16(dy, a, b, offs, need_da, need_db, a_dtype, b_dtype):
    """dA = dY B (M-grouped), dB = dY^T A (K-grouped), BF16 GEMMs on a and b."""
    da = grouped_mm_m_bf16(dy, b, offs).to(a_dtype) if need_da else None  # (M, K)
    db = grouped_mm_k_bf16(dy, a, offs).to(b_dtype) if need_db else None  # (E, N, K)
    return da, db


def _grouped_backward_quantized(
    dy, xt, wt, offs, recipe, sr_offset, need_da, need_db, dtypes, g_amax=None
):
    """Standard NVFP4 gradients (N4) of an M-grouped GEMM: dA = dY x W columnwise, dB = dY
    columnwise x X columnwise. xt = _x_columnwise's tuple, wt = (codes_t, scales_t, amax);
    g_amax: dY's per-group amax when the caller has it."""
    ((da, db),) = _grouped_backward_quantized_many(
        [(dy, wt, sr_offset, need_db, g_amax)], xt, offs, recipe, need_da, dtypes
    )
    return da, db


def _grouped_backward_quantized_many(items, xt, offs, recipe, need_da, dtypes):
    """_grouped_backward_quantized of the M-grouped GEMMs of one X (one, or the gate/up pair):
    items (dy, wt, sr_offset, need_db, g_amax) -> [(dA, dB)]. Two wgrads run as one K-grouped
    pair against X's columnwise operand (its BF16 copy made once, ops.grouped_gemm_k_pair)."""
    das, gts = [], []
    for dy, wt, sr, need_db, ga in items:
        if ga is None:
            ga = ops.amax(dy, scope="group", offsets=offs)  # (E), N4 per-group gradients
        das.append(_dgrad_quantized(dy, ga, wt, offs, recipe, sr, dtypes[0]) if need_da else None)
        gts.append(_dy_columnwise(dy, ga, offs, xt[3], recipe, sr) if need_db else None)
    kw = dict(
        a_scope="group",
        b_scope="group",
        **recipe.gradient_gemm_kwargs(),
        out_dtype=gemm_out_dtype(dtypes[1]),
    )
    if len(gts) == 2 and None not in gts:
        dbs = ops.grouped_gemm_k_pair(*gts[0], *gts[1], *xt[:3], xt[3], **kw)
    else:
        dbs = [None if gt is None else ops.grouped_gemm_k(*gt, *xt[:3], xt[3], **kw) for gt in gts]
    return [(da, None if db is None else db.to(dtypes[1])) for da, db in zip(das, dbs)]  # (E, N, K)


def _dgrad_quantized(dy, g_amax, wt, offs, recipe, sr_offset, dtype):
    """dA = dY x W columnwise (M-grouped, N4): dY quantized rowwise per group; wt = (codes_t,
    scales_t, amax) of W."""
    gc, gs, _, _ = quantize_gradient(dy, g_amax, recipe, sr_offset, scope="group", offsets=offs)
    return ops.grouped_gemm_m(
        gc,
        gs,
        g_amax,
        *wt,
        offs,
        a_scope="group",
        b_scope="group",
        **recipe.gradient_gemm_kwargs(),
        out_dtype=gemm_out_dtype(dtype),
    ).to(dtype)  # (M, K)


def _dy_columnwise(dy, g_amax, offs, poffs, recipe, sr_offset):
    """dY columnwise for the K-grouped wgrad, token groups padded to 16 (N12) as X's (poffs):
    (codes_t (N, P/2), scales_t (N, P/16), amax_t)."""
    dy16, _, src = _token_groups16(dy, offs, recipe)  # same padded offsets as xt's
    g_amax_t = g_amax
    if recipe.wgrad_rht:
        g_amax_t = ops.amax(dy16, scope="group", offsets=poffs, rht_columns=True)
    _, _, gct, gst = quantize_gradient(
        dy16,
        g_amax,
        recipe,
        sr_offset,
        scope="group",
        offsets=poffs,
        rowwise=False,
        columnwise=True,
        amax_columnwise=g_amax_t,
        source_offsets=src,
    )  # (N, P/2)
    return gct, gst, g_amax_t
