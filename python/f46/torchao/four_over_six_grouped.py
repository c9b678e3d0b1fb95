"""torchao's NVFP4 four-over-six grouped (routed-expert) API (torchao.prototype.moe_training.
nvfp4_training.four_over_six_grouped) over f46's grouped kernels.

    four_over_six_grouped_mm(A (M, K), B (E, N, K), offs (E) int32, bias (N,) = None, *,
                             err_mode, e4m3_scale_bound, row_scaled_activation, weight_block,
                             backward_override, pad_token_groups_for_grouped_mm)
        -> (M, N) bfloat16, rows of group g = A_g @ B[g].T (+ bias)
    four_over_six_quantize_expert_weights(weight (E, N, K), *, ...) -> FourOverSixQuantizedExperts
    four_over_six_grouped_mm_prequantized(A, quantized_weight, offs, *, row_scaled_activation)

B is (E, N, K), the layout of stacked nn.Linear weights, as in torchao (torch._grouped_mm's
(E, K, N) operand is B.transpose(-2, -1)); a B whose last dim is not A's K raises ValueError.
Activations take one amax per token group (per row when row-scaled), weights one per expert.

Where f46 does more, it accepts more: backward_override="quantized" (standard NVFP4 gradients
with per-group amaxes, M-grouped dgrad and K-grouped wgrad GEMMs), token groups of any size
without padding (padding changes no number: every row quantizes alone against its group's
amax), rows past offs[-1] (returned as zeros), and no SM100.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import torch

from .. import functional as f46_functional
from ..quantized import QuantizedWeight, quantize_weight
from ._common import (
    check_backward_override,
    check_block,
    conditional_nostrict_trace,
    knob_recipe,
    to_blocked,
)
from .four_over_six import _global_decode_scale

_ALIGNMENT = 128

__all__ = [
    "FourOverSixQuantizedExperts",
    "four_over_six_grouped_mm",
    "four_over_six_grouped_mm_prequantized",
    "four_over_six_quantize_expert_weights",
]


def _check_offs(offs, num_experts: int) -> None:
    if not isinstance(offs, torch.Tensor) or offs.ndim != 1 or offs.dtype != torch.int32:
        raise ValueError("offs must be a 1D int32 tensor")
    if not offs.is_contiguous():
        raise ValueError("offs must be contiguous")
    if offs.numel() != num_experts:
        raise ValueError("offs must contain one group-end offset per expert")


def _check_kn(K: int, N: int) -> None:
    if K % _ALIGNMENT != 0 or N % _ALIGNMENT != 0:
        raise ValueError(f"K and N must be divisible by {_ALIGNMENT}; got K={K}, N={N}")


@conditional_nostrict_trace
def four_over_six_grouped_mm(
    A: torch.Tensor,
    B: torch.Tensor,
    offs: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    *,
    err_mode: str = "mae",
    e4m3_scale_bound: int = 256,
    row_scaled_activation: bool = False,
    weight_block: str = "16x16",
    backward_override: Optional[str] = None,
    pad_token_groups_for_grouped_mm: bool = False,
) -> torch.Tensor:
    """Differentiable NVFP4 four-over-six grouped GEMM: A (M, K), B (E, N, K), offs (E) int32
    cumulative group ends -> (M, N) bfloat16. backward_override None means "high_precision"."""
    if not isinstance(B, torch.Tensor) or B.dim() != 3:
        raise ValueError(f"B must be 3-D (E, N, K), got shape {tuple(getattr(B, 'shape', ()))}")
    if A.dim() != 2:
        raise ValueError(f"A must be 2-D (M, K), got shape {tuple(A.shape)}")
    num_experts, N, K = B.shape
    _check_offs(offs, num_experts)
    if backward_override is None:
        backward_override = "high_precision"
    check_backward_override(
        backward_override, "'high_precision', 'dequantized' or (f46) 'quantized'"
    )
    if A.shape[1] != K:
        raise ValueError(
            f"B must be (E, N, K) with K={A.shape[1]} (A's last dim), got shape {tuple(B.shape)}"
            " (torch._grouped_mm's (E, K, N) operand is B.transpose(-2, -1))"
        )
    _check_kn(K, N)
    if row_scaled_activation and backward_override == "quantized":
        raise ValueError(
            "row-scaled four-over-six has no quantized backward; use 'high_precision' or "
            "'dequantized'"
        )
    recipe = knob_recipe(
        err_mode, e4m3_scale_bound, weight_block, row_scaled_activation, backward_override
    )
    # pad_token_groups_for_grouped_mm: f46 takes groups of any size, and the zero padding
    # torchao adds changes no output or gradient, so there is nothing to pad.
    out = f46_functional.grouped_mm(
        A.to(torch.bfloat16).contiguous(), B.to(torch.bfloat16), offs, None, recipe
    )
    if bias is not None:
        out = out + bias.to(out.dtype)
    return out


class FourOverSixQuantizedExperts(NamedTuple):
    """Stacked expert weights quantized once (inference): codes (E, N, K/2) uint8, scales
    (E, N, K/16) float8_e4m3fn, blocked_scales (E, round_up(N,128) * round_up(K/16,4)) the
    128x4-swizzled scales, amax (E) float32, global_scale (E) = amax / (6 * bound), and the
    knobs activations must be quantized with."""

    codes: torch.Tensor
    scales: torch.Tensor
    blocked_scales: torch.Tensor
    amax: torch.Tensor
    global_scale: torch.Tensor
    err_mode: str
    e4m3_scale_bound: int
    weight_block: str


def _blocked_expert_scales(w_scales: torch.Tensor) -> torch.Tensor:
    """(E, N, K/16) scales -> (E, -1) 128x4-swizzled (one to_blocked over the row-flattened
    stack: equal to the per-expert stack while N % 128 == 0)."""
    e = w_scales.shape[0]
    return to_blocked(w_scales.reshape(-1, w_scales.shape[-1])).view(e, -1)


def _quantize_expert_weights(weight, weight_amax, weight_block, err_mode, e4m3_scale_bound):
    """Per-expert 4/6 quantization of a stacked (E, N, K) weight -> (codes, float8 scales)."""
    r = knob_recipe(err_mode, e4m3_scale_bound, weight_block, False, None)
    qw = quantize_weight(weight.to(torch.bfloat16).contiguous(), r)
    return qw.codes, qw.scales.view(torch.float8_e4m3fn)


def four_over_six_quantize_expert_weights(
    weight: torch.Tensor,
    *,
    err_mode: str = "mae",
    e4m3_scale_bound: int = 256,
    weight_block: str = "16x16",
) -> FourOverSixQuantizedExperts:
    """Quantizes a stacked (E, N, K) expert weight once, exactly as the grouped forward does
    per call, for reuse by four_over_six_grouped_mm_prequantized."""
    if weight.dim() != 3:
        raise ValueError(f"weight must be 3-D (E, N, K), got shape {tuple(weight.shape)}")
    with torch.no_grad():
        _, N, K = weight.shape
        _check_kn(K, N)
        r = knob_recipe(err_mode, e4m3_scale_bound, weight_block, False, None)
        qw = quantize_weight(weight.detach().to(torch.bfloat16).contiguous(), r)
        scales = qw.scales.view(torch.float8_e4m3fn)
        return FourOverSixQuantizedExperts(
            codes=qw.codes,
            scales=scales,
            blocked_scales=_blocked_expert_scales(scales),
            amax=qw.amax,
            global_scale=_global_decode_scale(qw.amax, e4m3_scale_bound),
            err_mode=err_mode,
            e4m3_scale_bound=e4m3_scale_bound,
            weight_block=weight_block,
        )


def four_over_six_grouped_mm_prequantized(
    A: torch.Tensor,
    quantized_weight: FourOverSixQuantizedExperts,
    offs: torch.Tensor,
    *,
    row_scaled_activation: bool = False,
) -> torch.Tensor:
    """Inference grouped forward on prequantized expert weights, bitwise equal to
    four_over_six_grouped_mm with the knobs recorded in quantized_weight. Call it under
    torch.no_grad() (RuntimeError otherwise). A may be over-allocated past offs[-1]: those
    rows are kept out of every amax and come back as zeros."""
    if torch.is_grad_enabled():
        raise RuntimeError(
            "four_over_six_grouped_mm_prequantized is inference-only; call it under "
            "torch.no_grad() (cached quantized weights have no weight gradient)"
        )
    num_experts = quantized_weight.codes.shape[0]
    _check_offs(offs, num_experts)
    if A.dim() != 2:
        raise ValueError(f"A must be 2-D (M, K), got shape {tuple(A.shape)}")
    K = A.shape[1]
    if K != 2 * quantized_weight.codes.shape[-1]:
        raise ValueError(
            f"A and the quantized weight disagree on K: A has K={K}, the weight codes pack "
            f"K={2 * quantized_weight.codes.shape[-1]}"
        )
    qw_block = check_block(quantized_weight.weight_block)
    r = knob_recipe(
        quantized_weight.err_mode,
        quantized_weight.e4m3_scale_bound,
        quantized_weight.weight_block,
        row_scaled_activation,
        None,
    )
    qw = QuantizedWeight(
        quantized_weight.codes.contiguous(),
        quantized_weight.scales.view(torch.uint8).contiguous(),
        quantized_weight.amax.to(torch.float32).contiguous(),
        None,
        None,
        float(quantized_weight.e4m3_scale_bound),
        qw_block,
        quantized_weight.err_mode,
        True,
    )
    return f46_functional.grouped_mm(A.to(torch.bfloat16).contiguous(), qw, offs, None, r)
