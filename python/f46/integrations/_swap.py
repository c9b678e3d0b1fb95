"""Class swapping: a module keeps its identity, parameters, buffers, hooks and state_dict keys and
gets a subclass of its own class whose methods run f46's GEMMs (the technique of FSDP2's
fully_shard and of torchtitan's low-precision experts)."""

from __future__ import annotations

from torch import nn

from ..recipe import Recipe

_CLASSES: dict = {}


class SwappedModule:
    """Base of the mixins: pickling (torch.save of a whole model, copy.deepcopy) records the
    original class and the mixin, both importable, and rebuilds the swapped class on load."""

    _f46_base: type
    _f46_mixin: type

    def __reduce_ex__(self, protocol):
        return (_new_swapped, (self._f46_base, self._f46_mixin), self.__getstate__())


def _new_swapped(base: type, mixin: type):
    """An uninitialised instance of the swapped class; pickle and copy then set its state."""
    cls = swapped_class(base, mixin)
    return cls.__new__(cls)


def swapped_class(cls: type, mixin: type) -> type:
    """The cached subclass (mixin, cls) named "NVFP4" + cls.__name__ (as torchtitan names its
    MXFP8 experts "MXFP8" + the class name)."""
    key = (cls, mixin)
    if key not in _CLASSES:
        name = f"NVFP4{cls.__name__}"
        attrs = {"__qualname__": name, "_f46_base": cls, "_f46_mixin": mixin}
        _CLASSES[key] = type(name, (mixin, cls), attrs)
    return _CLASSES[key]


def swap_class(module: nn.Module, mixin: type, recipe: Recipe) -> nn.Module:
    """Give `module` the class swapped_class(type(module), mixin) and the recipe f46_recipe."""
    module.__class__ = swapped_class(type(module), mixin)
    module.f46_recipe = recipe
    return module


def is_swapped(module: nn.Module) -> bool:
    return isinstance(module, SwappedModule)
