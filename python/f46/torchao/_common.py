"""What the f46.torchao modules share, below all of them: torchao's argument rules for the
four-over-six knobs (checked against f46.recipe's lists of allowed values, with torchao's
ValueError messages), the f46 Recipe a set of knobs means, the 128x4 blocked scale layout and
torchao's trace decorator."""

from __future__ import annotations

from typing import Optional

import torch

from ..recipe import (
    BACKWARD_MODES,
    FOUR_OVER_SIX_ERR_MODES,
    PRESET_SCALE_BOUNDS,
    WEIGHT_BLOCKS,
    Recipe,
)


def _either(values) -> str:
    *head, last = [repr(v) for v in values]
    return f"{', '.join(head)} or {last}"


def check_block(block, name: str = "block") -> int:
    """torchao's block name ("1x16" | "16x16") -> Recipe.weight_block."""
    if not isinstance(block, str) or block not in WEIGHT_BLOCKS:
        raise ValueError(f"{name} must be {_either(WEIGHT_BLOCKS)}, got {block!r}")
    return WEIGHT_BLOCKS[block]


def check_err_mode(err_mode) -> None:
    if err_mode not in FOUR_OVER_SIX_ERR_MODES:
        raise ValueError(f"err_mode must be {_either(FOUR_OVER_SIX_ERR_MODES)}, got {err_mode!r}")


def check_bound(e4m3_scale_bound) -> None:
    if e4m3_scale_bound not in PRESET_SCALE_BOUNDS:
        raise ValueError(
            f"e4m3_scale_bound must be {' or '.join(str(b) for b in PRESET_SCALE_BOUNDS)}, "
            f"got {e4m3_scale_bound!r}"
        )


def check_backward_override(backward_override, allowed: str, none_ok: bool = False) -> None:
    """A backward mode of f46.recipe.BACKWARD_MODES (or None when none_ok); `allowed`: the
    op's wording of them in its ValueError."""
    if not (backward_override in BACKWARD_MODES or (none_ok and backward_override is None)):
        raise ValueError(f"backward_override must be {allowed}, got {backward_override!r}")


def check_knobs(err_mode, e4m3_scale_bound, backward_override, weight_block) -> None:
    """The checks of the four-over-six training configs (NVFP4TrainingConfig,
    NVFP4FourOverSixTrainingOpConfig); backward_override may be None."""
    check_err_mode(err_mode)
    check_bound(e4m3_scale_bound)
    check_backward_override(
        backward_override, "one of None, 'quantized', 'high_precision', 'dequantized'", True
    )
    check_block(weight_block, "weight_block")


def knob_recipe(
    err_mode,
    e4m3_scale_bound,
    weight_block,
    row_scaled_activation: bool,
    backward_override: Optional[str],
) -> Recipe:
    """The f46 Recipe of torchao's four-over-six knobs (checked: ValueError)."""
    block = check_block(weight_block)
    check_err_mode(err_mode)
    check_bound(e4m3_scale_bound)
    return Recipe(
        err_mode=err_mode,
        scale_bound=float(e4m3_scale_bound),
        weight_block=block,
        row_scaled_activation=bool(row_scaled_activation),
        backward_override=backward_override,
    )


def conditional_nostrict_trace(fn):
    """torchao decorates its grouped op with torch._dynamo.nonstrict_trace; f46's ops are opaque
    custom ops that torch.compile traces as they are, so the function is returned unchanged."""
    return fn


def to_blocked(input_matrix: torch.Tensor) -> torch.Tensor:
    """The 128x4 "swizzled" scale layout Blackwell block-scaled GEMMs read (SPEC N1.3's
    converter): input (R, C) -> flat (round_up(R, 128) * round_up(C, 4)), each 128x4 tile
    stored as 32 rows of [4 row-groups x 4 columns]. f46's own layout stays linear."""
    rows, cols = input_matrix.shape
    rb, cb = (rows + 127) // 128, (cols + 3) // 4
    padded = input_matrix
    if (rb * 128, cb * 4) != (rows, cols):
        padded = torch.zeros(rb * 128, cb * 4, dtype=input_matrix.dtype, device=input_matrix.device)
        padded[:rows, :cols] = input_matrix
    tiles = padded.view(rb, 128, cb, 4).permute(0, 2, 1, 3)  # (rb, cb, 128, 4)
    tiles = tiles.reshape(-1, 4, 32, 4).transpose(1, 2)  # (tiles, 32, 4 row-groups, 4)
    return tiles.reshape(-1, 32, 16).flatten()
