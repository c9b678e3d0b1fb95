"""torchao.prototype.moe_training.config's four-over-six grouped-op config.

NVFP4FourOverSixTrainingOpConfig carries the knobs of four_over_six_grouped_mm; the grouped GEMM
dispatcher (utils._quantize_then_scaled_grouped_mm) runs the op with them.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

__all__ = ["NVFP4FourOverSixTrainingOpConfig"]


def _check_four_over_six_knobs(
    err_mode,
    e4m3_scale_bound,
    backward_override,
    weight_block,
    overrides=(None, "quantized", "high_precision", "dequantized"),
):
    if err_mode not in ("mae", "mse"):
        raise ValueError(f"err_mode must be 'mae' or 'mse', got {err_mode!r}")
    if e4m3_scale_bound not in (256, 448):
        raise ValueError(f"e4m3_scale_bound must be 256 or 448, got {e4m3_scale_bound!r}")
    if backward_override not in overrides:
        names = ", ".join(repr(o) for o in overrides)
        raise ValueError(f"backward_override must be one of {names}, got {backward_override!r}")
    if weight_block not in ("1x16", "16x16"):
        raise ValueError(f"weight_block must be '1x16' or '16x16', got {weight_block!r}")


@dataclasses.dataclass(eq=True, unsafe_hash=True)
class NVFP4FourOverSixTrainingOpConfig:
    """Knobs of the four-over-six grouped GEMM (see four_over_six_grouped_mm). backward_override
    None means "high_precision"; f46 also takes "quantized" (standard NVFP4 gradients)."""

    err_mode: str = "mae"
    e4m3_scale_bound: int = 256
    row_scaled_activation: bool = False
    weight_block: str = "16x16"
    backward_override: Optional[str] = None
    pad_token_groups_for_grouped_mm: bool = False

    def __post_init__(self):
        _check_four_over_six_knobs(
            self.err_mode, self.e4m3_scale_bound, self.backward_override, self.weight_block
        )
