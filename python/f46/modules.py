"""nn.Modules over f46.linear / f46.grouped_mm."""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import nn

from .experts import swiglu_experts
from .functional import autocast_dtype, linear
from .quantized import WeightCache
from .recipe import Recipe


class F46Linear(nn.Module):
    """y = x W^T + b with NVFP4 4/6 operands; weight (out, in), bias (out).

    The quantized weight is kept per weight version (f46.WeightCache) and reused until the
    weight changes: in inference (the prequantized path) and in training, where the
    micro-batches of a gradient-accumulation step quantize the weight once; bitwise the same
    results. Set cache_weights=False to quantize on every call."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        recipe: Optional[Recipe] = None,
        device=None,
        dtype=None,
        cache_weights: bool = True,
    ):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.recipe = recipe if recipe is not None else Recipe()
        kw = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(out_features, in_features, **kw))
        self.bias = nn.Parameter(torch.empty(out_features, **kw)) if bias else None
        self.cache_weights = cache_weights
        self._cache = WeightCache()
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            nn.init.uniform_(self.bias, -bound, bound)

    @classmethod
    def from_linear(
        cls, lin: nn.Linear, recipe: Optional[Recipe] = None, share_parameters: bool = False
    ) -> "F46Linear":
        """An F46Linear computing what `lin` computes: with lin's weight and bias copied, or,
        with share_parameters=True, holding lin's own Parameter objects (ties, requires_grad
        and optimizer state carry over)."""
        m = cls(
            lin.in_features,
            lin.out_features,
            lin.bias is not None,
            recipe,
            device="meta" if share_parameters else lin.weight.device,
            dtype=lin.weight.dtype,
        )
        m.train(lin.training)
        if share_parameters:
            m.weight, m.bias = lin.weight, lin.bias
            return m
        with torch.no_grad():
            m.weight.copy_(lin.weight)
            if lin.bias is not None:
                m.bias.copy_(lin.bias)
        return m

    def quantized_weight(self):
        """The cached QuantizedWeight of the current weight version."""
        return self._cache.get(self.weight, self.recipe)

    def _use_cache(self, x: torch.Tensor) -> bool:
        if not self.cache_weights or torch.compiler.is_compiling():
            return False
        return not (torch.is_grad_enabled() and (self.weight.requires_grad or x.requires_grad))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.to(autocast_dtype(x))  # under autocast, compute (and return) as nn.Linear does
        if self._use_cache(x):
            return linear(x, self.quantized_weight(), self.bias, self.recipe)
        cache = self._cache if self.cache_weights else None
        return linear(x, self.weight, self.bias, self.recipe, weight_cache=cache)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}, recipe={self.recipe}"
        )


class F46GroupedExperts(nn.Module):
    """torchtitan-style routed SwiGLU experts on NVFP4 4/6 grouped GEMMs.

    w1, w3: (E, F, D); w2: (E, D, F). forward(x (T, D) sorted by expert, num_tokens_per_expert
    (E)): offsets = cumsum(num_tokens_per_expert) as int32 on x's device (no host sync);
    h = silu(x w1^T) * (x w3^T); out = h w2^T, (T, D). Tokens past the last offset give zeros.
    """

    def __init__(
        self,
        dim: int,
        hidden_dim: int,
        num_experts: int,
        recipe: Optional[Recipe] = None,
        device=None,
        dtype=None,
        cache_weights: bool = True,
    ):
        super().__init__()
        self.dim, self.hidden_dim, self.num_experts = dim, hidden_dim, num_experts
        self.recipe = recipe if recipe is not None else Recipe()
        kw = {"device": device, "dtype": dtype}
        self.w1 = nn.Parameter(torch.empty(num_experts, hidden_dim, dim, **kw))
        self.w2 = nn.Parameter(torch.empty(num_experts, dim, hidden_dim, **kw))
        self.w3 = nn.Parameter(torch.empty(num_experts, hidden_dim, dim, **kw))
        self.cache_weights = cache_weights
        self._caches = {"w1": WeightCache(), "w2": WeightCache(), "w3": WeightCache()}
        self.reset_parameters()

    def reset_parameters(self, init_std: float = 0.02) -> None:
        for w in (self.w1, self.w2, self.w3):
            nn.init.trunc_normal_(w, mean=0.0, std=init_std)

    @classmethod
    def from_bf16(
        cls, w1, w2, w3, recipe: Optional[Recipe] = None, share_parameters: bool = False
    ) -> "F46GroupedExperts":
        """From existing expert weights w1/w3 (E, F, D) and w2 (E, D, F): copied, or, with
        share_parameters=True (w1, w2, w3 nn.Parameters), held as the same Parameter objects."""
        e, f, d = w1.shape
        if tuple(w3.shape) != (e, f, d) or tuple(w2.shape) != (e, d, f):
            raise ValueError(
                f"expert weights must be w1/w3 (E, F, D) and w2 (E, D, F), got "
                f"w1 {tuple(w1.shape)}, w2 {tuple(w2.shape)}, w3 {tuple(w3.shape)}"
            )
        if share_parameters and not all(isinstance(w, nn.Parameter) for w in (w1, w2, w3)):
            raise ValueError("share_parameters=True needs w1, w2, w3 to be nn.Parameters")
        m = cls(d, f, e, recipe, device="meta" if share_parameters else w1.device, dtype=w1.dtype)
        if share_parameters:
            m.w1, m.w2, m.w3 = w1, w2, w3
            return m
        with torch.no_grad():
            m.w1.copy_(w1)
            m.w2.copy_(w2)
            m.w3.copy_(w3)
        return m

    def _weight(self, name: str, *inputs: torch.Tensor):
        """The weight, or its cached quantization where no gradient flows through it or into
        the GEMM's other operand (computed from `inputs`)."""
        w = getattr(self, name)
        grads = w.requires_grad or any(t.requires_grad for t in inputs)
        if (
            self.cache_weights
            and not torch.compiler.is_compiling()
            and not (torch.is_grad_enabled() and grads)
        ):
            return self._caches[name].get(w, self.recipe)
        return w

    def forward(self, x: torch.Tensor, num_tokens_per_expert: torch.Tensor) -> torch.Tensor:
        if num_tokens_per_expert.shape != (self.num_experts,):
            raise ValueError(
                f"num_tokens_per_expert must have shape ({self.num_experts},), "
                f"got {tuple(num_tokens_per_expert.shape)}"
            )
        x = x.to(autocast_dtype(x))  # under autocast, compute as nn.Linear does
        offs = torch.cumsum(num_tokens_per_expert.to(x.device), dim=0).to(torch.int32)  # (E)
        w1, w3 = self._weight("w1", x), self._weight("w3", x)
        w2 = self._weight("w2", x, self.w1, self.w3)  # its A, h, derives from x, w1, w3
        # x quantized once for the gate and up projections; on CUDA the SwiGLU fused with its
        # amaxes; bitwise grouped_mm_pair, F.silu(h1) * h3, grouped_mm (f46.experts.swiglu);
        # in training each weight quantized once per version (the micro-batches share it)
        caches = (None, None, None)
        if self.cache_weights:
            caches = (self._caches["w1"], self._caches["w2"], self._caches["w3"])
        return swiglu_experts(x, w1, w2, w3, offs, self.recipe, weight_caches=caches)  # (T, D)

    def extra_repr(self) -> str:
        return (
            f"dim={self.dim}, hidden_dim={self.hidden_dim}, num_experts={self.num_experts}, "
            f"recipe={self.recipe}"
        )
