"""f46.experts.grouped_mm_pair (the SwiGLU experts' gate and up GEMMs with A quantized
once) against two f46.grouped_mm calls: outputs and every gradient bitwise, in every backward
mode, with stochastic rounding and the wgrad RHT, and through F46GroupedExperts."""

import f46
import pytest
import torch
import torch.nn.functional as F
from f46.experts import grouped_mm_pair

RECIPES = {
    "quantized": f46.Recipe(backward_override="quantized"),
    "quantized_sr_rht": f46.Recipe(
        backward_override="quantized", grad_rounding="stochastic", wgrad_rht=True, seed=7
    ),
    "dequantized": f46.Recipe(backward_override="dequantized"),
    "high_precision": f46.Recipe(backward_override="high_precision"),
    "row_scaled_1x16": f46.Recipe(
        backward_override="dequantized", row_scaled_activation=True, weight_block=1
    ),
}


def operands(device, sizes=(16, 0, 21, 43), k=64, n=48, seed=0):
    g = torch.Generator().manual_seed(seed)
    e, m = len(sizes), sum(sizes) + 3  # 3 rows past the last group
    a = (torch.randn(m, k, generator=g) * (1 + torch.arange(m) % 4)[:, None]).to(torch.bfloat16)
    scale = torch.logspace(-1, 1, e)[:, None, None]
    b1 = (torch.randn(e, n, k, generator=g) * 0.1 * scale).to(torch.bfloat16)
    b3 = (torch.randn(e, n, k, generator=g) * 0.1 * scale.flip(0)).to(torch.bfloat16)
    dy1 = torch.randn(m, n, generator=g).to(torch.bfloat16)
    dy3 = (torch.randn(m, n, generator=g) * 3).to(torch.bfloat16)
    offs = torch.tensor(sizes).cumsum(0).to(torch.int32)
    return [t.to(device) for t in (a, b1, b3, dy1, dy3, offs)]


def leaves(*ts):
    return [t.detach().clone().requires_grad_() for t in ts]


def assert_bitwise(x, y, what):
    assert x.dtype == y.dtype and x.shape == y.shape, what
    assert torch.equal(x, y), f"{what}: max |diff| {(x.float() - y.float()).abs().max().item()}"


@pytest.mark.parametrize("name", list(RECIPES))
def test_pair_equals_two_grouped_mm_calls(device, name):
    recipe = RECIPES[name]
    a, b1, b3, dy1, dy3, offs = operands(device)
    a0, b10, b30 = leaves(a, b1, b3)
    f46.reset_sr_offset()
    h1 = f46.grouped_mm(a0, b10, offs, recipe=recipe)
    h3 = f46.grouped_mm(a0, b30, offs, recipe=recipe)
    torch.autograd.backward([h1, h3], [dy1, dy3])
    a1, b11, b31 = leaves(a, b1, b3)
    f46.reset_sr_offset()
    p1, p3 = grouped_mm_pair(a1, b11, b31, offs, recipe)
    torch.autograd.backward([p1, p3], [dy1, dy3])
    assert_bitwise(p1, h1, "y1")
    assert_bitwise(p3, h3, "y3")
    assert_bitwise(a1.grad, a0.grad, "dA")
    assert_bitwise(b11.grad, b10.grad, "dB1")
    assert_bitwise(b31.grad, b30.grad, "dB3")
    assert a1.grad.abs().sum() > 0 and b31.grad.abs().sum() > 0


def test_pair_partial_grads(device):
    """Only A and B3 need gradients: B1 gets none, the others equal the two calls'."""
    recipe = RECIPES["quantized"]
    a, b1, b3, dy1, dy3, offs = operands(device, seed=1)
    a0, b30 = leaves(a, b3)
    h1 = f46.grouped_mm(a0, b1, offs, recipe=recipe)
    h3 = f46.grouped_mm(a0, b30, offs, recipe=recipe)
    torch.autograd.backward([h1, h3], [dy1, dy3])
    a1, b31 = leaves(a, b3)
    p1, p3 = grouped_mm_pair(a1, b1, b31, offs, recipe)
    torch.autograd.backward([p1, p3], [dy1, dy3])
    assert_bitwise(a1.grad, a0.grad, "dA")
    assert_bitwise(b31.grad, b30.grad, "dB3")
    assert b1.grad is None


def test_pair_rejects_what_grouped_mm_rejects(device):
    a, b1, b3, _, _, offs = operands(device)
    with pytest.raises(ValueError, match="offs must have one entry per expert"):
        grouped_mm_pair(a, b1, b3, offs[:-1], f46.Recipe())


def test_experts_layer_uses_pair_bitwise(device, monkeypatch):
    """F46GroupedExperts forward + backward goes through the shared-A Function (on CUDA through
    the fused SwiGLU Function, which shares x the same way) and equals the layer written with
    two grouped_mm calls for the gate and up projections."""
    import f46.experts.gate_up_pair as gp
    import f46.experts.swiglu as sw

    calls = []
    for fn in (gp._GroupedMMPair, sw._GroupedSwiGLU):
        real = fn.apply
        tag = fn.__name__
        monkeypatch.setattr(
            fn, "apply", lambda *a, real=real, tag=tag: calls.append(tag) or real(*a)
        )
    recipe = RECIPES["quantized"]
    torch.manual_seed(0)
    layer = f46.F46GroupedExperts(64, 48, 4, recipe).to(device)
    counts = torch.tensor([16, 0, 21, 43], device=device)
    x = torch.randn(80, 64, device=device).to(torch.bfloat16)
    gy = torch.randn(80, 64, device=device).to(torch.bfloat16)
    for p in layer.parameters():
        p.data = p.data.to(torch.bfloat16)
    x0 = x.clone().requires_grad_()
    f46.reset_sr_offset()
    layer(x0, counts).backward(gy)
    assert calls == ["_GroupedSwiGLU" if device == "cuda" else "_GroupedMMPair"]
    got = [x0.grad] + [p.grad.clone() for p in (layer.w1, layer.w2, layer.w3)]
    layer.zero_grad()
    x1 = x.clone().requires_grad_()
    offs = counts.cumsum(0).to(torch.int32)
    f46.reset_sr_offset()
    h1 = f46.grouped_mm(x1, layer.w1, offs, recipe=recipe)
    h3 = f46.grouped_mm(x1, layer.w3, offs, recipe=recipe)
    f46.grouped_mm(F.silu(h1) * h3, layer.w2, offs, recipe=recipe).backward(gy)
    want = [x1.grad] + [p.grad for p in (layer.w1, layer.w2, layer.w3)]
    for g, w, what in zip(got, want, ("dx", "dw1", "dw2", "dw3")):
        assert_bitwise(g, w, what)
