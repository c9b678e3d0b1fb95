"""convert_model's report and what it keeps: routers, shapes NVFP4 cannot take, tied weights,
requires_grad, Parameter identity, autocast dtypes."""

import f46
import pytest
import torch
import torch.nn.functional as F
from f46.convert import ConversionReport
from torch import nn


class Router(nn.Module):
    def __init__(self, experts):
        super().__init__()
        self.gate = nn.Linear(64, experts, bias=False)

    def forward(self, x):
        return F.softmax(self.gate(x), dim=-1)


class Net(nn.Module):
    def __init__(self, experts=8, tie=True):
        super().__init__()
        self.embed = nn.Embedding(96, 64)
        self.wq = nn.Linear(64, 64)
        self.odd_out = nn.Linear(64, 40)  # N = 40: not a multiple of 16
        self.odd_in = nn.Linear(40, 64)  # K = 40: not a multiple of 16
        self.router = Router(experts)
        self.lm_head = nn.Linear(64, 96, bias=False)
        if tie:
            self.lm_head.weight = self.embed.weight

    def forward(self, ids):
        h = self.embed(ids)
        h = h + self.odd_in(self.odd_out(self.wq(h)))
        h = h * self.router(h).sum(-1, keepdim=True)
        return self.lm_head(h)


def tokens():
    return torch.randint(0, 96, (2, 8), generator=torch.Generator().manual_seed(0))


def test_default_return_is_the_model_and_report_is_opt_in(capsys):
    m = Net()
    assert f46.convert_model(m) is m
    m2 = Net()
    out, rep = f46.convert_model(m2, report=True, verbose=True)
    assert out is m2 and isinstance(rep, ConversionReport)
    printed = capsys.readouterr().out
    assert printed.strip() == str(rep)
    assert "wq" in printed and "router.gate" in printed and "odd_out" in printed


def test_report_lists_conversions_and_reasons():
    m = Net(tie=False)
    _, rep = f46.convert_model(m, report=True)
    conv = {e.name: e for e in rep.converted}
    kept = {e.name: e for e in rep.kept}
    assert set(conv) == {"wq"} and conv["wq"].numel == 64 * 64
    assert kept["router.gate"].kind == "router"
    assert kept["lm_head"].kind == "head"
    assert kept["embed"].kind == "embedding"
    assert kept["odd_out"].kind == "shape" and "N=40" in kept["odd_out"].detail
    assert kept["odd_in"].kind == "shape" and "K=40" in kept["odd_in"].detail
    matmul = 64 * 64 + 64 * 40 + 40 * 64 + 8 * 64 + 96 * 64  # embeddings are not matmuls
    assert rep.matmul_numel == matmul
    assert rep.nvfp4_share == pytest.approx(64 * 64 / matmul)
    assert rep.projection_share == pytest.approx(64 * 64 / (64 * 64 + 2 * 64 * 40))
    text = str(rep)
    assert f"{100 * rep.nvfp4_share:.1f}% of matmul weights" in text
    assert "shape or dtype NVFP4 cannot take: out_features N=40" in text
    with torch.no_grad():
        assert torch.isfinite(m(tokens())).all()  # nothing fails at forward time


def test_float64_linears_are_left_alone():
    m = nn.Sequential(nn.Linear(64, 64).double(), nn.Linear(64, 64))
    _, rep = f46.convert_model(m, report=True)
    assert type(m[0]) is nn.Linear and isinstance(m[1], f46.F46Linear)
    assert rep.kept[0].kind == "shape" and "torch.float64" in rep.kept[0].detail


@pytest.mark.parametrize("experts", [8, 16, 64])
def test_routers_are_left_alone(experts):
    """A router's gate stays an nn.Linear (same module, same Parameter) whatever its width; with
    keep_routers=False a 16- or 64-expert gate converts, an 8-expert one keeps its shape reason
    and the forward runs."""
    m = Net(experts)
    gate, w = m.router.gate, m.router.gate.weight
    f46.convert_model(m)
    assert m.router.gate is gate and type(gate) is nn.Linear and gate.weight is w
    m2 = Net(experts)
    _, rep = f46.convert_model(m2, keep_routers=False, report=True)
    kept = {e.name: e.kind for e in rep.kept}
    if experts % 16:
        assert type(m2.router.gate) is nn.Linear and kept["router.gate"] == "shape"
    else:
        assert isinstance(m2.router.gate, f46.F46Linear)
    with torch.no_grad():
        assert torch.isfinite(m2(tokens())).all()


def test_tied_weights_stay_tied_when_the_head_converts():
    m = Net()
    emb = m.embed.weight
    f46.convert_model(m, head_names=())
    assert isinstance(m.lm_head, f46.F46Linear)
    assert m.lm_head.weight is emb and m.embed.weight is emb
    loss = m(tokens()).float().square().mean()
    loss.backward()
    assert emb.grad is not None and torch.isfinite(emb.grad).all()
    assert "lm_head.weight" not in dict(m.named_parameters())  # still deduplicated as tied


def test_requires_grad_and_parameter_identity_are_kept():
    m = Net()
    m.wq.weight.requires_grad_(False)
    params = dict(m.named_parameters())
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    f46.convert_model(m)
    assert isinstance(m.wq, f46.F46Linear)
    assert dict(m.named_parameters()) == params
    assert not m.wq.weight.requires_grad and m.wq.bias.requires_grad
    frozen, bias = m.wq.weight.detach().clone(), m.wq.bias.detach().clone()
    m(tokens()).float().square().mean().backward()
    assert m.wq.weight.grad is None and m.wq.bias.grad is not None
    opt.step()  # the optimizer built before conversion updates the converted module's bias
    assert torch.equal(m.wq.weight.detach(), frozen)
    assert not torch.equal(m.wq.bias.detach(), bias)


def test_training_flag_and_idempotence():
    m = Net().eval()
    f46.convert_model(m)
    assert not m.wq.training
    wq = m.wq
    _, rep = f46.convert_model(m, report=True)
    assert m.wq is wq and [(e.name, e.kind) for e in rep.converted] == [("wq", "converted before")]


def test_a_linear_model_is_reported_not_replaced():
    lin = nn.Linear(64, 64)
    _, rep = f46.convert_model(lin, report=True)
    assert type(lin) is nn.Linear and rep.kept[0].kind == "root"


def test_autocast_output_dtype_follows_nn_linear():
    lin = nn.Linear(64, 48)
    f = f46.F46Linear.from_linear(lin)
    x = torch.randn(4, 64)
    assert f(x).dtype == lin(x).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y, y_ref = f(x), lin(x)
    assert y.dtype == y_ref.dtype == torch.bfloat16
    y.float().sum().backward()
    assert f.weight.grad.dtype == torch.float32  # master weights stay float32


def test_autocast_grouped_experts():
    ex = f46.F46GroupedExperts(64, 32, 4)
    x = torch.randn(10, 64)
    counts = torch.tensor([3, 0, 5, 2])
    assert ex(x, counts).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert ex(x, counts).dtype == torch.bfloat16
