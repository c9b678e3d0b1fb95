"""Thin keyword wrappers over the f46 custom ops (torch.ops.f46.*).

Every op has a CPU kernel (the exact reference), a CUDA kernel when f46 was built with CUDA,
and a Meta kernel (shapes only; torch.compile). Numbers follow docs/numerics.md (N1..N12);
the wrappers add defaults and nothing else. Errors of the core (bad dtype, shape, option)
surface as RuntimeError with a message naming the argument.

Layouts: codes (R, C/2) uint8, two E2M1 codes per byte (element 2i low nibble, N1.2);
scales (R, C/16) uint8 E4M3 bytes, linear row-major (N1.3); amax float32 (1) per tensor,
(R) per row, (E) per group; offsets (E) int32 cumulative group ends over rows.

GEMM tuning overrides (benchmarks, tests; the same bits whatever is chosen; the CPU ignores
them): plan "auto" (by shape), "a" (dequantize both operands to BF16, CUTLASS grouped GEMM),
"b" (one fused 4-bit kernel, where it applies) or "c" (A dequantized to BF16, the weight read
4-bit by a register-sourced WGMMA kernel, where it applies); max_swizzle 0 (default), 1, 2, 4
or 8 and raster "m" or "n" of the CUTLASS group scheduler.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from . import _loader

_loader.load()
_ops = torch.ops.f46

Tensor = torch.Tensor


def quantize(
    x: Tensor,
    amax: Tensor,
    *,
    offsets: Optional[Tensor] = None,
    scope: str = "tensor",
    rule: str = "mae",
    scale_bound: float = 256.0,
    block: int = 1,
    gradient: bool = False,
    stochastic: bool = False,
    seed: int = 0,
    offset: int = 0,
    rht_rowwise: bool = False,
    rht_columnwise: bool = False,
    rowwise: bool = True,
    columnwise: bool = False,
    amax_columnwise: Optional[Tensor] = None,
    source_offsets: Optional[Tensor] = None,
) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """NVFP4 4/6 quantization of x (R, C) bf16/fp16/fp32 (N2, N3; gradients N4).

    amax: float32 (1) for scope "tensor", (R) for "row", (E) for "group" with offsets (E).
    rule: "mae" | "mse" | "abs_max" | "all6" | "all4"; block: 1 (1x16) or 16 (16x16, N1.4).
    stochastic: stochastic rounding (N6) keyed by (seed, offset + element index).
    rht_rowwise / rht_columnwise: random Hadamard transform of that output (N7).
    amax_columnwise: amax for the columnwise output (e.g. after RHT), default amax.
    source_offsets: virtual token-group padding (N12; scope "group", columnwise only, 1x16, no
    RHT): x holds M unpadded rows split by source_offsets (E), `offsets` are the padded ends
    (padded_offsets(source_offsets, 16)), and the result is bitwise that of
    pad_token_groups(x, source_offsets, 16) quantized, with R = padded_rows(M, E, 16).
    Returns (codes (R, C/2), scales (R, C/16), codes_t (C, R/2), scales_t (C, R/16)), uint8;
    outputs not asked for (rowwise / columnwise False) are empty (0,) tensors.
    """
    return _ops.quantize(
        x,
        amax,
        offsets,
        scope,
        rule,
        float(scale_bound),
        int(block),
        gradient,
        stochastic,
        int(seed),
        int(offset),
        rht_rowwise,
        rht_columnwise,
        rowwise,
        columnwise,
        amax_columnwise,
        source_offsets,
    )


def quantize_experts(
    w: Tensor,
    amax: Tensor,
    *,
    rule: str = "mae",
    scale_bound: float = 256.0,
    block: int = 16,
    columnwise: bool = False,
) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """Grouped weights w (E, N, K): expert g quantized with amax[g] as its per-tensor amax (N2;
    bitwise the group scope with offsets g*N), outputs written in place per expert.

    Returns (codes (E, N, K/2), scales (E, N, K/16), codes_t (E, K, N/2), scales_t (E, K, N/16));
    the columnwise pair is empty (0,) unless columnwise.
    """
    return _ops.quantize_experts(w, amax, rule, float(scale_bound), int(block), columnwise)


def amax_quantize_experts(
    w: Tensor,
    *,
    rule: str = "mae",
    scale_bound: float = 256.0,
    block: int = 16,
    columnwise: bool = False,
) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """quantize_experts with each expert's N9 amax computed too (on CUDA in the same pass for the
    bf16 16x16 weights). Returns (amax (E) float32, codes, scales, codes_t, scales_t); bitwise
    amax per expert + quantize_experts."""
    return _ops.amax_quantize_experts(w, rule, float(scale_bound), int(block), columnwise)


def dequantize(
    codes: Tensor,
    scales: Tensor,
    amax: Tensor,
    *,
    offsets: Optional[Tensor] = None,
    scope: str = "tensor",
    scale_bound: float = 256.0,
    dtype: torch.dtype = torch.bfloat16,
) -> Tensor:
    """Dequantize codes (R, C/2) and scales (R, C/16) with the amax they were made with (N8).

    Returns (R, C) in dtype (bf16, fp16 or fp32).
    """
    return _ops.dequantize(codes, scales, amax, offsets, scope, float(scale_bound), dtype)


def amax(
    x: Tensor,
    *,
    scope: str = "tensor",
    offsets: Optional[Tensor] = None,
    rht_columns: bool = False,
) -> Tensor:
    """NaN-propagating amax of |x| (N9); x (R, C).

    Returns float32 (1) for scope "tensor", (R) for "row", (E) for "group" (offsets (E)).
    rht_columns: the amax after the RHT of each 16-row block of every column (N7), as the
    columnwise output of quantize(..., rht_columnwise=True) needs.
    """
    return _ops.amax(x, scope, offsets, rht_columns)


def gemm(
    a_codes: Tensor,
    a_scales: Tensor,
    a_amax: Tensor,
    b_codes: Tensor,
    b_scales: Tensor,
    b_amax: Tensor,
    *,
    a_scope: str = "tensor",
    a_bound: float = 256.0,
    b_bound: float = 256.0,
    bias: Optional[Tensor] = None,
    out_dtype: torch.dtype = torch.bfloat16,
    plan: str = "auto",
    max_swizzle: int = 0,
    raster: str = "m",
) -> Tensor:
    """NVFP4 GEMM out (M, N) = gA * gB * A (M, K) x B (N, K)^T (+ bias (N)) (N10).

    a_codes (M, K/2), a_scales (M, K/16), a_amax (1) or (M) for a_scope "row";
    b_codes (N, K/2), b_scales (N, K/16), b_amax (1). out_dtype: bf16 or fp32.
    plan / max_swizzle / raster: the CUDA tuning overrides (module docstring).
    """
    return _ops.gemm(
        a_codes,
        a_scales,
        a_amax,
        a_scope,
        float(a_bound),
        b_codes,
        b_scales,
        b_amax,
        float(b_bound),
        bias,
        out_dtype,
        plan,
        int(max_swizzle),
        raster,
    )


def grouped_gemm_m(
    a_codes: Tensor,
    a_scales: Tensor,
    a_amax: Tensor,
    b_codes: Tensor,
    b_scales: Tensor,
    b_amax: Tensor,
    offs: Tensor,
    *,
    a_scope: str = "tensor",
    a_bound: float = 256.0,
    b_scope: str = "tensor",
    b_bound: float = 256.0,
    bias: Optional[Tensor] = None,
    out_dtype: torch.dtype = torch.bfloat16,
    plan: str = "auto",
    max_swizzle: int = 0,
    raster: str = "m",
) -> Tensor:
    """M-grouped NVFP4 GEMM (forward, dgrad; N11): rows of group g of A times B[g]^T.

    a_codes (M, K/2), a_scales (M, K/16), a_amax (1) | (M) row | (E) group;
    b_codes (E, N, K/2), b_scales (E, N, K/16), b_amax (1) | (E) for b_scope "group";
    offs (E) int32 cumulative row ends; bias (E, N) or None.
    Returns (M, N); rows past offs[E-1] are zeros.
    plan / max_swizzle / raster: the CUDA tuning overrides (module docstring).
    """
    return _ops.grouped_gemm_m(
        a_codes,
        a_scales,
        a_amax,
        a_scope,
        float(a_bound),
        b_codes,
        b_scales,
        b_amax,
        b_scope,
        float(b_bound),
        offs,
        bias,
        out_dtype,
        plan,
        int(max_swizzle),
        raster,
    )


def grouped_gemm_k(
    a_codes: Tensor,
    a_scales: Tensor,
    a_amax: Tensor,
    b_codes: Tensor,
    b_scales: Tensor,
    b_amax: Tensor,
    offs: Tensor,
    *,
    a_scope: str = "tensor",
    a_bound: float = 256.0,
    b_scope: str = "tensor",
    b_bound: float = 256.0,
    out_dtype: torch.dtype = torch.bfloat16,
    plan: str = "auto",
    max_swizzle: int = 0,
    raster: str = "m",
) -> Tensor:
    """K-grouped NVFP4 GEMM (wgrad; N11): out[g] = gA[g] gB[g] sum over tokens t of group g.

    a_codes (N, T/2), a_scales (N, T/16), b_codes (K, T/2), b_scales (K, T/16): both
    quantized along the token dim T (columnwise outputs of quantize); amaxes (1) or (E);
    offs (E) int32 cumulative token ends, multiples of 16. Returns (E, N, K); an empty group
    gives zeros.
    plan / max_swizzle / raster: the CUDA tuning overrides (module docstring).
    """
    return _ops.grouped_gemm_k(
        a_codes,
        a_scales,
        a_amax,
        a_scope,
        float(a_bound),
        b_codes,
        b_scales,
        b_amax,
        b_scope,
        float(b_bound),
        offs,
        out_dtype,
        plan,
        int(max_swizzle),
        raster,
    )


def grouped_gemm_m_pair(
    a_codes: Tensor,
    a_scales: Tensor,
    a_amax: Tensor,
    b1_codes: Tensor,
    b1_scales: Tensor,
    b1_amax: Tensor,
    b2_codes: Tensor,
    b2_scales: Tensor,
    b2_amax: Tensor,
    offs: Tensor,
    *,
    a_scope: str = "tensor",
    a_bound: float = 256.0,
    b_scope: str = "tensor",
    b_bound: float = 256.0,
    out_dtype: torch.dtype = torch.bfloat16,
    plan: str = "auto",
    max_swizzle: int = 0,
    raster: str = "m",
) -> Tuple[Tensor, Tensor]:
    """Two M-grouped GEMMs of one A (an MoE layer's gate and up projections): (out1, out2),
    each bitwise grouped_gemm_m(A, B1 / B2) without bias; B1 and B2 of one shape, one scope and
    bound. On CUDA A's BF16 operand copy is made once for both."""
    return _ops.grouped_gemm_m_pair(
        a_codes,
        a_scales,
        a_amax,
        a_scope,
        float(a_bound),
        b1_codes,
        b1_scales,
        b1_amax,
        b2_codes,
        b2_scales,
        b2_amax,
        b_scope,
        float(b_bound),
        offs,
        out_dtype,
        plan,
        int(max_swizzle),
        raster,
    )


def grouped_gemm_k_pair(
    a1_codes: Tensor,
    a1_scales: Tensor,
    a1_amax: Tensor,
    a2_codes: Tensor,
    a2_scales: Tensor,
    a2_amax: Tensor,
    b_codes: Tensor,
    b_scales: Tensor,
    b_amax: Tensor,
    offs: Tensor,
    *,
    a_scope: str = "tensor",
    a_bound: float = 256.0,
    b_scope: str = "tensor",
    b_bound: float = 256.0,
    out_dtype: torch.dtype = torch.bfloat16,
    plan: str = "auto",
    max_swizzle: int = 0,
    raster: str = "m",
) -> Tuple[Tensor, Tensor]:
    """Two K-grouped GEMMs of one B (the gate and up wgrads against X): (out1, out2), each
    bitwise grouped_gemm_k(A1 / A2, B); A1 and A2 of one shape, one scope and bound. On CUDA B's
    BF16 operand copy is made once for both."""
    return _ops.grouped_gemm_k_pair(
        a1_codes,
        a1_scales,
        a1_amax,
        a2_codes,
        a2_scales,
        a2_amax,
        a_scope,
        float(a_bound),
        b_codes,
        b_scales,
        b_amax,
        b_scope,
        float(b_bound),
        offs,
        out_dtype,
        plan,
        int(max_swizzle),
        raster,
    )


def pad_token_groups(x: Tensor, offs: Tensor, alignment: int = 128) -> Tuple[Tensor, Tensor]:
    """Pad each token group of x (M, C) to a multiple of alignment with zero rows (N12).

    offs (E) int32 cumulative group ends. Returns (out (P, C), padded_offs (E) int32) with
    P = round_up(M + E * (alignment - 1), alignment); rows outside every group are zero.
    """
    return _ops.pad_token_groups(x, offs, int(alignment))


def unpad_token_groups(y: Tensor, offs: Tensor, padded_offs: Tensor, num_rows: int) -> Tensor:
    """Inverse of pad_token_groups: y (P, C) -> (num_rows, C); rows past offs[E-1] are zero."""
    return _ops.unpad_token_groups(y, offs, padded_offs, int(num_rows))


def zero_rows_past_groups_(x: Tensor, offs: Tensor) -> Tensor:
    """In place: rows of x (M, C) at and past offs[E-1] (outside every group, N11) set to zero;
    returns x. On CUDA offs is read on the device only (no host synchronisation)."""
    _ops.zero_rows_past_groups_(x, offs)
    return x


def swiglu(a: Tensor, b: Tensor, offsets: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    """silu(a) * b with PyTorch's arithmetic (N13; bitwise `F.silu(a) * b` on CUDA), a, b (M, F)
    contiguous bf16/fp16/fp32 of one shape. Returns (out (M, F), amax): with offsets (E) int32,
    amax (E) float32 = the N9 amax of out's rows of each group; else an empty (0,) tensor."""
    return _ops.swiglu(a, b, offsets)


def swiglu_backward(
    dout: Tensor,
    a: Tensor,
    b: Tensor,
    offsets: Optional[Tensor] = None,
    *,
    amax_da: bool = False,
    amax_db: bool = False,
) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """Gradients of out = silu(a) * b given dout (N13; bitwise PyTorch's autograd of
    `F.silu(a) * b` on CUDA). Returns (da, db, amax_da, amax_db); an amax asked for is the
    (E) float32 N9 amax of that gradient's rows of each group (needs offsets), else (0,)."""
    return _ops.swiglu_backward(dout, a, b, offsets, amax_da, amax_db)


def padded_offsets(offs: Tensor, alignment: int = 128) -> Tensor:
    """The padded group ends pad_token_groups(x, offs, alignment) writes (N12), from offs (E)
    int32 alone, on offs' device (torch ops, no host synchronisation)."""
    sizes = torch.diff(offs, prepend=offs.new_zeros(1))
    return torch.cumsum((sizes + (alignment - 1)) // alignment * alignment, 0).to(torch.int32)


def padded_rows(m: int, num_groups: int, alignment: int) -> int:
    """Rows of the pad_token_groups output: round_up(m + E * (alignment - 1), alignment)."""
    n = m + num_groups * (alignment - 1)
    return (n + alignment - 1) // alignment * alignment
