"""f46: NVFP4 "Four Over Six" quantization and NVFP4 GEMMs for PyTorch.

    import f46
    y = f46.linear(x, w, b, recipe=f46.Recipe())                # dense, differentiable
    y = f46.grouped_mm(A, B, offs, recipe=f46.Recipe())         # routed experts
    model = f46.convert_model(model, f46.Recipe.four_over_six())

Numbers: docs/numerics.md. Low-level custom ops: f46.ops.
"""

from . import ops  # noqa: F401  (loads the torch custom ops)
from .convert import ConversionReport, convert_model  # noqa: F401
from .functional import grouped_mm, linear  # noqa: F401
from .modules import F46GroupedExperts, F46Linear  # noqa: F401
from .quantized import (  # noqa: F401
    QuantizedTensor,
    QuantizedWeight,
    WeightCache,
    quantize_weight,
    reset_sr_offset,
)
from .recipe import Recipe  # noqa: F401

# torchao's names at the top level mean what torchao means (f46.torchao: its signatures, layouts,
# returns and ValueErrors). f46's own pad/unpad pair is f46.functional.pad_token_groups.
from .torchao import (  # noqa: F401
    four_over_six_dequantize,
    four_over_six_global_encode_scale,
    four_over_six_grouped_mm,
    four_over_six_linear,
    four_over_six_mm,
    four_over_six_quantize,
    nvfp4_dequantize,
    pad_token_groups,
    unpad_token_groups,
)

__all__ = [
    "Recipe",
    "linear",
    "grouped_mm",
    "pad_token_groups",
    "unpad_token_groups",
    "F46Linear",
    "F46GroupedExperts",
    "convert_model",
    "ConversionReport",
    "QuantizedTensor",
    "QuantizedWeight",
    "WeightCache",
    "quantize_weight",
    "reset_sr_offset",
    "four_over_six_quantize",
    "four_over_six_dequantize",
    "four_over_six_mm",
    "four_over_six_linear",
    "four_over_six_grouped_mm",
    "four_over_six_global_encode_scale",
    "nvfp4_dequantize",
]
