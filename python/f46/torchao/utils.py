"""torchao.prototype.moe_training.utils names over f46: token-group padding and the grouped
GEMM dispatcher for the four-over-six op config (to_blocked and conditional_nostrict_trace, from
f46.torchao._common, keep their torchao path here too).

pad_token_groups / unpad_token_groups keep torchao's arguments and returns:
    pad_token_groups(input_act (M, K), group_end_offsets (E) int32, alignment_size=32,
                     kernel_preference=KernelPreference.AUTO)
        -> (padded (round_up(M + E * alignment_size, alignment_size), K),
            padded_group_start_offsets (E) int32, padded_group_end_offsets (E) int32)
    unpad_token_groups(padded_output, original_group_end_offsets, padded_group_start_offsets,
                       num_tokens, alignment_size=32, kernel_preference=...) -> (num_tokens, N)
Every group starts at a multiple of alignment_size; rows outside every group are zero. The
copy runs in f46's pad/unpad ops (N12), differentiable, with no host synchronisation.
"""

from __future__ import annotations

import enum
from typing import Optional, Tuple

import torch
import torch.nn.functional as F

from .. import functional as f46_functional
from . import four_over_six_grouped
from ._common import conditional_nostrict_trace, to_blocked
from .config import NVFP4FourOverSixTrainingOpConfig


class KernelPreference(str, enum.Enum):
    """torchao's kernel backend selector. f46 runs its own kernels whatever is chosen; the
    values exist so torchao code that passes them keeps working (str-valued, so they compare
    equal to torchao's members of the same name)."""

    AUTO = "auto"
    TORCH = "torch"
    MSLK = "mslk"
    EMULATED = "emulated"
    TRITON = "triton"
    CUTEDSL = "cutedsl"


def _check_offsets(group_end_offsets: torch.Tensor) -> None:
    if group_end_offsets.dim() != 1 or group_end_offsets.dtype != torch.int32:
        raise ValueError(
            "group_end_offsets must be a 1-D int32 tensor, got "
            f"{group_end_offsets.dtype} of shape {tuple(group_end_offsets.shape)}"
        )


def _rounded_group_sizes(group_end_offsets: torch.Tensor, alignment_size: int):
    o = group_end_offsets.to(torch.int64)
    sizes = o - F.pad(o[:-1], (1, 0))
    return sizes, (sizes + alignment_size - 1) // alignment_size * alignment_size


def pad_token_groups(
    input_act: torch.Tensor,
    group_end_offsets: torch.Tensor,
    alignment_size: int = 32,
    kernel_preference: Optional[KernelPreference] = KernelPreference.AUTO,
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pads every token group of input_act (M, K) to a multiple of alignment_size rows.

    Returns (padded_input_act, padded_group_start_offsets, padded_group_end_offsets) with
    torchao's upper-bound row count round_up(M + E * alignment_size, alignment_size).
    """
    _check_offsets(group_end_offsets)
    if input_act.dim() != 2:
        raise ValueError(f"input_act must be 2-D (M, K), got shape {tuple(input_act.shape)}")
    if alignment_size < 1:
        raise ValueError(f"alignment_size must be >= 1, got {alignment_size}")
    m, e = input_act.shape[0], group_end_offsets.shape[0]
    padded, padded_ends = f46_functional.pad_token_groups(
        input_act.contiguous(), group_end_offsets, alignment_size
    )
    rows = (m + e * alignment_size + alignment_size - 1) // alignment_size * alignment_size
    padded = F.pad(padded, (0, 0, 0, rows - padded.shape[0]))  # extra rows are zeros
    _, rounded = _rounded_group_sizes(group_end_offsets, alignment_size)
    padded_starts = (padded_ends.to(torch.int64) - rounded).to(torch.int32)
    return padded, padded_starts, padded_ends


def unpad_token_groups(
    padded_output: torch.Tensor,
    original_group_end_offsets: torch.Tensor,
    padded_group_start_offsets: torch.Tensor,
    num_tokens: int,
    alignment_size: int = 32,
    kernel_preference: Optional[KernelPreference] = KernelPreference.AUTO,
) -> torch.Tensor:
    """Inverse of pad_token_groups: (padded_M, N) -> (num_tokens, N)."""
    _check_offsets(original_group_end_offsets)
    if padded_group_start_offsets.shape != original_group_end_offsets.shape:
        raise ValueError(
            "padded_group_start_offsets must have the shape of original_group_end_offsets, got "
            f"{tuple(padded_group_start_offsets.shape)} and "
            f"{tuple(original_group_end_offsets.shape)}"
        )
    _, rounded = _rounded_group_sizes(original_group_end_offsets, alignment_size)
    padded_ends = (padded_group_start_offsets.to(torch.int64) + rounded).to(torch.int32)
    return f46_functional.unpad_token_groups(
        padded_output.contiguous(),
        original_group_end_offsets,
        padded_ends,
        int(num_tokens),
        alignment_size,
    )


def _quantize_then_scaled_grouped_mm(
    A: torch.Tensor,
    B_t: torch.Tensor,
    config,
    offs: Optional[torch.Tensor] = None,
    bias: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """torchao's grouped-GEMM dispatcher for NVFP4FourOverSixTrainingOpConfig.

    B_t is the (E, K, N) transposed view of the stored (E, N, K) expert weights. A may be
    over-allocated past offs[-1]; those rows come back as zeros with zero gradients.
    """
    if not isinstance(config, NVFP4FourOverSixTrainingOpConfig):
        raise ValueError(f"Unsupported config type: {type(config)}")
    if offs is None:
        raise ValueError("offs must be given for a grouped GEMM")
    if B_t.dim() != 3:
        raise ValueError(f"B_t must be 3-D (E, K, N), got shape {tuple(B_t.shape)}")
    # f46's grouped op zero-fills rows past offs[-1] and keeps them out of every group amax,
    # so no host read of offs[-1] is needed here.
    return four_over_six_grouped.four_over_six_grouped_mm(
        A,
        B_t.transpose(-2, -1),
        offs,
        bias,
        err_mode=config.err_mode,
        e4m3_scale_bound=config.e4m3_scale_bound,
        row_scaled_activation=config.row_scaled_activation,
        weight_block=config.weight_block,
        backward_override=config.backward_override,
        pad_token_groups_for_grouped_mm=config.pad_token_groups_for_grouped_mm,
    )


__all__ = [
    "KernelPreference",
    "pad_token_groups",
    "unpad_token_groups",
    "to_blocked",
    "conditional_nostrict_trace",
]
