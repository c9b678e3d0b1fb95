"""Differentiable NVFP4 4/6 linear and grouped GEMM (docs/numerics.md N2-N12).

f46.linear(x, w, bias, recipe)       y = x W^T + b, x (..., K), w (N, K)
f46.grouped_mm(A, B, offs, bias, r)  y[rows of g] = A_g B[g]^T (+ bias[g]), A (M, K), B (E, N, K)

Forward: activations 1x16 4/6 (per-tensor amax, per-row when row-scaled, per-group for grouped),
weights 4/6 with recipe.weight_block blocks (per-tensor / per-expert amax), one NVFP4 GEMM.
Backward (recipe.backward_override, resolved by Recipe.dense_backward / grouped_backward):
  high_precision  BF16 GEMMs on the saved original operands
  dequantized     BF16 GEMMs on dequantizations of the forward's operands (codes saved only)
  quantized       standard NVFP4 gradients (N4): dgrad = dY (rowwise along N) x W columnwise,
                  wgrad = dY columnwise x X columnwise (tokens along K), optional SR and RHT.
The control flow depends only on shapes and the recipe (never on tensor values), and every
tensor op is an opaque f46 custom op, so torch.compile(fullgraph=True) traces it as is.
Beside them: pad_token_groups / unpad_token_groups (differentiable N12 padding, from
f46.token_groups), autocast_dtype (the dtype nn.Linear computes in) and matmul_shape_problem
(these checks made up front, for the converters).
"""

from __future__ import annotations

from typing import Optional, Union

import torch
import torch.nn.functional as F

from . import ops
from .bf16_grouped_gemm import group_bias_grad
from .grouped_steps import (
    _cast,
    _dequantized_a,
    _dequantized_b,
    _grouped_backward_bf16,
    _grouped_backward_quantized,
    _grouped_gemm,
    _quantize_a_grouped,
    _x_columnwise,
)
from .quantized import (
    QuantizedWeight,
    WeightCache,
    bias_for_gemm,
    cached_weight,
    gemm_out_dtype,
    next_sr_offset,
    quantize_activation,
    quantize_gradient,
    round_up,
)
from .recipe import Recipe
from .token_groups import pad_token_groups, unpad_token_groups

_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


# ---- BF16 reference GEMMs used by the high_precision / dequantized backward ---------------
def _bf16(t: torch.Tensor) -> torch.Tensor:
    return _cast(t, torch.bfloat16)


# ---- dense linear ------------------------------------------------------------------------
def _quantize_x(x2: torch.Tensor, recipe: Recipe, columnwise: bool):
    """x2 (M, K): returns (codes (M, K/2), scales (M, K/16), amax, scope, xt) where xt =
    (codes_t (K, Mp/2), scales_t (K, Mp/16), amax_t) of x padded to Mp = round_up(M, 16) rows
    when columnwise (zero rows add nothing to the wgrad), else None."""
    scope = "row" if recipe.row_scaled_activation else "tensor"
    if not columnwise:
        c, s, amax = quantize_activation(x2, recipe, scope)  # amax (1) | (M)
        return c, s, amax, scope, None
    amax = ops.amax(x2, scope=scope)  # (1): row scaling has no quantized backward
    m = x2.shape[0]
    xp = F.pad(x2, (0, 0, 0, round_up(m, 16) - m))  # (Mp, K)
    amax_t = ops.amax(xp, rht_columns=True) if recipe.wgrad_rht else amax  # N7: after RHT
    c, s, ct, st = ops.quantize(
        xp,
        amax,
        scope="tensor",
        **recipe.quantize_kwargs("activation"),
        rht_columnwise=recipe.wgrad_rht,
        columnwise=True,
        amax_columnwise=amax_t,
    )
    return c[:m], s[:m], amax, scope, (ct, st, amax_t)


