"""torchao's NVFP4 four-over-six training API, exactly, over f46's kernels.

Every public name of torchao.prototype.moe_training.nvfp4_training's four-over-six code (and
of the torchao helpers it uses: pad/unpad, the training config, quantize_, the grouped-op
config and dispatcher) with torchao's signatures, defaults, layouts, returns and exception
types. Switching from torchao is an import change:

    from f46.torchao import four_over_six_grouped_mm, NVFP4FourOverSixLinear, ...

The submodules mirror torchao's (four_over_six, four_over_six_grouped, nvfp4_training, config,
utils), so a sys.modules alias maps torchao's module paths onto them. Numbers are f46's
(docs/numerics.md), which are the TransformerEngine / torchao 4/6 arithmetic bit for bit; the
GEMMs run on the CPU and on Hopper (torchao's need SM100). Where f46 does more (a quantized
grouped backward, token groups of any size, rows past offs[-1]) it accepts more.
"""

from .config import NVFP4FourOverSixTrainingOpConfig
from .four_over_six import (
    FP4_E2M1_MAX,
    FP8_E4M3_MAX,
    NVFP4FourOverSixLinear,
    four_over_six_dequantize,
    four_over_six_global_encode_scale,
    four_over_six_linear,
    four_over_six_mm,
    four_over_six_quantize,
    nvfp4_dequantize,
)
from .four_over_six_grouped import (
    FourOverSixQuantizedExperts,
    four_over_six_grouped_mm,
    four_over_six_grouped_mm_prequantized,
    four_over_six_quantize_expert_weights,
)
from .nvfp4_training import NVFP4Linear, NVFP4TrainingConfig, quantize_
from .utils import (
    KernelPreference,
    _quantize_then_scaled_grouped_mm,
    pad_token_groups,
    to_blocked,
    unpad_token_groups,
)

__all__ = [
    "FP4_E2M1_MAX",
    "FP8_E4M3_MAX",
    "four_over_six_global_encode_scale",
    "four_over_six_quantize",
    "nvfp4_dequantize",
    "four_over_six_dequantize",
    "four_over_six_mm",
    "four_over_six_linear",
    "NVFP4FourOverSixLinear",
    "four_over_six_grouped_mm",
    "FourOverSixQuantizedExperts",
    "four_over_six_quantize_expert_weights",
    "four_over_six_grouped_mm_prequantized",
    "pad_token_groups",
    "unpad_token_groups",
    "NVFP4TrainingConfig",
    "NVFP4Linear",
    "quantize_",
    "NVFP4FourOverSixTrainingOpConfig",
    "KernelPreference",
    "to_blocked",
    "_quantize_then_scaled_grouped_mm",
]
