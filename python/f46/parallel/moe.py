"""An expert-parallel MoE block: top-k routing, all-to-all dispatch, local grouped experts,
all-to-all combine. Communication is torch.distributed only (gloo on CPU, NCCL on GPUs).

Layout: with world size W and E experts, rank r holds experts [r*E/W, (r+1)*E/W) as one
grouped-experts module (f46.F46GroupedExperts or any module with the torchtitan signature
``experts(x_sorted (T, D), num_tokens_per_expert (E_local,))``).

Token order is chosen so that every local expert sees its tokens in the same order as a
single-process MoE over the concatenation of all ranks' tokens (rank-major): a stable sort by
expert on each rank, then the received chunks regrouped expert-major, source-rank-minor. So the
per-group amaxes and every row of the quantized grouped GEMM equal the single-process layer's
(docs/numerics.md N11), bitwise.

The only host synchronisation is the one the token exchange needs: the per-rank split sizes of
``all_to_all_single`` are Python ints (they are exchanged on the device first, then read once).

The process group is the caller's; importing this module changes no environment variable. On
machines where NVLink multicast must stay off (NCCL NVLS, torch symmetric memory), set
``NCCL_NVLS_ENABLE=0`` and ``TORCH_SYMM_MEM_DISABLE_MULTICAST=1`` in the environment before
``dist.init_process_group("nccl")``, as examples/expert_parallel.py and bench/bench_ep.py do.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.nn.functional import all_to_all_single as _all_to_all_autograd


class TopKRouter(nn.Module):
    """Softmax router: returns top-k expert ids (T, k) and renormalised weights (T, k) fp32."""

    def __init__(self, dim: int, num_experts: int, top_k: int):
        super().__init__()
        if not 1 <= top_k <= num_experts:
            raise ValueError(f"top_k must be in [1, num_experts={num_experts}], got {top_k}")
        self.top_k = top_k
        self.gate = nn.Linear(dim, num_experts, bias=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scores = torch.softmax(self.gate(x.float()).float(), dim=-1)  # router in FP32
        weights, experts = torch.topk(scores, self.top_k, dim=-1)
        return experts, weights / weights.sum(dim=-1, keepdim=True)


def _inverse_permutation(perm: torch.Tensor) -> torch.Tensor:
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(perm.numel(), device=perm.device)
    return inv


class ExpertParallelMoE(nn.Module):
    """MoE FFN with experts sharded over the ranks of ``group`` (default: the world).

    Args:
        dim: model dim D.
        num_experts: total experts E (a multiple of the group size).
        top_k: experts per token.
        local_experts: grouped-experts module holding this rank's E / W experts.
        group: the expert-parallel process group (e.g. ``dist.group.WORLD``); ``None`` means a
            single-process layer holding all E experts (the reference for parity tests).
    """

    def __init__(
        self,
        dim: int,
        num_experts: int,
        top_k: int,
        local_experts: nn.Module,
        group: dist.ProcessGroup | None = None,
    ):
        super().__init__()
        self.group = group
        self.world = 1 if group is None else dist.get_world_size(group)
        if num_experts % self.world != 0:
            raise ValueError(
                f"num_experts={num_experts} must be a multiple of the "
                f"expert-parallel size {self.world}"
            )
        self.num_experts = num_experts
        self.num_local = num_experts // self.world
        self.router = TopKRouter(dim, num_experts, top_k)
        self.experts = local_experts

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.router(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (T, D) -> (T, D). T may be 0 on some ranks."""
        if x.dim() != 2:
            raise ValueError(f"x must be (tokens, dim), got shape {tuple(x.shape)}")
        experts, weights = self.route(x)
        return self.combine_routed(x, experts, weights)

    def combine_routed(
        self, x: torch.Tensor, experts: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        t, k = experts.shape
        flat = experts.reshape(-1)  # (T*k,) expert of each slot
        perm = torch.argsort(flat, stable=True)  # slots sorted by expert
        routed = x[perm // k]  # (T*k, D)
        counts = torch.bincount(flat, minlength=self.num_experts)  # (E,)
        if self.world == 1:
            y_sorted = self.experts(routed, counts)
        else:
            y_sorted = self._exchange_and_run(routed, counts)
        y = y_sorted[_inverse_permutation(perm)]  # back to (token, slot) order
        return (y.view(t, k, y.shape[-1]) * weights.unsqueeze(-1).to(y.dtype)).sum(dim=1)

    def _exchange_and_run(self, routed: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        w, el = self.world, self.num_local
        # recv_counts[s, e]: tokens that rank s sends to this rank's local expert e.
        recv_counts = torch.empty_like(counts)
        dist.all_to_all_single(recv_counts, counts, group=self.group)
        recv_counts = recv_counts.view(w, el)
        send_splits = counts.view(w, el).sum(dim=1).tolist()
        recv_splits = recv_counts.sum(dim=1).tolist()
        received = _all_to_all_autograd(
            routed.new_empty((sum(recv_splits), routed.shape[1])),
            routed,
            recv_splits,
            send_splits,
            group=self.group,
        )
        # Regroup the (source rank, expert) chunks expert-major so each local expert's tokens are
        # in global (rank-major) order.
        chunk_key = torch.arange(el, device=counts.device).view(1, el) * w + torch.arange(
            w, device=counts.device
        ).view(w, 1)  # (W, E_local)
        row_key = torch.repeat_interleave(chunk_key.reshape(-1), recv_counts.reshape(-1))
        order = torch.argsort(row_key, stable=True)
        y_local = self.experts(received[order], recv_counts.sum(dim=0))
        y_recv = y_local[_inverse_permutation(order)]
        return _all_to_all_autograd(
            routed.new_empty((sum(send_splits), y_recv.shape[1])),
            y_recv,
            send_splits,
            recv_splits,
            group=self.group,
        )


def shard_dense_parameters(block: ExpertParallelMoE, mesh=None) -> ExpertParallelMoE:
    """Shard the block's dense (router) parameters with FSDP2 over ``mesh`` (default: a 1-D mesh
    over the world on the parameters' device type); expert weights stay local to their rank.

    Gradients follow data-parallel semantics on every backend (gloo has no pre-scaled
    reduce-scatter): each parameter's gradient is the mean over ranks of the gradients of each
    rank's loss. FSDP2 averages the router's; the experts', which the all-to-all backward
    already sums over every rank's tokens, are divided by the world size by a gradient hook."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    world = dist.get_world_size(block.group)
    if mesh is None:
        device_type = next(block.parameters()).device.type
        mesh = init_device_mesh(device_type, (world,))
    fully_shard(block.router, mesh=mesh)
    for p in block.experts.parameters():
        p.register_hook(lambda g: g / world)
    return block
