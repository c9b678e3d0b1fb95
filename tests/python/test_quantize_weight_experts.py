"""Grouped weights quantized one expert at a time (quantized.PER_EXPERT_MAX_E) equal the one
group-scope call bitwise (N2: an expert's amax used as a per-tensor amax), every output."""

import f46
import f46.quantized as fq
import pytest
import torch


@pytest.mark.parametrize("block", [16, 1])
@pytest.mark.parametrize("columnwise", [False, True])
def test_per_expert_equals_group_scope(device, monkeypatch, block, columnwise):
    g = torch.Generator().manual_seed(block + columnwise)
    e, n, k = 5, 48, 80
    scale = torch.logspace(-3, 2, e)[:, None, None]  # very different per-expert amaxes
    w = (torch.randn(e, n, k, generator=g) * scale).to(torch.bfloat16).to(device)
    w[2] = 0  # an all-zero expert (amax 0)
    recipe = f46.Recipe(weight_block=block)
    monkeypatch.setattr(fq, "PER_EXPERT_MAX_E", 0)
    group = fq.quantize_weight(w, recipe, columnwise=columnwise)
    calls = []
    real = fq._quantize_experts
    monkeypatch.setattr(fq, "_quantize_experts", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(fq, "PER_EXPERT_MAX_E", 32)
    per = fq.quantize_weight(w, recipe, columnwise=columnwise)
    assert calls == [1]
    for name in ("codes", "scales", "amax", "codes_t", "scales_t"):
        a, b = getattr(per, name), getattr(group, name)
        if not columnwise and name in ("codes_t", "scales_t"):
            assert a is None and b is None
            continue
        assert a.shape == b.shape and a.dtype == b.dtype, name
        assert torch.equal(a, b), name