def _linear_gemm(xc, xs, x_amax, scope, qw: QuantizedWeight, bias, recipe, dtype):
    y = ops.gemm(
        xc,
        xs,
        x_amax,
        qw.codes,
        qw.scales,
        qw.amax,
        a_scope=scope,
        a_bound=recipe.scale_bound,
        b_bound=qw.scale_bound,
        bias=bias_for_gemm(bias),
        out_dtype=gemm_out_dtype(dtype),
        plan=recipe.gemm_plan,
    )  # (M, N), N10
    return _cast(y, dtype)


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x2, w, bias, recipe, sr_offset, needs, cache=None):
        # `needs` (dx, dw, dbias) is computed by the caller: under torch.compile,
        # ctx.needs_input_grad is not reliable inside a traced autograd.Function.
        mode = recipe.dense_backward()
        m, n = x2.shape[0], w.shape[0]
        need_dx, need_dw = needs[0], needs[1]
        ctx.needs = needs
        quant_bw = mode == "quantized"
        xc, xs, x_amax, scope, xt = _quantize_x(x2, recipe, quant_bw and need_dw)
        qw = cached_weight(w, recipe, quant_bw and need_dx, cache)
        y = _linear_gemm(xc, xs, x_amax, scope, qw, bias, recipe, x2.dtype)
        ctx.recipe, ctx.mode, ctx.sr_offset, ctx.scope = recipe, mode, sr_offset, scope
        ctx.has_bias, ctx.x_dtype, ctx.m = bias is not None, x2.dtype, m
        ctx.bias_dtype = bias.dtype if bias is not None else None
        if mode == "high_precision":
            ctx.save_for_backward(x2, w)
        elif mode == "dequantized":
            ctx.save_for_backward(xc, xs, x_amax, qw.codes, qw.scales, qw.amax)
        else:
            e = x2.new_empty(0, dtype=torch.uint8)
            ct, st, amax_t = xt if xt is not None else (e, e, x_amax)
            wct = qw.codes_t if qw.codes_t is not None else e
            wst = qw.scales_t if qw.scales_t is not None else e
            ctx.save_for_backward(ct, st, amax_t, wct, wst, qw.amax)
        ctx.w_dtype, ctx.n = w.dtype, n
        return y

    @staticmethod
    def backward(ctx, dy):
        recipe, mode = ctx.recipe, ctx.mode
        need_dx, need_dw, need_db = ctx.needs
        dx = dw = db = None
        dy = dy.contiguous()  # (M, N)
        if mode in ("high_precision", "dequantized"):
            if mode == "high_precision":
                x2, w = ctx.saved_tensors
            else:
                xc, xs, x_amax, wc, ws, w_amax = ctx.saved_tensors
                x2 = ops.dequantize(
                    xc,
                    xs,
                    x_amax,
                    scope=ctx.scope,
                    scale_bound=recipe.scale_bound,
                    dtype=torch.bfloat16,
                )
                w = ops.dequantize(
                    wc, ws, w_amax, scale_bound=recipe.scale_bound, dtype=torch.bfloat16
                )
            g = _bf16(dy)
            if need_dx:
                dx = (g @ _bf16(w)).to(ctx.x_dtype)  # (M, K)
            if need_dw:
                dw = (g.t() @ _bf16(x2)).to(ctx.w_dtype)  # (N, K)
        else:
            ct, st, amax_t, wct, wst, w_amax = ctx.saved_tensors
            m = ctx.m
            mp = round_up(m, 16)
            dyp = F.pad(dy, (0, 0, 0, mp - m)) if need_dw else dy  # (Mp, N)
            g_amax = ops.amax(dyp)  # (1); zero padding rows do not change it
            g_amax_t = ops.amax(dyp, rht_columns=True) if (recipe.wgrad_rht and need_dw) else g_amax
            gc, gs, gct, gst = quantize_gradient(
                dyp,
                g_amax,
                recipe,
                ctx.sr_offset,
                rowwise=need_dx,
                columnwise=need_dw,
                amax_columnwise=g_amax_t,
            )
            if need_dx:
                dx = ops.gemm(
                    gc[:m],
                    gs[:m],
                    g_amax,
                    wct,
                    wst,
                    w_amax,
                    **recipe.gradient_gemm_kwargs(),
                    out_dtype=gemm_out_dtype(ctx.x_dtype),
                ).to(ctx.x_dtype)  # (M, K)
            if need_dw:
                dw = ops.gemm(
                    gct,
                    gst,
                    g_amax_t,
                    ct,
                    st,
                    amax_t,
                    **recipe.gradient_gemm_kwargs(),
                    out_dtype=gemm_out_dtype(ctx.w_dtype),
                ).to(ctx.w_dtype)  # (N, K)
        if need_db:
            db = dy.float().sum(0).to(ctx.bias_dtype)
        return dx, dw, db, None, None, None, None


def _needs_grad(*ts) -> tuple:
    on = torch.is_grad_enabled()
    return tuple(bool(on and t is not None and t.requires_grad) for t in ts)


