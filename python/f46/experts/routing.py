"""Routed experts on f46.grouped_mm: token grouping and the two-GEMM expert MLP of the
transformers adapters (f46.integrations.transformers).

Tokens routed to experts are grouped by a stable sort of their expert ids; the group ends
(offsets) come from a searchsorted on device, so nothing here synchronises with the host.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence, Union

import torch

from ..functional import autocast_dtype, grouped_mm
from ..recipe import Recipe
from .gate_up_pair import grouped_mm_pair


def group_by_expert(expert_ids: torch.Tensor, num_experts: int):
    """expert_ids (S) int -> (perm (S) int64 with expert_ids[perm] sorted, offsets (E) int32
    cumulative group ends). Ids >= num_experts (expert-parallel sentinels) sort past the last
    offset, where f46.grouped_mm writes zeros."""
    ids_sorted, perm = torch.sort(expert_ids, stable=True)  # (S), (S)
    experts = torch.arange(num_experts, device=expert_ids.device, dtype=ids_sorted.dtype)
    offsets = torch.searchsorted(ids_sorted, experts, right=True).to(torch.int32)  # (E)
    return perm, offsets


def routed_mlp(
    x: torch.Tensor,
    top_k_index: torch.Tensor,
    top_k_weights: torch.Tensor,
    w_in: Union[torch.Tensor, Sequence[torch.Tensor]],
    w_out: torch.Tensor,
    activation: Callable[..., torch.Tensor],
    recipe: Recipe,
    b_in: Optional[torch.Tensor] = None,
    b_out: Optional[torch.Tensor] = None,
    post: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
) -> torch.Tensor:
    """sum over k of top_k_weights[t, k] * expert_{top_k_index[t, k]}(x[t]) on grouped NVFP4
    GEMMs, where expert_e(v) = post(activation(*h) W_out[e]^T + b_out[e]) and h holds
    v W[e]^T (+ b_in[e]) for each W of w_in.

    x (T, D); top_k_index, top_k_weights (T, k); w_in: one (E, N_in, D) tensor (b_in (E, N_in)
    or None), or several (e.g. separate gate and up weights, each its own quantization, no
    b_in); w_out (E, D, F); activation maps the input GEMMs' (S, N_in) outputs to (S, F);
    b_out (E, D) or None. Expert ids >= E (expert-parallel sentinels) contribute zero.
    Returns (T, D) in x's dtype, as transformers' experts do; the GEMMs run in
    autocast_dtype(x) as nn.Linear would. The per-token sum over k is taken in the promoted
    dtype of the expert outputs and routing weights, as transformers does.
    """
    t, k = top_k_index.shape
    ws = [w_in] if isinstance(w_in, torch.Tensor) else list(w_in)
    if b_in is not None and len(ws) != 1:
        raise ValueError("b_in needs a single input weight")
    e = ws[0].shape[0]
    dtype = autocast_dtype(x)
    perm, offs = group_by_expert(top_k_index.reshape(-1), e)  # (S), (E), S = T * k
    xs = x.to(dtype)[perm // k]  # (S, D), rows grouped by expert
    if len(ws) == 2:  # separate gate and up weights: xs quantized once, bitwise two calls
        hs = list(grouped_mm_pair(xs, ws[0], ws[1], offs, recipe))  # (S, N_in) each
    else:
        hs = [grouped_mm(xs, w, offs, bias=b_in, recipe=recipe) for w in ws]  # (S, N_in) each
    h = activation(*hs)  # (S, F)
    y = grouped_mm(h.to(dtype), w_out, offs, bias=b_out, recipe=recipe)  # (S, D)
    if post is not None:
        y = post(y)
    y = y * top_k_weights.reshape(-1)[perm].unsqueeze(-1)  # (S, D)
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(perm.shape[0], device=perm.device)
    out = y[inv].view(t, k, -1).sum(dim=1)  # (T, D), slots summed in routing order
    return out.to(x.dtype)
