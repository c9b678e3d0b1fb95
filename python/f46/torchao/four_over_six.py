"""torchao's NVFP4 four-over-six dense API (torchao.prototype.moe_training.nvfp4_training.
four_over_six) over f46's kernels.

Names, signatures, defaults, layouts, returns and exception types are torchao's:
    four_over_six_global_encode_scale(global_amax, e4m3_scale_bound=256) -> S_enc (N2.1)
    four_over_six_quantize(x (R, C), global_amax () | (R,), *, block="1x16", err_mode="mae",
                           e4m3_scale_bound=256) -> (codes (R, C/2) uint8,
                                                     scales (R, C/16) float8_e4m3fn)
    nvfp4_dequantize(codes, scales, global_amax, *, e4m3_scale_bound=256,
                     out_dtype=torch.bfloat16) -> (R, C)      (four_over_six_dequantize: alias)
    four_over_six_mm: autograd.Function, .apply(input_hp (..., K), weight_hp (N, K), bias (N,),
                      err_mode, e4m3_scale_bound, row_scaled_activation, backward_override,
                      weight_block) -> input_hp @ weight_hp.T (+ bias), bfloat16
    four_over_six_linear = four_over_six_mm.apply
    NVFP4FourOverSixLinear(nn.Linear) with torchao's constructor and from_linear.
The weight is (N, K) as in nn.Linear (never transposed). Bad arguments raise ValueError.

The numbers are f46's (docs/numerics.md), which are the TransformerEngine 4over6 arithmetic
torchao transcribes: codes and scales are bitwise torchao's. The GEMMs are f46's NVFP4 GEMMs
(CPU reference, Hopper kernels); torchao's own run only on SM100.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from .. import ops
from ..functional import _linear_gemm, _quantize_x
from ..quantized import quantize_gradient, quantize_weight, round_up
from ._common import check_backward_override, check_block, check_bound, check_err_mode, knob_recipe

BF16 = torch.bfloat16
FP4_E2M1_MAX = 6.0
FP8_E4M3_MAX = 448.0
_FP32_MAX = torch.finfo(torch.float32).max

__all__ = [
    "four_over_six_global_encode_scale",
    "four_over_six_quantize",
    "nvfp4_dequantize",
    "four_over_six_dequantize",
    "four_over_six_mm",
    "four_over_six_linear",
    "NVFP4FourOverSixLinear",
]


# ---- argument checks (torchao's rules, ValueError): f46.torchao._common -------------------
def _amax_scope(global_amax: torch.Tensor, rows: int) -> str:
    """'row' for a (rows,) vector, 'tensor' for one element (torchao's rule), else ValueError."""
    if not isinstance(global_amax, torch.Tensor):
        raise ValueError(f"global_amax must be a torch.Tensor, got {type(global_amax).__name__}")
    if global_amax.dim() == 1 and global_amax.numel() == rows:
        return "row"
    if global_amax.numel() != 1:
        raise ValueError(
            f"global_amax must be a scalar or a ({rows},) row vector, "
            f"got shape {tuple(global_amax.shape)}"
        )
    return "tensor"


def _f46_amax(global_amax: torch.Tensor, scope: str) -> torch.Tensor:
    return global_amax.to(torch.float32).reshape(-1 if scope == "row" else 1).contiguous()


def _f46_input(x: torch.Tensor) -> torch.Tensor:
    """f46's ops read bf16 / fp16 / fp32; torchao reads any dtype through x.float()."""
    if x.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        x = x.float()
    return x.contiguous()


# ---- quantize / dequantize -----------------------------------------------------------------
def four_over_six_global_encode_scale(
    global_amax: torch.Tensor, e4m3_scale_bound: int = 256
) -> torch.Tensor:
    """S_enc = bound * 6 / amax in FP32 (N2.1), capped at FLT_MAX; amax 0 or an underflow to 0
    gives 1. global_amax: a scalar or a 1-D per-row vector; returns its shape, float32."""
    amax = global_amax.to(torch.float32)
    num = torch.full_like(amax, float(e4m3_scale_bound) * FP4_E2M1_MAX)
    s = (num / amax).clamp(max=_FP32_MAX)
    return torch.where((amax == 0.0) | (s == 0.0), torch.ones_like(s), s)


def four_over_six_quantize(
    x: torch.Tensor,
    global_amax: torch.Tensor,
    *,
    block: str = "1x16",
    err_mode: str = "mae",
    e4m3_scale_bound: int = 256,
) -> tuple[torch.Tensor, torch.Tensor]:
    """4/6 NVFP4 quantization of x (R, C), C % 16 == 0 (R % 16 == 0 for "16x16").

    global_amax: the scalar FP32 amax of x, or a (R,) per-row amax vector ("1x16" only).
    Returns (codes (R, C/2) uint8, element 2i in the low nibble; scales (R, C/16)
    float8_e4m3fn), bitwise torchao's (and TransformerEngine's).
    """
    blk = check_block(block)
    check_err_mode(err_mode)
    check_bound(e4m3_scale_bound)
    if x.dim() != 2:
        raise ValueError(f"x must be 2D, got {x.dim()}D")
    rows, cols = x.shape
    if cols % 16 != 0:
        raise ValueError(f"C must be divisible by 16, got C={cols}")
    if blk == 16 and rows % 16 != 0:
        raise ValueError(f"16x16 blocks require R divisible by 16, got R={rows}")
    scope = _amax_scope(global_amax, rows)
    if scope == "row" and blk != 1:
        raise ValueError("row-scaled four-over-six supports 1x16 blocks only")
    codes, scales, _, _ = ops.quantize(
        _f46_input(x),
        _f46_amax(global_amax, scope),
        scope=scope,
        rule=err_mode,
        scale_bound=float(e4m3_scale_bound),
        block=blk,
    )
    return codes, scales.view(torch.float8_e4m3fn)


def nvfp4_dequantize(
    codes: torch.Tensor,
    scales: torch.Tensor,
    global_amax: torch.Tensor,
    *,
    e4m3_scale_bound: int = 256,
    out_dtype: torch.dtype = torch.bfloat16,
) -> torch.Tensor:
    """Standard NVFP4 decode (N8): codes (R, C/2) uint8, scales (R, C/16) float8_e4m3fn, the
    scalar or (R,) amax they were made with -> (R, C) in out_dtype."""
    check_bound(e4m3_scale_bound)
    if codes.dim() != 2:
        raise ValueError(f"codes must be 2-D (R, C/2), got shape {tuple(codes.shape)}")
    rows, cols = codes.shape[0], codes.shape[1] * 2
    if tuple(scales.shape) != (rows, cols // 16):
        raise ValueError(
            f"scales must have shape ({rows}, {cols // 16}), got {tuple(scales.shape)}"
        )
    scope = _amax_scope(global_amax, rows)
    f46_dtype = out_dtype if out_dtype in (torch.bfloat16, torch.float16) else torch.float32
    y = ops.dequantize(
        codes.view(torch.uint8).contiguous(),
        scales.view(torch.uint8).contiguous(),
        _f46_amax(global_amax, scope),
        scope=scope,
        scale_bound=float(e4m3_scale_bound),
        dtype=f46_dtype,
    )
    return y if y.dtype == out_dtype else y.to(out_dtype)


# An earlier revision of torchao's module names the decode four_over_six_dequantize.
four_over_six_dequantize = nvfp4_dequantize


def _global_decode_scale(amax: torch.Tensor, e4m3_scale_bound: int) -> torch.Tensor:
    """GEMM-side global factor amax / (bound * 6) (N10)."""
    return amax.to(torch.float32) / (float(e4m3_scale_bound) * FP4_E2M1_MAX)


def _amax_for_factor(g: torch.Tensor) -> torch.Tensor:
    """(1) float32 amax whose f46 GEMM factor amax / (6 * 256) (an FP32 division, N10) is
    exactly g: g * 1536 or one of its FP32 neighbours."""
    g = g.to(torch.float32).reshape(1)
    c = g * 1536.0
    up, down = torch.nextafter(c, c + float("inf")), torch.nextafter(c, c - float("inf"))
    cands = torch.cat(
        [
            c,
            up,
            down,
            torch.nextafter(up, c + float("inf")),
            torch.nextafter(down, c - float("inf")),
        ]
    )
    ok = (cands / torch.full_like(cands, 1536.0)) == g
    return cands[torch.argmax(ok.to(torch.uint8))].reshape(1)


def _scaled_mm_nvfp4(a_codes, a_scales, a_global, b_codes_t, b_scales, b_global, out_dtype):
    """torchao's private block-scaled GEMM helper, as an f46 GEMM: a_codes (M, K/2),
    b_codes_t the (K/2, N) transposed view of (N, K/2) codes, linear (rows, K/16) E4M3 scales,
    scalar global decode factors (amax / (6 * bound))."""
    return ops.gemm(
        a_codes.contiguous(),
        a_scales.view(torch.uint8).contiguous(),
        _amax_for_factor(a_global),
        b_codes_t.t().contiguous(),
        b_scales.view(torch.uint8).contiguous(),
        _amax_for_factor(b_global),
        a_bound=256.0,
        b_bound=256.0,
        out_dtype=out_dtype,
    )


# ---- torchao's private reference helpers (pure torch, docs/numerics.md N3) -----------------
# torchao's tests use these as their oracle; here they are an independent torch emulation of
# the contract, never on f46's compute path.
_E2M1_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def _fp4_rtne(scaled: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """E2M1 round-to-nearest-even of clamp(scaled, -6, 6) (N3.4): unpacked codes
    (sign << 3 | magnitude index) uint8 and their exact float32 values. A negative value
    that rounds to zero keeps its sign (code 0x8)."""
    v = scaled.to(torch.float32).clamp(-FP4_E2M1_MAX, FP4_E2M1_MAX)
    a = v.abs()
    # midpoints between grid values; a tie goes to the even code (0.25->0, 0.75->1, 1.25->1,
    # 1.75->2, 2.5->2, 3.5->4, 5->4)
    idx = (
        (a > 0.25).int()
        + (a >= 0.75).int()
        + (a > 1.25).int()
        + (a >= 1.75).int()
        + (a > 2.5).int()
        + (a >= 3.5).int()
        + (a > 5.0).int()
    )
    neg = torch.signbit(v)
    codes = (idx | (neg.int() << 3)).to(torch.uint8)
    mag = torch.tensor(_E2M1_GRID, dtype=torch.float32, device=v.device)[idx.long()]
    return codes, torch.where(neg, -mag, mag)


def _candidate_error(values, scale_fp8, xf, global_amax, err_mode, e4m3_scale_bound):
    """Error of one 4/6 candidate per 1x16 group (N3.5): values / xf (rows, groups, 16),
    scale_fp8 (rows, groups, 1), global_amax broadcastable to (rows, groups). Each element
    val = ((q * scale) * amax) / (6 * bound), FP32 adds in element order (|d| or d*d)."""
    scale = scale_fp8.to(torch.float32)[..., 0]
    denom = torch.full((), FP4_E2M1_MAX * float(e4m3_scale_bound), device=xf.device)
    err = torch.zeros_like(xf[..., 0], dtype=torch.float32)
    for i in range(16):
        d = ((values[..., i] * scale) * global_amax) / denom - xf[..., i]
        err = err + (d * d if err_mode == "mse" else d.abs())
    return err


def _cutedsl_quantize_eligible(x: torch.Tensor) -> bool:
    """torchao's CuTe DSL (SM100) quantize gate; f46 has one quantize path, so never."""
    return False


# ---- the differentiable dense op -----------------------------------------------------------
class four_over_six_mm(torch.autograd.Function):
    """NVFP4 four-over-six matmul: input_hp (..., K) @ weight_hp (N, K).T (+ bias (N,)).

    Forward: 1x16 4/6 activations (per-tensor amax, per-row when row_scaled_activation), 4/6
    weights with weight_block blocks, one f46 NVFP4 GEMM; bias added to the bf16 output.
    Backward by backward_override (None: "quantized", or "high_precision" when row-scaled):
    "quantized" standard NVFP4 gradients (N4) against the saved columnwise operands,
    "high_precision" / "dequantized" bf16 GEMMs on the saved / dequantized operands.
    Inputs are cast to bfloat16; the output is bfloat16. Requires M, K, N % 128 == 0.
    """

    @staticmethod
    def forward(
        ctx,
        input_hp: torch.Tensor,
        weight_hp: torch.Tensor,
        bias: Optional[torch.Tensor],
        err_mode: str = "mae",
        e4m3_scale_bound: int = 256,
        row_scaled_activation: bool = False,
        backward_override: Optional[str] = None,
        weight_block: str = "16x16",
    ):
        if weight_hp.dim() != 2:
            raise ValueError(f"weight_hp must be 2-D (N, K), got shape {tuple(weight_hp.shape)}")
        m, k, n = input_hp.shape[:-1].numel(), input_hp.shape[-1], weight_hp.shape[0]
        if weight_hp.shape[1] != k:
            raise ValueError(
                f"weight_hp must be (N, K) = (out_features, in_features) with K={k} "
                f"(the last dim of input_hp), got shape {tuple(weight_hp.shape)}"
            )
        if m % 128 != 0 or k % 128 != 0 or n % 128 != 0:
            raise ValueError(
                f"four_over_six_mm requires M, K, N all divisible by 128; got M={m}, K={k}, N={n}"
            )
        if backward_override is None:
            backward_override = "high_precision" if row_scaled_activation else "quantized"
        check_backward_override(
            backward_override, "'quantized', 'high_precision', or 'dequantized'"
        )
        if backward_override == "quantized" and row_scaled_activation:
            raise ValueError(
                "row-scaled four-over-six has no quantized backward; use 'high_precision' or "
                "'dequantized'"
            )
        check_block(weight_block)
        check_err_mode(err_mode)
        check_bound(e4m3_scale_bound)
        if bias is not None and tuple(bias.shape) != (n,):
            raise ValueError(f"bias must have shape ({n},), got {tuple(bias.shape)}")
        recipe = knob_recipe(
            err_mode, e4m3_scale_bound, weight_block, row_scaled_activation, backward_override
        )
        x2 = input_hp.to(torch.bfloat16).reshape(-1, k).contiguous()
        w = weight_hp.to(torch.bfloat16)
        quant_bw = backward_override == "quantized"
        # Both columnwise operands are made whenever the backward is quantized (which inputs
        # need gradients is not known reliably inside a traced autograd.Function).
        xc, xs, x_amax, scope, xt = _quantize_x(x2, recipe, quant_bw)
        qw = quantize_weight(w, recipe, columnwise=quant_bw)
        y = _linear_gemm(xc, xs, x_amax, scope, qw, None, recipe, torch.bfloat16)  # (M, N)
        if backward_override == "high_precision":
            ctx.save_for_backward(x2, w)
        elif backward_override == "dequantized":
            ctx.save_for_backward(xc, xs, x_amax, qw.codes, qw.scales, qw.amax)
        else:
            ct, st, amax_t = xt
            ctx.save_for_backward(ct, st, amax_t, qw.codes_t, qw.scales_t, qw.amax)
        ctx.recipe, ctx.mode, ctx.scope, ctx.m = recipe, backward_override, scope, m
        y = y.reshape(*input_hp.shape[:-1], n)
        if bias is not None:
            y = y + bias.to(y.dtype)
        ctx.input_shape, ctx.has_bias = input_hp.shape, bias is not None
        return y

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        g = grad_output.to(torch.bfloat16).reshape(-1, grad_output.shape[-1]).contiguous()
        recipe, bound = ctx.recipe, ctx.recipe.scale_bound
        if ctx.mode == "high_precision":
            x2, w = ctx.saved_tensors
            dx, dw = g @ w, g.t() @ x2  # bf16 GEMMs on the saved operands
        elif ctx.mode == "dequantized":
            xc, xs, x_amax, wc, ws, w_amax = ctx.saved_tensors
            xd = ops.dequantize(xc, xs, x_amax, scope=ctx.scope, scale_bound=bound, dtype=BF16)
            wd = ops.dequantize(wc, ws, w_amax, scale_bound=bound, dtype=BF16)
            dx, dw = g @ wd, g.t() @ xd
        else:  # standard NVFP4 gradients (N4) against the columnwise operands
            ct, st, amax_t, wct, wst, w_amax = ctx.saved_tensors
            m = ctx.m
            gp = F.pad(g, (0, 0, 0, round_up(m, 16) - m))  # (Mp, N): whole 16-token blocks
            g_amax = ops.amax(gp)
            gc, gs, gct, gst = quantize_gradient(gp, g_amax, recipe, 0, columnwise=True)
            kw = dict(**recipe.gradient_gemm_kwargs(), out_dtype=BF16)
            dx = ops.gemm(gc[:m], gs[:m], g_amax, wct, wst, w_amax, **kw)  # (M, K)
            dw = ops.gemm(gct, gst, g_amax, ct, st, amax_t, **kw)  # (N, K)
        dx = dx.reshape(ctx.input_shape)
        db = None
        if ctx.has_bias:
            db = grad_output.sum(dim=tuple(range(grad_output.dim() - 1)))
        return dx, dw, db, None, None, None, None, None


four_over_six_linear = four_over_six_mm.apply


class NVFP4FourOverSixLinear(nn.Linear):
    """nn.Linear whose matmuls are NVFP4 four-over-six (four_over_six_linear). bias defaults
    to False, as in torchao."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = False,
        err_mode: str = "mae",
        e4m3_scale_bound: int = 256,
        row_scaled_activation: bool = False,
        backward_override: Optional[str] = None,
        weight_block: str = "16x16",
        device=None,
        dtype=None,
    ):
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        self.err_mode = err_mode
        self.e4m3_scale_bound = e4m3_scale_bound
        self.row_scaled_activation = row_scaled_activation
        self.backward_override = backward_override
        self.weight_block = weight_block

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return four_over_six_linear(
            x,
            self.weight,
            self.bias,
            self.err_mode,
            self.e4m3_scale_bound,
            self.row_scaled_activation,
            self.backward_override,
            self.weight_block,
        )

    @classmethod
    def from_linear(
        cls,
        mod: nn.Linear,
        err_mode: str = "mae",
        e4m3_scale_bound: int = 256,
        row_scaled_activation: bool = False,
        backward_override: Optional[str] = None,
        weight_block: str = "16x16",
    ) -> "NVFP4FourOverSixLinear":
        """A module sharing mod's parameters (the same Parameter objects)."""
        new = cls(
            mod.in_features,
            mod.out_features,
            mod.bias is not None,
            err_mode=err_mode,
            e4m3_scale_bound=e4m3_scale_bound,
            row_scaled_activation=row_scaled_activation,
            backward_override=backward_override,
            weight_block=weight_block,
            device="meta",
            dtype=mod.weight.dtype,
        )
        new.weight = mod.weight
        if mod.bias is not None:
            new.bias = mod.bias
        return new
