"""Expert weights whose torch._grouped_mm runs f46's four-over-six grouped GEMM: what
quantize_(model, NVFP4FourOverSixTrainingOpConfig(...)) puts in place of a module's 3-D
parameters, as torchao's op-config path does with its weight-wrapper tensors.

A FourOverSixGroupedWeight is the weight itself (same storage, dtype, shape); every op but
torch._grouped_mm sees a plain tensor, and the view ops a grouped-experts module applies
before the GEMM (transpose, permute, t, view, reshape, contiguous, indexing, to, dtype casts)
keep the wrapper.
torch._grouped_mm(A, W.transpose(-2, -1), offs, bias) with A 2-D and W (E, N, K) goes to
utils._quantize_then_scaled_grouped_mm with the wrapper's config; any other call runs unchanged.
"""

from __future__ import annotations

import torch

from .utils import _quantize_then_scaled_grouped_mm

_KEEP = {
    torch.Tensor.transpose,
    torch.transpose,
    torch.Tensor.permute,
    torch.Tensor.t,
    torch.Tensor.view,
    torch.Tensor.reshape,
    torch.Tensor.contiguous,
    torch.Tensor.__getitem__,
    torch.Tensor.to,
    torch.Tensor.bfloat16,
    torch.Tensor.float,
    torch.Tensor.half,
    torch.Tensor.detach,
}


class FourOverSixGroupedWeight(torch.Tensor):
    @staticmethod
    def __new__(cls, data: torch.Tensor, config):
        t = torch.Tensor._make_subclass(cls, data, data.requires_grad)
        t._f46_config = config
        return t

    def __repr__(self) -> str:
        with torch._C.DisableTorchFunctionSubclass():
            return f"FourOverSixGroupedWeight({torch.Tensor.__repr__(self)}, {self._f46_config})"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch._grouped_mm:
            a = args[0] if args else kwargs.get("mat_a", kwargs.get("self"))
            b = args[1] if len(args) > 1 else kwargs.get("mat_b")
            offs = args[2] if len(args) > 2 else kwargs.get("offs")
            bias = args[3] if len(args) > 3 else kwargs.get("bias")
            if isinstance(b, cls) and not isinstance(a, cls) and a.dim() == 2 and b.dim() == 3:
                out_dtype = args[4] if len(args) > 4 else kwargs.get("out_dtype")
                if out_dtype is not None and out_dtype != a.dtype:
                    raise ValueError(
                        f"FourOverSixGroupedWeight: torch._grouped_mm out_dtype={out_dtype} is "
                        f"not supported (the result has A's dtype {a.dtype})"
                    )
                config = b._f46_config
                return _quantize_then_scaled_grouped_mm(
                    a, b.as_subclass(torch.Tensor), config, offs=offs, bias=bias
                )
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **kwargs)
        if func in _KEEP and isinstance(out, torch.Tensor) and isinstance(args[0], cls):
            w = out.as_subclass(cls)
            w._f46_config = args[0]._f46_config
            return w
        return out


def wrap_parameters(module: torch.nn.Module, config) -> int:
    """Replaces every 3-D parameter of `module` (not of its children) by a Parameter holding a
    FourOverSixGroupedWeight of the same data; returns how many."""
    n = 0
    for name, p in list(module.named_parameters(recurse=False)):
        if p.dim() == 3 and not isinstance(p, FourOverSixGroupedWeight):
            w = FourOverSixGroupedWeight(p.detach(), config)
            setattr(module, name, torch.nn.Parameter(w, requires_grad=p.requires_grad))
            n += 1
    return n
