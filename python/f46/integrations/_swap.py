"""Class swapping: a module keeps its identity, parameters, buffers, hooks and state_dict keys and
gets a subclass of its own class whose methods run f46's GEMMs (the technique of FSDP2's
fully_shard and of torchtitan's low-precision experts)."""

from __future__ import annotations

from torch import nn

from ..recipe import Recipe

_CLASSES: dict = {}


def swapped_class(cls: type, mixin: type) -> type:
    """The cached subclass (mixin, cls) named "NVFP4" + cls.__name__ (as torchtitan names its
    MXFP8 experts "MXFP8" + the class name)."""
    key = (cls, mixin)
    if key not in _CLASSES:
        name = f"NVFP4{cls.__name__}"
        _CLASSES[key] = type(name, (mixin, cls), {"__qualname__": name})
    return _CLASSES[key]


def swap_class(module: nn.Module, mixin: type, recipe: Recipe) -> nn.Module:
    """Give `module` the class swapped_class(type(module), mixin) and the recipe f46_recipe."""
    module.__class__ = swapped_class(type(module), mixin)
    module.f46_recipe = recipe
    return module


def is_swapped(module: nn.Module) -> bool:
    return any(type(module) is c for c in _CLASSES.values())
