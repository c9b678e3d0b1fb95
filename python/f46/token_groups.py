"""Differentiable token-group padding (N12): f46.functional.pad_token_groups pads every token
group of x (M, C) to a multiple of `alignment` rows (zero rows between the groups) and
unpad_token_groups takes the padding away again; each one's backward is the other. torchao's
pad/unpad pair of the same names (3 outputs, alignment_size 32) is f46.torchao.pad_token_groups.
"""

from __future__ import annotations

import torch

from . import ops


class _PadTokenGroups(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, offs, alignment):
        xp, poffs = ops.pad_token_groups(x, offs, alignment)
        ctx.mark_non_differentiable(poffs)
        ctx.save_for_backward(offs, poffs)
        ctx.m = x.shape[0]
        return xp, poffs

    @staticmethod
    def backward(ctx, dxp, _):
        offs, poffs = ctx.saved_tensors
        return ops.unpad_token_groups(dxp.contiguous(), offs, poffs, ctx.m), None, None


class _UnpadTokenGroups(torch.autograd.Function):
    @staticmethod
    def forward(ctx, yp, offs, poffs, m, alignment):
        ctx.save_for_backward(offs)
        ctx.alignment = alignment
        return ops.unpad_token_groups(yp, offs, poffs, m)

    @staticmethod
    def backward(ctx, dy):
        (offs,) = ctx.saved_tensors
        dyp, _ = ops.pad_token_groups(dy.contiguous(), offs, ctx.alignment)
        return dyp, None, None, None, None


def pad_token_groups(x, offs, alignment: int = 128):
    """Differentiable N12 padding: x (M, C) -> (padded (P, C), padded_offs (E) int32)."""
    return _PadTokenGroups.apply(x, offs, alignment)


def unpad_token_groups(y, offs, padded_offs, num_rows: int, alignment: int = 128):
    """Differentiable inverse of pad_token_groups (alignment is used by its backward)."""
    return _UnpadTokenGroups.apply(y, offs, padded_offs, num_rows, alignment)
