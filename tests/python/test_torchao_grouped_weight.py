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
