"""torchao.prototype.moe_training.config's four-over-six grouped-op config.

NVFP4FourOverSixTrainingOpConfig carries the knobs of four_over_six_grouped_mm; the grouped GEMM
dispatcher (utils._quantize_then_scaled_grouped_mm) runs the op with them.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from ._common import check_knobs

__all__ = ["NVFP4FourOverSixTrainingOpConfig"]


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
        check_knobs(self.err_mode, self.e4m3_scale_bound, self.backward_override, self.weight_block)
