"""Hugging Face transformers MoE experts on f46's grouped NVFP4 GEMM.

transformers 5.x keeps each MoE layer's experts as fused 3-D parameters (`gate_up_proj`
(E, 2F, D) or `up_proj`, `down_proj` (E, D, F), transposed when `is_transposed`, optional
`*_bias` (E, N)) in a class decorated with `use_experts_implementation`, whose forward
dispatches on `config._experts_implementation` through transformers' `ExpertsInterface`.
register_experts_implementation() (convert_model calls it; importing this module does not)
registers `experts_forward` there as "f46", so `model.set_experts_implementation("f46")` works,
and convert_model swaps each converted experts module to a subclass whose forward is that
function, so only the modules it converts change and the shared config is left alone. The
model's own gating (`_apply_gate`, e.g. gpt-oss's clamped interleaved SwiGLU) and activation run
between the two GEMMs; biases are added in the GEMM epilogue.

transformers 4.x kept experts as an nn.ModuleList of MLPs (w1/w3/w2 or gate_proj/up_proj/
down_proj) looped over in the MoE block. convert_model swaps such a block (softmax top-k
router `gate` nn.Linear, `top_k`, optional `norm_topk_prob`, `jitter_noise`, `shared_expert` and
`shared_expert_gate`, as in 4.x Mixtral, Qwen2-MoE, Qwen3-MoE and OLMoE) to grouped GEMMs over
all experts at once (gate, up, down: three grouped calls instead of a loop of 3 * E small ones)
on the expert weights stacked at every forward (the per-expert parameters stay the model's).
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..experts import routed_mlp
from ..functional import matmul_shape_problem
from ..recipe import Recipe
from ._swap import SwappedModule, swap_class

EXPERTS_IMPLEMENTATION = "f46"


# ---- transformers 5.x fused experts --------------------------------------------------------
def _param3(m: nn.Module, name: str) -> Optional[nn.Parameter]:
    p = getattr(m, name, None)
    return p if isinstance(p, nn.Parameter) and p.dim() == 3 else None


def is_fused_experts(m: nn.Module) -> bool:
    """A module of a class decorated by transformers' `use_experts_implementation`."""
    if not all(hasattr(m, a) for a in ("has_gate", "is_transposed", "has_bias", "num_experts")):
        return False
    w_in = _param3(m, "gate_up_proj" if m.has_gate else "up_proj")
    return w_in is not None and _param3(m, "down_proj") is not None


def _oriented(w: torch.Tensor, transposed: bool) -> torch.Tensor:
    """(E, N, K) view of a fused expert weight stored (E, N, K), or (E, K, N) when transposed."""
    return w.transpose(-2, -1) if transposed else w


def fused_experts_problem(m: nn.Module, recipe: Recipe) -> Optional[str]:
    """Why the experts module m cannot run on NVFP4 grouped GEMMs, or None."""
    w_in = m.gate_up_proj if m.has_gate else m.up_proj
    for what, w in (("gate_up/up", w_in), ("down", m.down_proj)):
        _, n, k = _oriented(w, m.is_transposed).shape
        problem = matmul_shape_problem(n, k, recipe, grouped=True, dtype=w.dtype)
        if problem is not None:
            return f"{what} projection: {problem}"
    return None


def experts_forward(self, hidden_states, top_k_index, top_k_weights):
    """The "f46" experts implementation: transformers' experts forward (hidden_states (T, D),
    top_k_index and top_k_weights (T, k)) -> (T, D) on two grouped NVFP4 GEMMs, with the
    module's f46_recipe (Recipe() when it has none)."""
    recipe = getattr(self, "f46_recipe", None) or Recipe()
    t = self.is_transposed
    w_in = _oriented(self.gate_up_proj if self.has_gate else self.up_proj, t)  # (E, N_in, D)
    b_in = None
    if self.has_bias:
        b_in = self.gate_up_proj_bias if self.has_gate else self.up_proj_bias  # (E, N_in)
    activation = self._apply_gate if self.has_gate else self.act_fn
    post = self.post_expert_norm if getattr(self, "has_post_expert_norm", False) else None
    return routed_mlp(
        hidden_states,
        top_k_index,
        top_k_weights,
        w_in,
        _oriented(self.down_proj, t),  # (E, D, F)
        activation,
        recipe,
        b_in=b_in,
        b_out=self.down_proj_bias if self.has_bias else None,
        post=post,
    )


class FusedExpertsMixin(SwappedModule):
    """Forward of a converted transformers 5.x experts module (see the module docstring)."""

    def forward(self, hidden_states, top_k_index, top_k_weights):
        return experts_forward(self, hidden_states, top_k_index, top_k_weights)


