"""torchtitan experts on f46's grouped NVFP4 GEMM.

torchtitan 0.3's `GroupedExperts` (w1_EFD, w2_EDF, w3_EFD) and `GptOssGroupedExperts`
(mlp1_weight_EGD, mlp2_weight_EDF and biases) route every expert GEMM through one overridable
method, `_grouped_mm(*, A (R, K), B_t (E, K, N), offs (E) int32) -> (R, N)`, the seam torchtitan's
own low-precision converters override. convert_model swaps such a module to a subclass of its own
class whose `_grouped_mm` is f46.grouped_mm: module, parameter objects and names (so
checkpoints, optimizers and torchtitan's init_states) are unchanged, and the model's own dispatch,
activation and combine run around the NVFP4 GEMMs.
"""

from __future__ import annotations

from typing import Optional

from torch import nn

from ..functional import grouped_mm, matmul_shape_problem
from ..recipe import Recipe
from ._swap import SwappedModule, swap_class


def expert_weights(m: nn.Module):
    """The 3-D (E, N, K) expert weights of m (torchtitan stores every expert weight with the
    GEMM's output dimension before its input one)."""
    return [(n, p) for n, p in m.named_parameters(recurse=False) if p.dim() == 3]


def is_grouped_experts(m: nn.Module) -> bool:
    """A torchtitan experts module: the `_grouped_mm` seam and 3-D expert weights."""
    return callable(getattr(type(m), "_grouped_mm", None)) and len(expert_weights(m)) > 0


def grouped_experts_problem(m: nn.Module, recipe: Recipe) -> Optional[str]:
    for name, w in expert_weights(m):
        problem = matmul_shape_problem(w.shape[1], w.shape[2], recipe, grouped=True, dtype=w.dtype)
        if problem is not None:
            return f"{name}: {problem}"
    return None


class GroupedExpertsMixin(SwappedModule):
    """`_grouped_mm` on f46.grouped_mm with the module's f46_recipe."""

    def _grouped_mm(self, *, A, B_t, offs):
        return grouped_mm(A, B_t.transpose(-2, -1), offs, recipe=self.f46_recipe)


def convert_grouped_experts(m: nn.Module, recipe: Recipe) -> nn.Module:
    return swap_class(m, GroupedExpertsMixin, recipe)