def _check_common(x, w_shape_k, recipe, what):
    if not isinstance(recipe, Recipe):
        raise TypeError(f"recipe must be an f46.Recipe, got {type(recipe).__name__}")
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in _DTYPES:
        raise ValueError(f"{what} dtype must be bfloat16, float16 or float32, got {x.dtype}")
    if x.shape[-1] != w_shape_k:
        raise ValueError(
            f"{what} last dim ({x.shape[-1]}) must equal the weight's in_features ({w_shape_k})"
        )


def autocast_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype nn.Linear computes in for input x: the autocast dtype of x's device type when
    autocast is on there, else x.dtype."""
    dev = x.device.type
    if torch.is_autocast_enabled(dev):
        return torch.get_autocast_dtype(dev)
    return x.dtype


def matmul_shape_problem(
    n: int, k: int, recipe: Recipe, grouped: bool = False, dtype: Optional[torch.dtype] = None
) -> Optional[str]:
    """Why a weight (N, K) (per expert when grouped) of `dtype` cannot be an NVFP4 GEMM operand
    under `recipe`, or None when it can: the shape rules f46.linear and f46.grouped_mm raise
    on, for the converters to ask up front."""
    if dtype is not None and dtype not in _DTYPES:
        return f"weight dtype {dtype} is not bfloat16, float16 or float32"
    if k % 16 != 0:
        return f"in_features K={k} must be a multiple of 16 (NVFP4 1x16 blocks)"
    if recipe.weight_block == 16 and n % 16 != 0:
        return f"out_features N={n} must be a multiple of 16 (16x16 weight blocks)"
    backward = recipe.grouped_backward() if grouped else recipe.dense_backward()
    if backward == "quantized" and n % 16 != 0:
        return f"out_features N={n} must be a multiple of 16 (quantized backward)"
    return None


def linear(
    x: torch.Tensor,
    w: Union[torch.Tensor, QuantizedWeight],
    bias: Optional[torch.Tensor] = None,
    recipe: Recipe = Recipe(),
    weight_cache: Optional[WeightCache] = None,
) -> torch.Tensor:
    """y = x W^T (+ bias) with NVFP4 4/6 operands. x (..., K), w (N, K) or a QuantizedWeight
    (inference: no gradients), bias (N) or None -> (..., N) in x.dtype. weight_cache: reuse
    w's quantization while w is unchanged (f46.WeightCache; bitwise the same)."""
    if isinstance(w, QuantizedWeight):
        return _linear_prequantized(x, w, bias, recipe)
    if not isinstance(w, torch.Tensor) or w.dim() != 2:
        raise ValueError(f"w must be a 2-D (N, K) tensor, got {getattr(w, 'shape', type(w))}")
    _check_common(x, w.shape[1], recipe, "x")
    n = w.shape[0]
    if bias is not None and tuple(bias.shape) != (n,):
        raise ValueError(f"bias must have shape ({n},), got {tuple(bias.shape)}")
    problem = matmul_shape_problem(n, w.shape[1], recipe)
    if problem is not None:
        raise ValueError(f"w: {problem}")
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])
    if x2.shape[0] == 0:  # zero tokens: nothing to quantize
        b = None if bias is None else bias.to(x2.dtype)
        return F.linear(x2, w.to(x2.dtype), b).reshape(*lead, n)  # (0, N), zero gradients
    needs = _needs_grad(x2, w, bias)
    sr = next_sr_offset(recipe)
    y = _Linear.apply(x2.contiguous(), w, bias, recipe, sr, needs, weight_cache)
    return y.reshape(*lead, n)


def _linear_prequantized(x, qw: QuantizedWeight, bias, recipe):
    if qw.grouped:
        raise ValueError("linear needs a dense QuantizedWeight, got a grouped one")
    _check_common(x, qw.in_features, recipe, "x")
    if torch.is_grad_enabled() and x.requires_grad:
        raise ValueError("a prequantized weight is for inference: x must not require grad")
    if (qw.scale_bound, qw.block, qw.err_mode) != (
        recipe.scale_bound,
        recipe.weight_block,
        recipe.err_mode,
    ):
        raise ValueError("QuantizedWeight was made with another recipe than the one passed")
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    n = qw.out_features
    if x2.shape[0] == 0:
        return x2.new_zeros(*lead, n)
    xc, xs, x_amax, scope, _ = _quantize_x(x2, recipe, False)
    return _linear_gemm(xc, xs, x_amax, scope, qw, bias, recipe, x2.dtype).reshape(*lead, n)


