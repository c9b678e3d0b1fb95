"""Shared pieces of the test_convert_* tests: the NVFP4 emulation the converted models are checked
against (f46's own quantize / dequantize, products in float64), and the training loop."""

from __future__ import annotations

import f46
import torch
from f46.quantized import dequantized_activation
from torch import nn


def rel_err(y: torch.Tensor, ref: torch.Tensor) -> float:
    """Relative Frobenius error of y against ref."""
    y, ref = y.detach().double(), ref.detach().double()
    return ((y - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def qdq_activation(x2: torch.Tensor, recipe: f46.Recipe, offsets=None) -> torch.Tensor:
    """x2 (M, K) through f46's 1x16 4/6 activation quantization (per-tensor amax, or per-group
    with offsets (E) int32) and dequantization -> float64."""
    return dequantized_activation(x2, recipe, offsets).double()


def qdq_weight(w: torch.Tensor, recipe: f46.Recipe) -> torch.Tensor:
    """w (N, K) or (E, N, K) through f46.quantize_weight and back -> float64."""
    return f46.quantize_weight(w.detach().contiguous(), recipe).dequantize(torch.float32).double()


def emulated_linear(x, w, b, recipe):
    """y = Q(x) Q(w)^T + b in float64, returned in x's dtype."""
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    y = qdq_activation(x2, recipe) @ qdq_weight(w, recipe).T
    if b is not None:
        y = y + b.detach().double()
    return y.to(x.dtype).reshape(*x.shape[:-1], w.shape[0])


def emulated_grouped_mm(a, b, offs, recipe, bias=None):
    """a (S, K) rows grouped by offs (E), b (E, N, K): y[rows of g] = Q_g(a_g) Q(b[g])^T in
    float64 (per-group activation amax, per-expert weight amax), rows past offs[-1] zero;
    returned in a's dtype."""
    offs = offs.to(torch.int32)
    qa = qdq_activation(a.detach().contiguous(), recipe, offsets=offs)  # (S, K)
    qb = qdq_weight(b, recipe)  # (E, N, K)
    y = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float64)
    start = 0
    for g, end in enumerate(offs.tolist()):
        y[start:end] = qa[start:end] @ qb[g].T
        if bias is not None:
            y[start:end] += bias[g].detach().double()
        start = end
    return y.to(a.dtype)


class EmulatedLinear(nn.Module):
    """Stand-in for a converted nn.Linear in the emulation model (same Parameters)."""

    def __init__(self, lin: nn.Linear, recipe: f46.Recipe):
        super().__init__()
        self.weight, self.bias, self.recipe = lin.weight, lin.bias, recipe

    def forward(self, x):
        return emulated_linear(x, self.weight, self.bias, self.recipe)


def emulate_linears(model: nn.Module, names, recipe: f46.Recipe) -> None:
    """Replace the nn.Linear modules named in `names` by EmulatedLinear."""
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, EmulatedLinear(getattr(parent, child), recipe))


def converted_names(report, kind_prefix: str):
    return [e.name for e in report.converted if e.kind.startswith(kind_prefix)]


def train_steps(model, optimizer, loss_fn, expert_params, router_params, steps=10):
    """`steps` optimizer steps of loss_fn(model). Checks every loss and the gradients of every
    expert (per expert slice of the 3-D weights, or per Parameter) and router parameter are
    finite; returns (losses, experts_hit) where experts_hit[name] says which experts got a
    nonzero gradient in some step."""
    losses, hit = [], {}
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model)
        loss.backward()
        losses.append(loss.item())
        for name, p in list(expert_params.items()) + list(router_params.items()):
            assert p.grad is not None, f"{name}: no gradient"
            assert torch.isfinite(p.grad).all(), f"{name}: non-finite gradient"
        for name, p in expert_params.items():
            g = p.grad.reshape(p.shape[0], -1) if p.dim() == 3 else p.grad.reshape(1, -1)
            nz = g.abs().sum(dim=1) > 0
            hit[name] = nz if name not in hit else hit[name] | nz
        optimizer.step()
    assert all(torch.isfinite(torch.tensor(losses))), losses
    return losses, hit


def assert_trains_all(model, optimizer, loss_fn, expert_params, router_params, before):
    """train_steps, then: every expert got a gradient in some step, and every expert and router
    parameter moved away from `before` (name -> tensor taken before training)."""
    _, hit = train_steps(model, optimizer, loss_fn, expert_params, router_params)
    assert all(h.all() for h in hit.values()), {n: h for n, h in hit.items() if not h.all()}
    for n, p in list(expert_params.items()) + list(router_params.items()):
        assert not torch.equal(p.detach(), before[n]), n


def assert_state_dict_round_trips(build, tokens, recipe):
    """A converted model's state_dict keeps the unconverted keys, loads into another converted
    model (same outputs) and into an unconverted one."""
    model = build().eval()
    keys = list(model.state_dict())
    f46.convert_model(model, recipe)
    sd = model.state_dict()
    assert list(sd) == keys
    other = f46.convert_model(build(1).eval(), recipe)
    other.load_state_dict(sd)
    with torch.no_grad():
        assert torch.equal(model(tokens()), other(tokens()))
    build(2).load_state_dict(sd)
