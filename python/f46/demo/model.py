"""A small Mixture-of-Experts transformer language model in plain PyTorch.

Token + learned position embedding, N pre-norm blocks of causal self-attention and an MoE FFN
(softmax top-k router over E experts, tokens sorted by expert, one grouped-experts module with
the torchtitan layout: w1, w3 (E, F, D), w2 (E, D, F), SwiGLU), RMSNorm, output head.

f46.convert_model swaps the attention projections (nn.Linear) for F46Linear and the
GroupedExperts for F46GroupedExperts; the embeddings, router, norms and head stay in BF16/FP32.
"""

from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn.functional as F
from torch import nn


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 256
    seq_len: int = 128
    dim: int = 128
    num_layers: int = 2
    num_heads: int = 4
    num_experts: int = 4
    top_k: int = 2
    ffn_dim: int = 256
    aux_loss_coef: float = 0.01  # Switch-style load-balancing loss

    def __post_init__(self):
        for name in ("dim", "ffn_dim"):
            v = getattr(self, name)
            if v % 16 != 0:
                raise ValueError(
                    f"ModelConfig.{name} must be a multiple of 16 (NVFP4 blocks), got {v}"
                )
        if self.dim % self.num_heads != 0:
            raise ValueError(f"dim {self.dim} must be divisible by num_heads {self.num_heads}")
        if not 1 <= self.top_k <= self.num_experts:
            raise ValueError(f"top_k must be in [1, {self.num_experts}], got {self.top_k}")


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.num_heads = cfg.num_heads
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim, bias=False)
        self.proj = nn.Linear(cfg.dim, cfg.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x (B, S, D)
        b, s, d = x.shape
        qkv = self.qkv(x).view(b, s, 3, self.num_heads, d // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (B, H, S, D/H)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, s, d))


class GroupedExperts(nn.Module):
    """E SwiGLU experts over tokens sorted by expert (torchtitan layout and signature)."""

    def __init__(self, dim: int, hidden_dim: int, num_experts: int):
        super().__init__()
        self.num_experts = num_experts
        self.w1 = nn.Parameter(torch.empty(num_experts, hidden_dim, dim))  # (E, F, D)
        self.w2 = nn.Parameter(torch.empty(num_experts, dim, hidden_dim))  # (E, D, F)
        self.w3 = nn.Parameter(torch.empty(num_experts, hidden_dim, dim))  # (E, F, D)

    def forward(self, x: torch.Tensor, num_tokens_per_expert: torch.Tensor) -> torch.Tensor:
        """x (T, D) sorted by expert, num_tokens_per_expert (E) -> (T, D). On CUDA torch's
        grouped GEMM (as torchtitan's BF16 experts: no host synchronisation, the speed baseline
        the NVFP4 modes are compared with); elsewhere a loop over the experts."""
        if x.is_cuda:
            offs = torch.cumsum(num_tokens_per_expert, 0).to(torch.int32)  # (E)
            dt = torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else x.dtype
            xd = x.to(dt)
            w1, w2, w3 = (w.to(dt).transpose(-2, -1) for w in (self.w1, self.w2, self.w3))
            h = F.silu(torch._grouped_mm(xd, w1, offs)) * torch._grouped_mm(xd, w3, offs)
            return torch._grouped_mm(h, w2, offs)  # (T, D)
        outs = []
        splits = torch.split(x, num_tokens_per_expert.tolist(), dim=0)
        for e, xe in enumerate(splits):  # xe (T_e, D)
            h = F.silu(xe @ self.w1[e].t()) * (xe @ self.w3[e].t())  # (T_e, F)
            outs.append(h @ self.w2[e].t())  # (T_e, D)
        return torch.cat(outs, dim=0)


class MoE(nn.Module):
    """Top-k routed experts. Returns (out (B, S, D), load-balancing loss (scalar fp32))."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.num_experts = cfg.num_experts
        self.top_k = cfg.top_k
        self.router = nn.Linear(cfg.dim, cfg.num_experts, bias=False)
        self.experts = GroupedExperts(cfg.dim, cfg.ffn_dim, cfg.num_experts)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, s, d = x.shape
        xt = x.reshape(b * s, d)  # (T, D)
        probs = torch.softmax(self.router(xt).float(), dim=-1)  # (T, E)
        weights, experts = torch.topk(probs, self.top_k, dim=-1)  # (T, k)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        flat_experts = experts.reshape(-1)  # (T*k)
        order = torch.argsort(flat_experts, stable=True)  # token-slots sorted by expert
        token_of_slot = order // self.top_k  # (T*k)
        counts = torch.bincount(flat_experts, minlength=self.num_experts)  # (E)
        y = self.experts(xt[token_of_slot], counts)  # (T*k, D)
        y = y.float() * weights.reshape(-1)[order].unsqueeze(1)
        out = torch.zeros(b * s, d, dtype=torch.float32, device=x.device)
        out.index_add_(0, token_of_slot, y)
        # Switch-Transformer balance loss: E * sum_e (fraction of slots to e) * (mean prob of e).
        frac = counts.float() / flat_experts.numel()
        aux = self.num_experts * (frac * probs.mean(dim=0)).sum()
        return out.to(x.dtype).view(b, s, d), aux


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.attn_norm = nn.RMSNorm(cfg.dim, eps=1e-6)
        self.attn = CausalSelfAttention(cfg)
        self.ffn_norm = nn.RMSNorm(cfg.dim, eps=1e-6)
        self.moe = MoE(cfg)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = x + self.attn(self.attn_norm(x))
        m, aux = self.moe(self.ffn_norm(x))
        return x + m, aux


class MoELM(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.pos_emb = nn.Embedding(cfg.seq_len, cfg.dim)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.num_layers))
        self.norm = nn.RMSNorm(cfg.dim, eps=1e-6)
        self.head = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self):
        std = 0.02
        out_std = std / math.sqrt(2 * self.cfg.num_layers)  # residual-branch outputs
        for name, p in self.named_parameters():
            if p.dim() < 2:
                continue  # norm weights keep their ones
            last = name.endswith(("proj.weight", "experts.w2"))
            nn.init.normal_(p, mean=0.0, std=out_std if last else std)

    def forward(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """idx (B, S) int64 -> (logits (B, S, V), total load-balancing loss)."""
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)  # (B, S, D)
        aux = torch.zeros((), dtype=torch.float32, device=idx.device)
        for block in self.blocks:
            x, a = block(x)
            aux = aux + a
        return self.head(self.norm(x)), aux

    def loss(self, idx: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns (LM cross-entropy (nats/byte), LM + aux loss for the backward)."""
        logits, aux = self(idx)
        lm = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return lm, lm + self.cfg.aux_loss_coef * aux


# Names of the modules that stay high precision under convert_model (N10 GEMMs need N, K
# multiples of 16; the router (E outputs) and the head are precision-sensitive anyway).
HIGH_PRECISION = ("router", "head")
