"""No host synchronisation in the grouped path: a whole experts layer step (forward and backward,
every backward mode), f46.grouped_mm and its torchao form run under
torch.cuda.set_sync_debug_mode("error"), which raises on any synchronising torch call (.item(),
.cpu(), nonzero, a blocking copy to the host). CUDA only (the CPU has nothing to synchronise)."""

from __future__ import annotations

import f46
import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _operands(e=4, d=64, f=48, counts=(16, 0, 21, 43)):
    torch.manual_seed(0)
    x = torch.randn(sum(counts), d, device="cuda").to(torch.bfloat16).requires_grad_()
    gy = torch.randn(sum(counts), d, device="cuda").to(torch.bfloat16)
    n = torch.tensor(counts, device="cuda")
    return x, gy, n


class _NoSync:
    def __enter__(self):
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")

    def __exit__(self, *exc):
        torch.cuda.set_sync_debug_mode("default")
        return False


@pytest.mark.parametrize("backward", ["high_precision", "dequantized", "quantized"])
def test_cuda_experts_layer_step_never_syncs(backward):
    x, gy, n = _operands()
    recipe = f46.Recipe(backward_override=backward)
    layer = f46.F46GroupedExperts(64, 48, 4, recipe).to("cuda").to(torch.bfloat16)
    layer(x, n).backward(gy)  # warm-up: first-call set-up may synchronise once
    for p in (x, *layer.parameters()):
        p.grad = None
    with _NoSync():
        layer(x, n).backward(gy)
    assert x.grad is not None and torch.isfinite(layer.w2.grad.float()).all()


def test_cuda_grouped_mm_and_torchao_never_sync():
    from f46.torchao import four_over_six_grouped_mm

    x, gy, n = _operands(d=128)  # torchao's K and N: multiples of 128
    offs = torch.cumsum(n, 0).to(torch.int32)
    w = (torch.randn(4, 128, 128, device="cuda") * 0.1).to(torch.bfloat16).requires_grad_()
    recipe = f46.Recipe(backward_override="quantized")

    def step():
        f46.grouped_mm(x, w, offs, recipe=recipe).backward(gy)
        four_over_six_grouped_mm(x, w, offs).sum().backward()  # w: (E, N, K) as in torchao

    step()  # warm-up
    with _NoSync():
        step()
    assert w.grad is not None and x.grad is not None
