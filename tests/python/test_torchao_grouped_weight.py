"""quantize_(model, NVFP4FourOverSixTrainingOpConfig(...)): a module's expert weights become
wrappers whose torch._grouped_mm is f46's four-over-six grouped GEMM (torchao's op-config path).
Forward and gradients equal four_over_six_grouped_mm called directly, bitwise."""

import pytest
import torch
from f46.torchao import NVFP4FourOverSixTrainingOpConfig, four_over_six_grouped_mm, quantize_
from f46.torchao.grouped_weight import FourOverSixGroupedWeight
from torch import nn


class Experts(nn.Module):
    """Routed experts as torchtitan writes them: torch._grouped_mm on the transposed weight."""

    def __init__(self, e, n, k):
        super().__init__()
        self.w = nn.Parameter(torch.randn(e, n, k) * 0.1)

    def forward(self, x, offs):
        return torch._grouped_mm(x, self.w.transpose(-2, -1), offs=offs)


KNOBS = [
    dict(backward_override="dequantized"),
    dict(backward_override="quantized", err_mode="mse", e4m3_scale_bound=448),
]


@pytest.mark.parametrize("knobs", KNOBS)
def test_quantize_op_config_reroutes_grouped_mm(device, knobs):
    torch.manual_seed(0)
    e, n, k = 4, 128, 128  # square experts: a transposed reading would be silently wrong
    model = Experts(e, n, k).to(device=device, dtype=torch.bfloat16)
    w0 = model.w.detach().clone()
    x = torch.randn(256, k, device=device, dtype=torch.bfloat16)
    offs = torch.tensor([64, 64, 192, 256], dtype=torch.int32, device=device)
    gy = torch.randn(256, n, device=device, dtype=torch.bfloat16)
    quantize_(model, NVFP4FourOverSixTrainingOpConfig(**knobs))
    assert isinstance(model.w, nn.Parameter) and isinstance(model.w, FourOverSixGroupedWeight)
    assert torch.equal(model.w.as_subclass(torch.Tensor), w0)
    x1 = x.clone().requires_grad_()
    y = model(x1, offs)
    y.backward(gy)
    x2 = x.clone().requires_grad_()
    w2 = w0.clone().requires_grad_()
    want = four_over_six_grouped_mm(x2, w2, offs, **knobs)
    want.backward(gy)
    assert type(y) is torch.Tensor and torch.equal(y, want)
    assert torch.equal(x1.grad, x2.grad)
    assert torch.equal(model.w.grad, w2.grad)
    ref = (x.double() @ w0[0].double().t())[:64]  # W (N, K): y = x W^T, not x W
    assert (y[:64].double() - ref).norm() / ref.norm() < 0.2
    # an optimizer step keeps the wrapper and changes the weight
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    assert isinstance(model.w, FourOverSixGroupedWeight)
    assert not torch.equal(model.w.as_subclass(torch.Tensor), w0)


def test_other_ops_see_a_plain_tensor(device):
    model = Experts(2, 32, 16).to(device)
    quantize_(model, NVFP4FourOverSixTrainingOpConfig())
    s = model.w.sum()
    assert type(s) is torch.Tensor
    assert type(model.w * 2) is torch.Tensor
    assert isinstance(model.w.transpose(-2, -1), FourOverSixGroupedWeight)


def test_torchtitan_grouped_experts(device):
    """torchtitan 0.3's GroupedExperts (w.bfloat16().transpose(-2, -1) into torch._grouped_mm)
    after quantize_ equals its SwiGLU written with four_over_six_grouped_mm, bitwise."""
    moe = pytest.importorskip("torchtitan.models.common.moe")
    import torch.nn.functional as F

    torch.manual_seed(1)
    ex = moe.GroupedExperts(moe.GroupedExperts.Config(dim=128, hidden_dim=128, num_experts=4))
    for p in ex.parameters():
        nn.init.normal_(p, std=0.05)
    ex = ex.to(device=device, dtype=torch.bfloat16)
    w1, w2, w3 = (p.detach().clone() for p in (ex.w1_EFD, ex.w2_EDF, ex.w3_EFD))
    counts = torch.tensor([16, 0, 40, 24], device=device)
    x = torch.randn(80, 128, device=device, dtype=torch.bfloat16)
    knobs = dict(backward_override="dequantized")
    quantize_(ex, NVFP4FourOverSixTrainingOpConfig(**knobs))
    y = ex(x, counts)
    offs = counts.cumsum(0).to(torch.int32)

    def f(a, w):
        return four_over_six_grouped_mm(a, w, offs, **knobs)

    want = f(F.silu(f(x, w1)) * f(x, w3), w2)
    assert torch.equal(y, want)
