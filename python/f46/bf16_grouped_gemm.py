"""BF16 grouped GEMMs on torch._grouped_mm for the high_precision and dequantized grouped
backward (N11 semantics: rows past the last offset and empty groups are zeros), and the
per-group bias gradient."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import ops
from .quantized import round_up


def _pad_last(t: torch.Tensor, mult: int) -> torch.Tensor:
    p = round_up(t.shape[-1], mult) - t.shape[-1]
    return t if p == 0 else F.pad(t, (0, p))


def _group_index(m: int, offs: torch.Tensor) -> torch.Tensor:
    """(M) int64 group of every row; rows past offs[E-1] get E."""
    return torch.searchsorted(offs.to(torch.int64), torch.arange(m, device=offs.device), right=True)


def grouped_mm_m_bf16(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """out[rows of g] = a_g @ b[g], a (M, N), b (E, N, K) -> (M, K) bf16; other rows zero."""
    k = b.shape[2]
    # torch._grouped_mm wants 16-byte strides: zero-pad N and K to multiples of 8 (exact).
    a8 = _pad_last(a.to(torch.bfloat16), 8)
    b16 = b.to(torch.bfloat16)
    if a8.shape[1] != a.shape[1]:  # F.pad copies even when it pads nothing
        b16 = F.pad(b16, (0, 0, 0, a8.shape[1] - a.shape[1]))
    b8 = _pad_last(b16, 8)
    out = torch._grouped_mm(a8.contiguous(), b8.contiguous(), offs=offs)  # (M, K8)
    # torch leaves the rows past offs[E-1] unwritten: zeroed in place, the end read on the
    # device (a torch.where over all of (M, K) cost ~1 ms of a Mixtral layer step).
    return ops.zero_rows_past_groups_(out, offs)[:, :k]


def grouped_mm_k_bf16(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """out[g] = a_g^T @ b_g over the tokens of g: a (M, N), b (M, K) -> (E, N, K) bf16."""
    n, k = a.shape[1], b.shape[1]
    a8 = _pad_last(a.to(torch.bfloat16), 8).contiguous()
    b8 = _pad_last(b.to(torch.bfloat16), 8).contiguous()
    out = torch._grouped_mm(a8.t(), b8, offs=offs)[:, :n, :k]
    if out.is_cuda:
        # Empty groups are zero matrices (N11). torch's CUDA grouped GEMM writes them as zeros
        # (an empty group is a zero-length contraction; tests/python/test_grouped.py checks it
        # over garbage memory), so the mask below, a non-vectorized pass over all of (E, N, K)
        # (~4 ms of a Mixtral layer step), is left to the CPU fallback.
        return out
    o = offs.to(torch.int64)
    nonempty = (o - F.pad(o[:-1], (1, 0))) > 0  # (E)
    return torch.where(
        nonempty[:, None, None], out, torch.zeros((), dtype=out.dtype, device=out.device)
    )


def group_bias_grad(dy: torch.Tensor, offs: torch.Tensor, e: int) -> torch.Tensor:
    """(E, N) float32 per-group sum of dy rows (rows past offs[E-1] dropped)."""
    idx = _group_index(dy.shape[0], offs)
    acc = torch.zeros(e + 1, dy.shape[1], dtype=torch.float32, device=dy.device)
    return acc.index_add(0, idx, dy.float())[:e]