# ---- grouped GEMM (N11, N12): the steps in grouped_steps.py ------------------------------
class _GroupedMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, offs, bias, recipe, sr_offset, needs, a_amax=None, cache=None):
        mode = recipe.grouped_backward()
        need_da, need_db = needs[0], needs[1]
        ctx.needs = needs
        quant_bw = mode == "quantized"
        ac, as_, a_amax, scope = _quantize_a_grouped(a, offs, recipe, a_amax)
        qw = cached_weight(b, recipe, quant_bw and need_da, cache)
        y = _grouped_gemm(ac, as_, a_amax, scope, qw, offs, bias, recipe, a.dtype)
        ctx.recipe, ctx.mode, ctx.sr_offset, ctx.scope = recipe, mode, sr_offset, scope
        ctx.a_dtype, ctx.b_dtype, ctx.e = a.dtype, b.dtype, b.shape[0]
        ctx.bias_dtype = bias.dtype if bias is not None else None
        if mode == "high_precision":
            ctx.save_for_backward(a, b, offs)
        elif mode == "dequantized":
            ctx.save_for_backward(ac, as_, a_amax, qw.codes, qw.scales, qw.amax, offs)
        else:
            empty = a.new_empty(0, dtype=torch.uint8)
            xt = _x_columnwise(a, offs, a_amax, recipe) if need_db else (empty, empty, a_amax, offs)
            wct = qw.codes_t if qw.codes_t is not None else empty
            wst = qw.scales_t if qw.scales_t is not None else empty
            ctx.save_for_backward(*xt, wct, wst, qw.amax, offs)
        return y

    @staticmethod
    def backward(ctx, dy):
        recipe, mode = ctx.recipe, ctx.mode
        need_da, need_db, need_bias = ctx.needs
        dbias = None
        dy = dy.contiguous()  # (M, N)
        dtypes = (ctx.a_dtype, ctx.b_dtype)
        if mode == "high_precision":
            a, b, offs = ctx.saved_tensors
            da, db = _grouped_backward_bf16(dy, a, b, offs, need_da, need_db, *dtypes)
        elif mode == "dequantized":
            ac, as_, a_amax, wc, ws, w_amax, offs = ctx.saved_tensors
            a = _dequantized_a(ac, as_, a_amax, ctx.scope, offs, recipe)  # (M, K)
            b = _dequantized_b(wc, ws, w_amax, recipe)  # (E, N, K)
            da, db = _grouped_backward_bf16(dy, a, b, offs, need_da, need_db, *dtypes)
        else:
            saved = ctx.saved_tensors
            offs = saved[7]
            da, db = _grouped_backward_quantized(
                dy, saved[0:4], saved[4:7], offs, recipe, ctx.sr_offset, need_da, need_db, dtypes
            )
        if need_bias:
            offs = ctx.saved_tensors[-1] if mode != "high_precision" else ctx.saved_tensors[2]
            dbias = group_bias_grad(dy, offs, ctx.e).to(ctx.bias_dtype)
        return da, db, None, dbias, None, None, None, None, None


def _check_grouped(a, e, n, k, offs, bias, recipe):
    _check_common(a, k, recipe, "A")
    if a.dim() != 2:
        raise ValueError(f"A must be 2-D (M, K), got shape {tuple(a.shape)}")
    if not isinstance(offs, torch.Tensor) or offs.dtype != torch.int32 or offs.dim() != 1:
        raise ValueError(
            f"offs must be a 1-D int32 tensor, got "
            f"{getattr(offs, 'dtype', type(offs))} of shape {tuple(getattr(offs, 'shape', ()))}"
        )
    if offs.shape[0] != e:
        raise ValueError(f"offs must have one entry per expert (E={e}), got {offs.shape[0]}")
    if offs.device != a.device:
        raise ValueError(f"offs must be on A's device {a.device}, got {offs.device}")
    if bias is not None and tuple(bias.shape) != (e, n):
        raise ValueError(f"bias must have shape ({e}, {n}), got {tuple(bias.shape)}")
    problem = matmul_shape_problem(n, k, recipe, grouped=True)
    if problem is not None:
        raise ValueError(f"B: {problem}")


