"""A weight quantized once per version (f46.WeightCache): the micro-batches of a gradient-
accumulation step reuse it; outputs and every gradient are bitwise those of quantizing on every
call; an optimizer step, an in-place update or load_state_dict re-quantizes."""

import f46
import f46.quantized
import pytest
import torch

RECIPES = {
    "quantized_sr": f46.Recipe(backward_override="quantized", grad_rounding="stochastic", seed=3),
    "dequantized": f46.Recipe(backward_override="dequantized"),
}
MICRO = 4


@pytest.fixture
def quantize_calls(monkeypatch):
    """Counts f46.quantized.quantize_weight calls (the one place weights are quantized)."""
    calls = [0]
    real = f46.quantized.quantize_weight

    def counting(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(f46.quantized, "quantize_weight", counting)
    return calls


def experts(device, recipe, cache):
    torch.manual_seed(0)
    m = f46.F46GroupedExperts(64, 48, 4, recipe=recipe, device=device, cache_weights=cache)
    return m.to(torch.bfloat16)


def batches(device):
    g = torch.Generator().manual_seed(1)
    counts = torch.tensor([20, 0, 37, 7])
    xs = [torch.randn(64, 64, generator=g).to(torch.bfloat16).to(device) for _ in range(MICRO)]
    dys = [torch.randn(64, 64, generator=g).to(torch.bfloat16).to(device) for _ in range(MICRO)]
    return counts.to(device), xs, dys


def accumulate(m, counts, xs, dys):
    """MICRO forward + backward passes into .grad; -> (outputs, dx per micro-batch)."""
    outs, dxs = [], []
    for x, dy in zip(xs, dys):
        x = x.clone().requires_grad_()
        y = m(x, counts)
        y.backward(dy)
        outs.append(y.detach())
        dxs.append(x.grad)
    return outs, dxs


def same_bits(a, b, what):
    assert a.dtype == b.dtype and a.shape == b.shape, what
    assert torch.equal(a.view(torch.int16), b.view(torch.int16)), what


@pytest.mark.parametrize("name", list(RECIPES))
def test_experts_accumulation_quantizes_each_weight_once(device, name, quantize_calls):
    r = RECIPES[name]
    counts, xs, dys = batches(device)
    results, calls = [], []
    for cache in (True, False):
        m = experts(device, r, cache)
        f46.reset_sr_offset()
        quantize_calls[0] = 0
        outs, dxs = accumulate(m, counts, xs, dys)
        calls.append(quantize_calls[0])
        results.append((outs, dxs, [w.grad for w in (m.w1, m.w2, m.w3)], m))
    assert calls == [3, 3 * MICRO]  # w1, w2, w3 once per version against once per call
    (o1, dx1, g1, m1), (o0, dx0, g0, m0) = results
    for i in range(MICRO):
        same_bits(o1[i], o0[i], f"out {i}")
        same_bits(dx1[i], dx0[i], f"dx {i}")
    for a, b, w in zip(g1, g0, ("dw1", "dw2", "dw3")):
        same_bits(a, b, w)
    # An optimizer step changes the weights: the next micro-batch quantizes them again and
    # computes what a module without a cache computes.
    for m in (m1, m0):
        torch.optim.SGD(m.parameters(), lr=0.5).step()
    same_bits(m1.w1.detach(), m0.w1.detach(), "stepped w1")
    quantize_calls[0] = 0
    f46.reset_sr_offset()
    y1 = m1(xs[0], counts)
    assert quantize_calls[0] == 3
    f46.reset_sr_offset()
    same_bits(y1, m0(xs[0], counts), "after the step")


def test_experts_inference_after_training_reuses_the_columnwise_entry(device, quantize_calls):
    """The training entry (row- and columnwise) serves the rowwise-only inference forward."""
    m = experts(device, RECIPES["quantized_sr"], True)
    counts, xs, dys = batches(device)
    accumulate(m, counts, xs[:1], dys[:1])
    quantize_calls[0] = 0
    with torch.no_grad():
        y = m(xs[1], counts)
    assert quantize_calls[0] == 0
    fresh = experts(device, RECIPES["quantized_sr"], False)
    with torch.no_grad():
        same_bits(y, fresh(xs[1], counts), "inference out")


def test_in_place_updates_and_load_state_dict_requantize(device, quantize_calls):
    m = experts(device, RECIPES["dequantized"], True)
    counts, xs, dys = batches(device)
    accumulate(m, counts, xs[:1], dys[:1])
    quantize_calls[0] = 0
    with torch.no_grad():
        m.w2.mul_(2)  # bumps w2's version only
    accumulate(m, counts, xs[:1], dys[:1])
    assert quantize_calls[0] == 1
    state = {k: v * 3 for k, v in m.state_dict().items()}
    m.load_state_dict(state)
    quantize_calls[0] = 0
    y = m(xs[0], counts)
    assert quantize_calls[0] == 3
    ref = experts(device, RECIPES["dequantized"], False)
    ref.load_state_dict(state)
    same_bits(y.detach(), ref(xs[0], counts).detach(), "after load_state_dict")
    # writes through .data bypass the version counter: clear() is the documented way out
    with torch.no_grad():
        m.w1.data.mul_(0.5)
        ref.w1.data.mul_(0.5)
    for c in m._caches.values():
        c.clear()
    same_bits(m(xs[0], counts).detach(), ref(xs[0], counts).detach(), "after clear")


def test_linear_accumulation_quantizes_once(device, quantize_calls):
    r = RECIPES["quantized_sr"]
    g = torch.Generator().manual_seed(2)
    xs = [torch.randn(24, 64, generator=g).to(torch.bfloat16).to(device) for _ in range(MICRO)]
    grads, calls = [], []
    for cache in (True, False):
        torch.manual_seed(0)
        lin = f46.F46Linear(64, 32, recipe=r, device=device, cache_weights=cache)
        lin = lin.to(torch.bfloat16)
        f46.reset_sr_offset()
        quantize_calls[0] = 0
        for x in xs:
            lin(x).float().square().sum().backward()
        calls.append(quantize_calls[0])
        grads.append((lin.weight.grad, lin.bias.grad))
    assert calls == [1, MICRO]
    same_bits(grads[0][0], grads[1][0], "dw")
    same_bits(grads[0][1], grads[1][1], "db")


def test_functional_weight_cache_argument(device, quantize_calls):
    """f46.grouped_mm(weight_cache=...) reuses the entry for the same version, bitwise."""
    g = torch.Generator().manual_seed(4)
    a = torch.randn(40, 64, generator=g).to(torch.bfloat16).to(device)
    b = (torch.randn(2, 32, 64, generator=g) * 0.1).to(torch.bfloat16).to(device)
    offs = torch.tensor([16, 40], dtype=torch.int32, device=device)
    b.requires_grad_()
    cache = f46.WeightCache()
    quantize_calls[0] = 0
    y1 = f46.grouped_mm(a, b, offs, weight_cache=cache)
    y2 = f46.grouped_mm(a, b, offs, weight_cache=cache)
    assert quantize_calls[0] == 1
    same_bits(y1.detach(), y2.detach(), "cached")
    same_bits(y1.detach(), f46.grouped_mm(a, b, offs).detach(), "uncached")
    assert quantize_calls[0] == 2