def register_experts_implementation() -> bool:
    """Registers experts_forward as the "f46" experts implementation of transformers.
    Returns False when transformers (or its experts interface) is not installed."""
    try:
        from transformers.integrations.moe import ExpertsInterface
    except ImportError:
        return False
    ExpertsInterface.register(EXPERTS_IMPLEMENTATION, experts_forward)
    return True


def convert_fused_experts(m: nn.Module, recipe: Recipe) -> nn.Module:
    register_experts_implementation()
    return swap_class(m, FusedExpertsMixin, recipe)


# ---- transformers 4.x ModuleList experts ---------------------------------------------------
def _expert_linears(expert: nn.Module):
    """(gate, up, down) nn.Linear of a 4.x SwiGLU expert MLP, or None."""
    for names in (("w1", "w3", "w2"), ("gate_proj", "up_proj", "down_proj")):
        ls = [getattr(expert, n, None) for n in names]
        if all(isinstance(lin, nn.Linear) for lin in ls) and callable(
            getattr(expert, "act_fn", None)
        ):
            return ls
    return None


def is_modulelist_moe(m: nn.Module) -> bool:
    """A transformers 4.x-style sparse MoE block: `gate` nn.Linear (D -> E), `experts`
    nn.ModuleList of E SwiGLU MLPs, integer `top_k`."""
    experts, gate = getattr(m, "experts", None), getattr(m, "gate", None)
    if not isinstance(experts, nn.ModuleList) or len(experts) == 0:
        return False
    if not isinstance(gate, nn.Linear) or gate.out_features != len(experts):
        return False
    if not isinstance(getattr(m, "top_k", None), int):
        return False
    linears = [_expert_linears(e) for e in experts]
    if any(ls is None for ls in linears):
        return False
    shapes = {tuple(tuple(lin.weight.shape) for lin in ls) for ls in linears}
    biases = {tuple(lin.bias is not None for lin in ls) for ls in linears}
    return len(shapes) == 1 and len(biases) == 1


def modulelist_moe_problem(m: nn.Module, recipe: Recipe) -> Optional[str]:
    g, u, d = _expert_linears(m.experts[0])
    for what, lin in (("gate", g), ("up", u), ("down", d)):
        n, k, dtype = lin.out_features, lin.in_features, lin.weight.dtype
        problem = matmul_shape_problem(n, k, recipe, grouped=True, dtype=dtype)
        if problem is not None:
            return f"expert {what} projection: {problem}"
    if any(lin.bias is not None for lin in (g, u, d)):
        return "expert linears with biases (not a 4.x sparse MoE expert)"
    return None


def stacked_expert_weights(experts: nn.ModuleList):
    """(w_gate (E, F, D), w_up (E, F, D), w_down (E, D, F)) stacked from the experts' own
    parameters (differentiable: gradients flow back to every expert's Linear). Gate and up stay
    separate tensors, each quantized with its own per-expert amax as its Linear would be."""
    linears = [_expert_linears(e) for e in experts]
    return tuple(torch.stack([ls[i].weight for ls in linears]) for i in range(3))


class ModuleListMoEMixin(SwappedModule):
    """Forward of a converted 4.x sparse MoE block: the block's softmax top-k routing, then all
    experts in two grouped NVFP4 GEMMs. Returns (hidden_states (B, L, D), router_logits (B*L, E))
    as the 4.x blocks did."""

    def forward(self, hidden_states: torch.Tensor):
        b, s, d = hidden_states.shape
        if self.training and getattr(self, "jitter_noise", 0) > 0:
            noise = torch.empty_like(hidden_states).uniform_(
                1.0 - self.jitter_noise, 1.0 + self.jitter_noise
            )
            hidden_states = hidden_states * noise
        x = hidden_states.view(-1, d)  # (T, D)
        router_logits = self.gate(x)  # (T, E)
        probs = F.softmax(router_logits, dim=1, dtype=torch.float)
        weights, index = torch.topk(probs, self.top_k, dim=-1)  # (T, k)
        if getattr(self, "norm_topk_prob", True):
            weights = weights / weights.sum(dim=-1, keepdim=True)
        weights = weights.to(x.dtype)
        act = self.experts[0].act_fn
        w_gate, w_up, w_down = stacked_expert_weights(self.experts)
        out = routed_mlp(
            x, index, weights, (w_gate, w_up), w_down, lambda g, u: act(g) * u, self.f46_recipe
        )
        shared = getattr(self, "shared_expert", None)
        if shared is not None:
            y = shared(x)
            shared_gate = getattr(self, "shared_expert_gate", None)
            if shared_gate is not None:
                y = torch.sigmoid(shared_gate(x)) * y
            out = out + y
        return out.reshape(b, s, d), router_logits


def convert_modulelist_moe(m: nn.Module, recipe: Recipe) -> nn.Module:
    return swap_class(m, ModuleListMoEMixin, recipe)
