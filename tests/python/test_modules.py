"""F46Linear, F46GroupedExperts, convert_model."""

import f46
import pytest
import torch
import torch.nn.functional as F
from torch import nn


def bitwise(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    assert torch.equal(a, b), f"max |diff| = {(a.float() - b.float()).abs().max().item()}"


class GroupedExperts(nn.Module):
    """torchtitan-like experts (the duck type convert_model looks for)."""

    def __init__(self, dim, hidden, e):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(e, hidden, dim) * 0.05)
        self.w2 = nn.Parameter(torch.randn(e, dim, hidden) * 0.05)
        self.w3 = nn.Parameter(torch.randn(e, hidden, dim) * 0.05)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.wq = nn.Linear(64, 64, bias=False)
        self.ffn = nn.Sequential(nn.Linear(64, 128), nn.SiLU(), nn.Linear(128, 64))
        self.experts = GroupedExperts(64, 32, 4)
        self.router = nn.Linear(64, 16, bias=False)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Block(), Block()])
        self.output = nn.Linear(64, 96, bias=False)


def test_convert_model_swaps_the_right_modules():
    torch.manual_seed(0)
    model = Model()
    ref_w = model.layers[0].ffn[0].weight.detach().clone()
    r = f46.Recipe.four_over_six()
    f46.convert_model(model, r, skip=("router",))
    for blk in model.layers:
        assert isinstance(blk.wq, f46.F46Linear) and blk.wq.bias is None
        assert isinstance(blk.ffn[0], f46.F46Linear) and blk.ffn[0].bias is not None
        assert isinstance(blk.ffn[2], f46.F46Linear)
        assert isinstance(blk.experts, f46.F46GroupedExperts)
        assert type(blk.router) is nn.Linear  # skipped by name
        assert blk.experts.recipe is r
    assert type(model.output) is nn.Linear  # output head untouched by default
    bitwise(model.layers[0].ffn[0].weight.detach(), ref_w)
    # callable skip
    m2 = f46.convert_model(Model(), r, skip=lambda name, mod: name.startswith("layers.1"))
    assert isinstance(m2.layers[0].wq, f46.F46Linear)
    assert type(m2.layers[1].wq) is nn.Linear and isinstance(m2.layers[1].experts, GroupedExperts)
    assert type(m2.output) is nn.Linear
    m3 = f46.convert_model(Model(), r, head_names=())
    assert isinstance(m3.output, f46.F46Linear)  # the head converts when asked


def test_f46linear_matches_functional_and_caches(device):
    torch.manual_seed(0)
    lin = nn.Linear(64, 48).to(device).to(torch.bfloat16)
    r = f46.Recipe(weight_block=16)
    m = f46.F46Linear.from_linear(lin, r)
    x = torch.randn(5, 64, dtype=torch.bfloat16, device=device)
    y = m(x)
    bitwise(y.detach(), f46.linear(x, lin.weight, lin.bias, r).detach())
    y.float().sum().backward()
    assert m.weight.grad is not None and m.weight.grad.shape == (48, 64)
    with torch.no_grad():
        yi = m(x)
        q = m.quantized_weight()
        assert m.quantized_weight() is q  # cached per weight version
        bitwise(yi, y.detach())
        m.weight.mul_(2.0)
        assert m.quantized_weight() is not q
        bitwise(m(x), f46.linear(x, m.weight, m.bias, r))


@pytest.mark.parametrize("mode", ["high_precision", "dequantized", "quantized"])
def test_grouped_experts_equals_manual_swiglu(device, mode):
    torch.manual_seed(0)
    e, d, hdim = 4, 64, 32
    r = f46.Recipe(backward_override=mode, pad_token_groups=16)
    w1 = (torch.randn(e, hdim, d) * 0.05).bfloat16().to(device)
    w2 = (torch.randn(e, d, hdim) * 0.05).bfloat16().to(device)
    w3 = (torch.randn(e, hdim, d) * 0.05).bfloat16().to(device)
    mod = f46.F46GroupedExperts.from_bf16(w1, w2, w3, r)
    ntok = torch.tensor([5, 0, 12, 3], device=device)
    x = torch.randn(int(ntok.sum()), d, dtype=torch.bfloat16, device=device, requires_grad=True)
    out = mod(x, ntok)
    offs = torch.cumsum(ntok, 0).to(torch.int32)
    h = F.silu(f46.grouped_mm(x, w1, offs, recipe=r)) * f46.grouped_mm(x, w3, offs, recipe=r)
    bitwise(out.detach(), f46.grouped_mm(h, w2, offs, recipe=r).detach())
    out.float().square().sum().backward()
    assert x.grad.shape == x.shape and torch.isfinite(x.grad.float()).all()
    for w in (mod.w1, mod.w2, mod.w3):
        assert w.grad is not None and w.grad[1].abs().sum() == 0  # expert 1 has no tokens
    with torch.no_grad():  # cached prequantized experts give the same numbers
        bitwise(mod(x, ntok), out.detach())


def test_weight_cache_follows_fused_optimizer_steps():
    """AdamW(fused=True) updates weights in place without bumping their version counter; the
    cached quantized weight of an F46Linear must still follow the step (no stale evaluation)."""
    torch.manual_seed(0)
    lin = f46.F46Linear(32, 16, recipe=f46.Recipe())
    opt = torch.optim.AdamW(lin.parameters(), lr=0.1, fused=True)
    x = torch.randn(8, 32)
    with torch.no_grad():
        before = lin(x)  # fills the cache
    lin(x).square().sum().backward()
    v = lin.weight._version
    opt.step()
    assert lin.weight._version == v  # the premise: fused steps do not bump the version
    with torch.no_grad():
        after = lin(x)
        fresh = f46.linear(x, lin.weight.detach(), lin.bias.detach(), lin.recipe)
    assert not torch.equal(after, before)
    assert torch.equal(after, fresh)
