"""f46: NVFP4 "Four Over Six" quantization and NVFP4 GEMMs for PyTorch.

    import f46
    y = f46.linear(x, w, b, recipe=f46.Recipe())                # dense, differentiable
    y = f46.grouped_mm(A, B, offs, recipe=f46.Recipe())         # routed experts
    model = f46.convert_model(model, f46.Recipe.four_over_six())

Numbers: docs/numerics.md. Low-level custom ops: f46.ops.
"""

from . import ops, torchao  # noqa: F401  (ops loads the torch custom ops; torchao: f46.torchao)
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

__all__ = [
    "Recipe",
    "linear",
    "grouped_mm",
    "F46Linear",
    "F46GroupedExperts",
    "convert_model",
    "ConversionReport",
    "QuantizedTensor",
    "QuantizedWeight",
    "WeightCache",
    "quantize_weight",
    "reset_sr_offset",
]

# torchao's names live in f46.torchao only (one name, one meaning). Those that were exported
# here too: the four-over-six functions still resolve, with a DeprecationWarning; the
# pad/unpad pair raises, because f46's own pad_token_groups (f46.functional) has another
# signature (2 outputs, alignment 128) than torchao's (3 outputs, alignment 32).
_MOVED_TO_TORCHAO = (
    "four_over_six_dequantize",
    "four_over_six_global_encode_scale",
    "four_over_six_grouped_mm",
    "four_over_six_linear",
    "four_over_six_mm",
    "four_over_six_quantize",
    "nvfp4_dequantize",
)
_REMOVED_TORCHAO = ("pad_token_groups", "unpad_token_groups")


def __getattr__(name: str):
    if name in _MOVED_TO_TORCHAO:
        import warnings

        warnings.warn(
            f"f46.{name} is torchao's name and lives in f46.torchao: use f46.torchao.{name} "
            f"(from f46.torchao import {name}); the top-level alias will be removed",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(torchao, name)
    if name in _REMOVED_TORCHAO:
        raise AttributeError(
            f"f46.{name} is no longer defined: torchao's {name} (3 outputs, alignment_size 32) "
            f"is f46.torchao.{name}; f46's differentiable one (2 outputs, alignment 128) is "
            f"f46.functional.{name}"
        )
    raise AttributeError(f"module 'f46' has no attribute {name!r}")
