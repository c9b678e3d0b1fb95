"""Loads the compiled f46 torch extension (libf46_torch*.so) that registers torch.ops.f46.*.

The library is installed beside this file by `pip install --no-build-isolation .`; the
environment variable F46_TORCH_LIBRARY may name another build of it (a development tree).
"""

from __future__ import annotations

import glob
import os

import torch

_LOADED: str | None = None


def library_path() -> str:
    """Path of the extension library that `load()` uses."""
    env = os.environ.get("F46_TORCH_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "libf46_torch*.so")))
    if not found:
        raise ImportError(
            f"f46: the compiled extension libf46_torch.so is not in {here}; build and install "
            "the package with `pip install --no-build-isolation .` (scripts/setup_env.sh does)"
        )
    return found[0]


def load() -> str:
    """Loads the extension once; returns its path."""
    global _LOADED
    if _LOADED is None:
        path = library_path()
        torch.ops.load_library(path)
        _LOADED = path
    return _LOADED
