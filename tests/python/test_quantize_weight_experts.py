"""Grouped weights quantized one expert at a time (ops.quantize_experts, which quantize_weight
uses) equal one group-scope ops.quantize call over the (E*N, K) view bitwise (N2: an expert's
amax used as a per-tensor amax), every output."""

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


def group_scope(w2, amax, offs, e, recipe, columnwise):
    """The (E*N, K) weights in one group-scope call, laid out as quantize_experts' outputs."""
    n, k = w2.shape[0] // e, w2.shape[1]
    c, s, ct, st = ops.quantize(
        w2,
        amax,
        offsets=offs,
        scope="group",
        rule=recipe.err_mode,
        scale_bound=recipe.scale_bound,
        block=recipe.weight_block,
        columnwise=columnwise,
    )
    if not columnwise:
        return c.view(e, n, k // 2), s.view(e, n, k // 16), None, None
    # (K, E*N/2) -> (E, K, N/2): expert g owns columns [g*N, (g+1)*N) of W^T.
    ct = ct.view(k, e, n // 2).permute(1, 0, 2).contiguous()
    st = st.view(k, e, n // 16).permute(1, 0, 2).contiguous()
    return c.view(e, n, k // 2), s.view(e, n, k // 16), ct, st


@pytest.mark.parametrize("block", [16, 1])
@pytest.mark.parametrize("columnwise", [False, True])
@pytest.mark.parametrize("e", [5, 40])
def test_per_expert_equals_group_scope(device, block, columnwise, e):
    w = weights(device, block + columnwise, e=e)
    e, n, k = w.shape
    recipe = f46.Recipe(weight_block=block)
    offs = fq.expert_row_offsets(e, n, w.device)
    w2 = w.reshape(e * n, k)
    amax = ops.amax(w2, scope="group", offsets=offs)
    qw = fq.quantize_weight(w, recipe, columnwise=columnwise)
    per = (qw.codes, qw.scales, qw.codes_t, qw.scales_t)
    group = group_scope(w2, amax, offs, e, recipe, columnwise)
    assert torch.equal(qw.amax, amax)
    for name, a, b in zip(("codes", "scales", "codes_t", "scales_t"), per, group):
        if not columnwise and name in ("codes_t", "scales_t"):
            assert a is None and b is None
            continue
        assert a.shape == b.shape and a.dtype == b.dtype, name
        assert torch.equal(a, b), name
