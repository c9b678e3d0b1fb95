"""Quantized-tensor helpers shared by the autograd functions, modules and f46.torchao.

Every helper is a thin composition of the f46 custom ops (python/f46/ops.py); no numerics are
re-implemented here. Section numbers refer to docs/numerics.md.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from . import ops
from .recipe import Recipe


def round_up(v: int, a: int) -> int:
    return (v + a - 1) // a * a


@dataclasses.dataclass
class QuantizedTensor:
    """NVFP4 tensor (N1): codes (R, C/2) uint8, scales (R, C/16) uint8 E4M3, global amax
    float32 (1) | (R) | (E) with `scope` "tensor" | "row" | "group" over rows split by
    `offsets` (E) int32."""

    codes: torch.Tensor
    scales: torch.Tensor
    amax: torch.Tensor
    scope: str = "tensor"
    scale_bound: float = 256.0
    offsets: Optional[torch.Tensor] = None

    @property
    def shape(self):
        return (self.codes.shape[0], self.codes.shape[1] * 2)

    def dequantize(self, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:  # N8
        return ops.dequantize(
            self.codes,
            self.scales,
            self.amax,
            offsets=self.offsets,
            scope=self.scope,
            scale_bound=self.scale_bound,
            dtype=dtype,
        )


@dataclasses.dataclass
class QuantizedWeight:
    """A weight quantized once: dense w (N, K) or grouped w (E, N, K).

    codes (N, K/2) | (E, N, K/2), scales (N, K/16) | (E, N, K/16), amax (1) | (E) float32.
    codes_t / scales_t: the columnwise quantization (N1, quantized along N), (K, N/2) |
    (E, K, N/2) and (K, N/16) | (E, K, N/16), or None when not requested.
    `key` identifies the weight version it was made from (see weight_key).
    """

    codes: torch.Tensor
    scales: torch.Tensor
    amax: torch.Tensor
    codes_t: Optional[torch.Tensor]
    scales_t: Optional[torch.Tensor]
    scale_bound: float
    block: int
    err_mode: str
    grouped: bool
    key: tuple = ()

    @property
    def out_features(self) -> int:
        return self.codes.shape[-2]

    @property
    def in_features(self) -> int:
        return self.codes.shape[-1] * 2

    def dequantize(self, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
        if not self.grouped:
            return ops.dequantize(
                self.codes, self.scales, self.amax, scale_bound=self.scale_bound, dtype=dtype
            )
        e, n, k2 = self.codes.shape
        w = ops.dequantize(
            self.codes.reshape(e * n, k2),
            self.scales.reshape(e * n, k2 // 8),
            self.amax,
            offsets=expert_row_offsets(e, n, self.codes.device),
            scope="group",
            scale_bound=self.scale_bound,
            dtype=dtype,
        )
        return w.view(e, n, k2 * 2)


# Optimizer steps taken so far by any torch.optim optimizer. Fused optimizers (AdamW(fused=True))
# update parameters in place without bumping their version counter, so a cached quantized
# weight keyed only by w._version would outlive the step (seen: stale weights in evaluation).
_optimizer_steps = [0]


def _count_optimizer_step(*_args) -> None:
    _optimizer_steps[0] += 1


register_optimizer_step_post_hook(_count_optimizer_step)


def weight_key(w: torch.Tensor, recipe: Recipe, columnwise: bool) -> tuple:
    """Identity of a weight version: storage, in-place version counter, optimizer steps taken,
    shape, recipe. Empty under torch.compile (the cache is an eager-mode feature)."""
    if torch.compiler.is_compiling():
        return ()
    return (
        w.data_ptr(),
        w._version,
        _optimizer_steps[0],
        tuple(w.shape),
        w.dtype,
        w.device,
        recipe.err_mode,
        recipe.scale_bound,
        recipe.weight_block,
        columnwise,
    )


def expert_row_offsets(e: int, n: int, device) -> torch.Tensor:
    """(E) int32 group ends of the (E*N, K) view of a grouped weight: N, 2N, ..., E*N."""
    return torch.arange(1, e + 1, device=device, dtype=torch.int32) * n


def quantize_weight(w: torch.Tensor, recipe: Recipe, columnwise: bool = False) -> QuantizedWeight:
    """4/6 weight quantization (N3) with recipe.weight_block blocks and a per-tensor (dense) or
    per-expert (grouped, N2) amax. w: (N, K) or (E, N, K)."""
    block = recipe.weight_block
    if w.dim() not in (2, 3):
        raise ValueError(f"weight must be 2-D (N, K) or 3-D (E, N, K), got shape {tuple(w.shape)}")
    grouped = w.dim() == 3
    n, k = w.shape[-2:]
    _check_weight_shape(n, k, block, columnwise, "grouped weight" if grouped else "weight")
    if not grouped:
        w2 = w.contiguous()
        amax = ops.amax(w2, scope="tensor")  # (1)
        c, s, ct, st = ops.quantize(
            w2, amax, scope="tensor", columnwise=columnwise, **recipe.quantize_kwargs("weight")
        )
    else:
        e = w.shape[0]
        w2 = w.contiguous().view(e * n, k)
        # Each expert with its amax (E) as a per-tensor amax: N2's group scope over the
        # (E*N, K) view, bitwise (tests/python/test_quantize_weight_experts.py), with the tuned
        # per-tensor weight kernels, the amaxes in the same pass (each expert's tiles read
        # again while in L2), each columnwise output in its own (K, N/2) slab.
        amax, c, s, ct, st = ops.amax_quantize_experts(
            w2.view(e, n, k), columnwise=columnwise, **recipe.quantize_kwargs("weight")
        )
    return QuantizedWeight(
        c,
        s,
        amax,
        ct if columnwise else None,
        st if columnwise else None,
        recipe.scale_bound,
        block,
        recipe.err_mode,
        grouped,
        weight_key(w, recipe, columnwise),
    )


def quantize_activation(
    x: torch.Tensor,
    recipe: Recipe,
    scope: str,
    offsets: Optional[torch.Tensor] = None,
    amax: Optional[torch.Tensor] = None,
):
    """x (R, K) through the forward's 1x16 4/6 activation quantization with a per-tensor,
    per-row or per-group (offsets (E) int32) amax (N2, N3) -> (codes, scales, amax). `amax`:
    x's N9 amax of that scope when the caller has it already (e.g. from ops.swiglu)."""
    if amax is None:
        amax = ops.amax(x, scope=scope, offsets=offsets)  # (1) | (R) | (E)
    c, s, _, _ = ops.quantize(
        x, amax, offsets=offsets, scope=scope, **recipe.quantize_kwargs("activation")
    )
    return c, s, amax


