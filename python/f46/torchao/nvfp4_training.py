"""torchao's NVFP4 training config and quantize_-style model conversion
(torchao.prototype.moe_training.nvfp4_training.nvfp4_training, torchao.quantization.quantize_).

    quantize_(model, NVFP4TrainingConfig(recipe="four_over_six", err_mode=..., ...))
replaces every nn.Linear (filter_fn) with NVFP4FourOverSixLinear sharing its parameters.
recipe="default" is torchao's other NVFP4 recipe (RHT + stochastic rounding with Triton /
CuTe DSL kernels): it is not four-over-six and not part of f46; it is delegated to torchao's
NVFP4Linear when torchao is installed, else it raises NotImplementedError. A config f46 does not
know is passed to torchao.quantization.quantize_ when torchao is installed.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import torch.nn as nn

from ._common import check_knobs
from .four_over_six import NVFP4FourOverSixLinear
from .utils import KernelPreference

__all__ = ["NVFP4TrainingConfig", "NVFP4Linear", "quantize_"]

_DEFAULT_RECIPE_FIELDS = (
    ("kernel_preference", KernelPreference.TRITON),
    ("process_group", None),
    ("world_size", None),
    ("rht_sign_vector", None),
)
_FOUR_OVER_SIX_FIELDS = (
    ("err_mode", "mae"),
    ("e4m3_scale_bound", 256),
    ("row_scaled_activation", False),
    ("backward_override", None),
    ("weight_block", "16x16"),
)


@dataclasses.dataclass
class NVFP4TrainingConfig:
    """Which NVFP4 training recipe quantize_ installs on nn.Linear modules.

    recipe "four_over_six": NVFP4FourOverSixLinear with err_mode, e4m3_scale_bound,
    row_scaled_activation, backward_override and weight_block (their meanings are those of
    four_over_six_mm). recipe "default": torchao's NVFP4Linear with kernel_preference,
    process_group, world_size and rht_sign_vector. A field of one recipe must keep its default
    under the other (ValueError otherwise).
    """

    kernel_preference: KernelPreference = KernelPreference.TRITON
    process_group: Optional[object] = dataclasses.field(default=None, compare=False)
    world_size: Optional[int] = None
    rht_sign_vector: Optional[object] = dataclasses.field(default=None, compare=False)
    recipe: str = "default"
    err_mode: str = "mae"
    e4m3_scale_bound: int = 256
    row_scaled_activation: bool = False
    backward_override: Optional[str] = None
    weight_block: str = "16x16"

    def __post_init__(self):
        if self.recipe not in ("default", "four_over_six"):
            raise ValueError(f"recipe must be 'default' or 'four_over_six', got {self.recipe!r}")
        if self.recipe == "default":
            others, this = _FOUR_OVER_SIX_FIELDS, "four_over_six"
        else:
            check_knobs(
                self.err_mode, self.e4m3_scale_bound, self.backward_override, self.weight_block
            )
            others, this = _DEFAULT_RECIPE_FIELDS, "default"
        for name, default in others:
            value = getattr(self, name)
            if value is not default and value != default:
                raise ValueError(
                    f"{name} configures the '{this}' recipe and must stay at its default under "
                    f"recipe='{self.recipe}', got {value!r}"
                )


def _torchao_nvfp4_linear():
    """torchao's NVFP4Linear (the default recipe) when torchao is installed."""
    try:
        from torchao.prototype.moe_training.nvfp4_training.nvfp4_training import (
            NVFP4Linear as impl,
        )
    except ImportError as e:
        raise NotImplementedError(
            "NVFP4TrainingConfig(recipe='default') is torchao's RHT + stochastic-rounding NVFP4 "
            "recipe (Triton / CuTe DSL kernels), which f46 does not provide; install torchao for "
            "it, or use recipe='four_over_six' (f46's kernels)"
        ) from e
    if impl is NVFP4Linear:
        raise NotImplementedError("torchao's NVFP4Linear resolves to f46's placeholder")
    return impl


class NVFP4Linear(nn.Linear):
    """torchao's default-recipe NVFP4 linear: constructing one builds torchao's own module
    (torchao must be installed); f46 has no kernels for that recipe."""

    def __new__(cls, *args, **kwargs):
        return _torchao_nvfp4_linear()(*args, **kwargs)

    @classmethod
    def from_linear(cls, mod: nn.Linear, *args, **kwargs):
        return _torchao_nvfp4_linear().from_linear(mod, *args, **kwargs)


def _convert_linear(module: nn.Module, config: NVFP4TrainingConfig) -> nn.Module:
    """quantize_'s handler: nn.Linear -> the recipe's module; converted modules stay as they are."""
    if isinstance(module, NVFP4FourOverSixLinear) or type(module).__name__ == "NVFP4Linear":
        return module
    if not isinstance(module, nn.Linear):
        return module
    if config.recipe == "four_over_six":
        return NVFP4FourOverSixLinear.from_linear(
            module,
            err_mode=config.err_mode,
            e4m3_scale_bound=config.e4m3_scale_bound,
            row_scaled_activation=config.row_scaled_activation,
            backward_override=config.backward_override,
            weight_block=config.weight_block,
        )
    impl = _torchao_nvfp4_linear()
    from torchao.quantization.quantize_.common import KernelPreference as TorchaoKP

    return impl.from_linear(
        module,
        kernel_preference=TorchaoKP(str(getattr(config.kernel_preference, "value", "triton"))),
        process_group=config.process_group,
        world_size=config.world_size,
        rht_sign_vector=config.rht_sign_vector,
    )


def _is_linear(mod: nn.Module, fqn: str) -> bool:
    return isinstance(mod, nn.Linear)


def _replace(model: nn.Module, fn, filter_fn, fqn: str = "") -> nn.Module:
    if filter_fn(model, fqn):
        return fn(model)
    for name, child in list(model.named_children()):
        new = _replace(child, fn, filter_fn, f"{fqn}.{name}" if fqn else name)
        if new is not child:
            setattr(model, name, new)
    return model


def quantize_(
    model: nn.Module,
    config,
    filter_fn: Optional[Callable[[nn.Module, str], bool]] = _is_linear,
    device=None,
) -> None:
    """torchao.quantization.quantize_ for NVFP4TrainingConfig: converts model in place."""
    from .config import NVFP4FourOverSixTrainingOpConfig

    if isinstance(config, NVFP4FourOverSixTrainingOpConfig):
        # torchao's op-config path: the matched modules' 3-D (expert) weights become wrappers
        # whose torch._grouped_mm runs the four-over-six grouped GEMM (grouped_weight.py).
        from .grouped_weight import wrap_parameters

        if device is not None:
            model.to(device=device)
        wrap = filter_fn if filter_fn is not _is_linear else None
        for fqn, m in model.named_modules():
            if wrap is None or wrap(m, fqn):
                wrap_parameters(m, config)
        return None
    if not isinstance(config, NVFP4TrainingConfig):
        try:
            from torchao.quantization import quantize_ as torchao_quantize_
        except ImportError as e:
            raise ValueError(
                f"f46.torchao.quantize_ handles NVFP4TrainingConfig, got {type(config).__name__}"
            ) from e
        if torchao_quantize_ is quantize_:
            raise ValueError(f"no quantize_ handler for {type(config).__name__}")
        return torchao_quantize_(model, config, filter_fn, device)
    if device is not None:
        model.to(device=device)
    _replace(model, lambda m: _convert_linear(m, config), filter_fn or _is_linear)