def grouped_mm(
    a: torch.Tensor,
    b: Union[torch.Tensor, QuantizedWeight],
    offs: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    recipe: Recipe = Recipe(),
    weight_cache: Optional[WeightCache] = None,
) -> torch.Tensor:
    """M-grouped NVFP4 GEMM: A (M, K) rows split by offs (E) int32 cumulative group ends,
    B (E, N, K) (or a grouped QuantizedWeight, inference), bias (E, N) -> (M, N) in A.dtype.
    Rows past offs[E-1] are zero. With recipe.pad_token_groups the groups are padded (N12)
    before quantization and the padding sliced away afterwards. weight_cache: reuse B's
    quantization while B is unchanged (f46.WeightCache; bitwise the same)."""
    if isinstance(b, QuantizedWeight):
        if not b.grouped:
            raise ValueError("grouped_mm needs a grouped QuantizedWeight, got a dense one")
        e, n, k = b.codes.shape[0], b.out_features, b.in_features
    else:
        if not isinstance(b, torch.Tensor) or b.dim() != 3:
            raise ValueError(f"B must be a 3-D (E, N, K) tensor, got {getattr(b, 'shape', b)}")
        e, n, k = b.shape
    _check_grouped(a, e, n, k, offs, bias, recipe)
    m = a.shape[0]
    if isinstance(b, QuantizedWeight):
        if torch.is_grad_enabled() and a.requires_grad:
            raise ValueError("a prequantized weight is for inference: A must not require grad")
        if m == 0:
            return a.new_zeros(0, n)
        ap, poffs = a, offs
        if recipe.pad_token_groups is not None:
            ap, poffs = ops.pad_token_groups(a.contiguous(), offs, recipe.pad_token_groups)
        ac, as_, a_amax, scope = _quantize_a_grouped(ap.contiguous(), poffs, recipe)
        y = _grouped_gemm(ac, as_, a_amax, scope, b, poffs, bias, recipe, a.dtype)
        if recipe.pad_token_groups is not None:
            y = ops.unpad_token_groups(y, offs, poffs, m)
        return y
    if m == 0:  # zero tokens: an empty result whose gradients are zero
        y = a.new_zeros(0, n) + (b.sum() * 0).to(a.dtype) + (a.sum() * 0)
        return y if bias is None else y + (bias.sum() * 0).to(a.dtype)
    sr = next_sr_offset(recipe)
    needs = _needs_grad(a, b, bias)
    if recipe.pad_token_groups is None:
        a = a.contiguous()
        return _GroupedMM.apply(a, b, offs, bias, recipe, sr, needs, None, weight_cache)
    align = recipe.pad_token_groups
    ap, poffs = pad_token_groups(a.contiguous(), offs, align)
    yp = _GroupedMM.apply(ap, b, poffs, bias, recipe, sr, needs, None, weight_cache)
    return unpad_token_groups(yp, offs, poffs, m, align)


def grouped_mm_amax(
    a: torch.Tensor,
    b: torch.Tensor,
    offs: torch.Tensor,
    a_amax: torch.Tensor,
    recipe: Recipe,
    weight_cache: Optional[WeightCache] = None,
) -> torch.Tensor:
    """f46.grouped_mm(a, b, offs, recipe=recipe) with A's per-group N9 amax (E) given (as
    ops.swiglu returns it), bitwise: the amax pass over A is skipped. B (E, N, K) a tensor, no
    bias, no token-group padding, group-scope activations (not row-scaled), M > 0."""
    if not isinstance(b, torch.Tensor) or b.dim() != 3:
        raise ValueError(f"B must be a 3-D (E, N, K) tensor, got {getattr(b, 'shape', b)}")
    if recipe.pad_token_groups is not None or recipe.row_scaled_activation:
        raise ValueError("grouped_mm_amax needs group-scope activations without token padding")
    e, n, k = b.shape
    _check_grouped(a, e, n, k, offs, None, recipe)
    if a.shape[0] == 0:
        raise ValueError("grouped_mm_amax needs M > 0 tokens")
    if tuple(a_amax.shape) != (e,) or a_amax.dtype != torch.float32:
        raise ValueError(f"a_amax must be ({e},) float32, got {a_amax.dtype} {tuple(a_amax.shape)}")
    sr = next_sr_offset(recipe)
    needs = _needs_grad(a, b, None)
    return _GroupedMM.apply(a.contiguous(), b, offs, None, recipe, sr, needs, a_amax, weight_cache)