def dequantized_activation(
    x: torch.Tensor, recipe: Recipe, offsets: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """x (R, K) through the forward's 1x16 4/6 activation quantization (per-tensor amax, or
    per-group with offsets (E) int32; N2, N3) and back (N8), float32: the values the NVFP4 GEMM
    sees."""
    x = x.detach().contiguous()
    scope = "group" if offsets is not None else "tensor"
    c, s, amax = quantize_activation(x, recipe, scope, offsets)
    return ops.dequantize(
        c,
        s,
        amax,
        offsets=offsets,
        scope=scope,
        scale_bound=recipe.scale_bound,
        dtype=torch.float32,
    )


def _check_weight_shape(n: int, k: int, block: int, columnwise: bool, what: str) -> None:
    if k % 16 != 0:
        raise ValueError(f"{what} in_features (K) must be a multiple of 16, got K={k}")
    if (block == 16 or columnwise) and n % 16 != 0:
        raise ValueError(
            f"{what} out_features (N) must be a multiple of 16 for "
            f"{'16x16 weight blocks' if block == 16 else 'the quantized backward'}, got N={n}"
        )


class WeightCache:
    """Keeps the QuantizedWeight of the current version of one weight: a forward (with or
    without gradients) of a weight that has not changed since it was last quantized reuses it,
    e.g. the micro-batches of one gradient-accumulation step. A new version (an in-place update
    bumps w._version; an optimizer step; a new tensor changes data_ptr) or another recipe
    re-quantizes. An entry with the columnwise form also serves a rowwise-only request (its
    rowwise codes are the same bits). In-place writes through w.data bypass the version
    counter: call clear() after them."""

    def __init__(self):
        self._qw: Optional[QuantizedWeight] = None

    def get(self, w: torch.Tensor, recipe: Recipe, columnwise: bool = False) -> QuantizedWeight:
        key = weight_key(w, recipe, columnwise)  # its last entry is `columnwise`; () compiling
        held = self._qw.key if self._qw is not None else ()
        if not key or not held or held[:-1] != key[:-1] or (columnwise and not held[-1]):
            with torch.no_grad():
                self._qw = quantize_weight(w.detach(), recipe, columnwise)
        return self._qw

    def clear(self) -> None:
        self._qw = None


def cached_weight(
    w: torch.Tensor, recipe: Recipe, columnwise: bool, cache: Optional[WeightCache]
) -> QuantizedWeight:
    """quantize_weight(w, recipe, columnwise), or `cache`'s entry for w's current version
    (bitwise the same); no cache under torch.compile."""
    if cache is None or torch.compiler.is_compiling():
        return quantize_weight(w, recipe, columnwise)
    return cache.get(w, recipe, columnwise)


# ---- gradients (N4) ----------------------------------------------------------------------
_sr_calls = [0]


def next_sr_offset(recipe: Recipe) -> int:
    """Philox counter offset (N6) of one stochastic-rounding backward. Eager mode advances it
    once per call; under torch.compile the offset is 0 (a graph constant) so compiled and eager
    runs agree when the counter starts at 0 (see reset_sr_offset)."""
    if not recipe.stochastic:
        return 0
    if torch.compiler.is_compiling():
        return 0
    v = _sr_calls[0]
    _sr_calls[0] += 1
    return v


def reset_sr_offset(value: int = 0) -> None:
    _sr_calls[0] = value


def quantize_gradient(
    dy: torch.Tensor,
    amax: torch.Tensor,
    recipe: Recipe,
    sr_offset: int,
    *,
    scope: str = "tensor",
    offsets: Optional[torch.Tensor] = None,
    rowwise: bool = True,
    columnwise: bool = False,
    amax_columnwise: Optional[torch.Tensor] = None,
    source_offsets: Optional[torch.Tensor] = None,
):
    """Standard NVFP4 gradient quantization (N4: bound 448, rule all6), RNE (N5) or SR (N6);
    the columnwise output gets the RHT (N7) when recipe.wgrad_rht. source_offsets: virtual
    token-group padding (ops.quantize)."""
    return ops.quantize(
        dy,
        amax,
        offsets=offsets,
        scope=scope,
        **recipe.quantize_kwargs("gradient", sr_offset),
        rht_columnwise=recipe.wgrad_rht and columnwise,
        rowwise=rowwise,
        columnwise=columnwise,
        amax_columnwise=amax_columnwise,
        source_offsets=source_offsets,
    )


def gemm_out_dtype(dtype: torch.dtype) -> torch.dtype:
    """GEMM output dtype for a result wanted in `dtype` (the ops emit bf16 or fp32)."""
    return dtype if dtype in (torch.bfloat16, torch.float32) else torch.float32


def bias_for_gemm(bias: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    if bias is None or bias.dtype in (torch.float32, torch.bfloat16):
        return bias
    return bias.float()
