"""Grouped weights quantized one expert at a time (ops.quantize_experts, quantized.
_quantize_experts) equal the one group-scope call (quantized._quantize_group) bitwise (N2: an
expert's amax used as a per-tensor amax), every output; and quantize_weight's choice between
the two (quantized.PER_EXPERT_MAX_E; columnwise always per expert)."""

import f46
import f46.quantized as fq
import pytest
import torch
from f46 import ops


def weights(device, seed, e=5, n=48, k=80):
    g = torch.Generator().manual_seed(seed)
    scale = torch.logspace(-3, 2, e)[:, None, None]  # very different per-expert amaxes
    w = (torch.randn(e, n, k, generator=g) * scale).to(torch.bfloat16).to(device)
    w[2] = 0  # an all-zero expert (amax 0)
    return w


@pytest.mark.parametrize("block", [16, 1])
@pytest.mark.parametrize("columnwise", [False, True])
def test_per_expert_equals_group_scope(device, block, columnwise):
    w = weights(device, block + columnwise)
    e, n, k = w.shape
    recipe = f46.Recipe(weight_block=block)
    offs = fq.expert_row_offsets(e, n, w.device)
    w2 = w.reshape(e * n, k)
    amax = ops.amax(w2, scope="group", offsets=offs)
    per = fq._quantize_experts(w, amax, recipe, columnwise)
    group = fq._quantize_group(w2, amax, offs, e, recipe, columnwise)
    for name, a, b in zip(("codes", "scales", "codes_t", "scales_t"), per, group):
        if not columnwise and name in ("codes_t", "scales_t"):
            assert a is None and b is None
            continue
        assert a.shape == b.shape and a.dtype == b.dtype, name
        assert torch.equal(a, b), name


@pytest.mark.parametrize("columnwise", [False, True])
@pytest.mark.parametrize("limit", [0, 32])
def test_quantize_weight_dispatch(device, monkeypatch, columnwise, limit):
    w = weights(device, 7)
    calls = []
    for fn in ("_quantize_experts", "_quantize_group"):
        real = getattr(fq, fn)
        monkeypatch.setattr(fq, fn, lambda *a, _r=real, _n=fn: calls.append(_n) or _r(*a))
    monkeypatch.setattr(fq, "PER_EXPERT_MAX_E", limit)
    qw = fq.quantize_weight(w, f46.Recipe(), columnwise=columnwise)
    per_expert = columnwise or w.shape[0] <= limit
    assert calls == ["_quantize_experts" if per_expert else "_quantize_group"]
    assert qw.codes.shape == (5, 48, 40)
    assert (qw.codes_t is not None) == columnwise
