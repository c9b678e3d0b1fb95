"""convert_model on torchtitan 0.3 MoE layers (router, token dispatcher, GroupedExperts with
w1_EFD / w2_EDF / w3_EFD, shared experts) inside a tiny language model built from configs."""

import copy
from functools import partial

import f46
import pytest
import torch
import torch.nn.functional as F
from convert_helpers import (
    assert_state_dict_round_trips,
    assert_trains_all,
    converted_names,
    emulate_linears,
    emulated_grouped_mm,
    rel_err,
)
from torch import nn

pytest.importorskip("torchtitan")
cu = pytest.importorskip("torchtitan.models.common.config_utils")
from torchtitan.models.common.linear import Linear  # noqa: E402
from torchtitan.models.common.moe import GroupedExperts  # noqa: E402

# torchtitan's router asks CPU autocast for float32, which CPU autocast declines with a warning
pytestmark = pytest.mark.filterwarnings("ignore:In CPU autocast:UserWarning")

RECIPE = f46.Recipe()
VOCAB, DIM, FFN, E, TOP_K = 96, 64, 32, 4, 2
_INIT = {"weight": partial(nn.init.normal_, std=0.05), "bias": nn.init.zeros_}
_EXPERT_INIT = {n: partial(nn.init.normal_, std=0.05) for n in ("w1_EFD", "w2_EDF", "w3_EFD")}


def moe_config():
    return cu.make_moe_config(
        num_experts=E,
        router=cu.make_router_config(
            dim=DIM,
            num_experts=E,
            gate_param_init=_INIT,
            top_k=TOP_K,
            score_func="softmax",
            route_norm=True,
        ),
        routed_experts=cu.make_routed_experts_config(
            dim=DIM,
            hidden_dim=FFN,
            num_experts=E,
            top_k=TOP_K,
            param_init=_EXPERT_INIT,
            comm_backend="standard",
        ),
        shared_experts=cu.make_ffn_config(
            dim=DIM, hidden_dim=FFN, w1_param_init=_INIT, w2w3_param_init=_INIT
        ),
    )


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.wo = Linear.Config(in_features=DIM, out_features=DIM, param_init=_INIT).build()
        self.moe = moe_config().build()

    def forward(self, h):
        h = h + self.wo(F.rms_norm(h, (DIM,)))
        return h + self.moe(F.rms_norm(h, (DIM,)))


class TinyTitanLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_embeddings = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList([Block(), Block()])
        self.output = Linear.Config(in_features=DIM, out_features=VOCAB, param_init=_INIT).build()

    def forward(self, ids):
        h = self.tok_embeddings(ids)
        for blk in self.layers:
            h = blk(h)
        return self.output(F.rms_norm(h, (DIM,)))


def build(seed=0):
    torch.manual_seed(seed)
    m = TinyTitanLM()
    for blk in m.layers:
        blk.wo.init_states()
        blk.moe.init_states()
    m.output.init_states()
    return m


def tokens(seed=0):
    return torch.randint(0, VOCAB, (2, 16), generator=torch.Generator().manual_seed(seed))


def loss_fn(x):
    return lambda m: F.cross_entropy(m(x)[:, :-1].reshape(-1, VOCAB), x[:, 1:].reshape(-1))


def test_conversion_keeps_names_objects_and_router():
    model = build()
    params = dict(model.named_parameters())
    experts = [blk.moe.routed_experts.inner_experts for blk in model.layers]
    model, rep = f46.convert_model(model, RECIPE, report=True)
    assert dict(model.named_parameters()) == params  # names and Parameter objects unchanged
    assert rep.projection_share >= 0.99, str(rep)
    for blk, ex in zip(model.layers, experts):
        inner = blk.moe.routed_experts.inner_experts
        assert inner is ex and isinstance(inner, GroupedExperts)
        assert type(inner).__name__ == "NVFP4GroupedExperts" and inner.f46_recipe is RECIPE
        assert type(blk.moe.router.gate) is Linear  # router kept
        assert isinstance(blk.moe.shared_experts.w1, f46.F46Linear)
    kinds = {e.name: e.kind for e in rep.kept}
    assert kinds["layers.0.moe.router.gate"] == "router" and kinds["output"] == "head"


def test_forward_matches_emulation():
    """Logits equal the unconverted model with torchtitan's `_grouped_mm` and the converted
    linears replaced by f46 quantize -> dequantize -> float64 products (torchtitan rounds the
    expert GEMMs' operands and outputs to bf16 itself; the emulation does the same)."""
    model = build().eval()
    ref = copy.deepcopy(model)
    _, rep = f46.convert_model(model, RECIPE, report=True)
    emulate_linears(ref, converted_names(rep, "F46Linear"), RECIPE)
    for blk in ref.layers:
        blk.moe.routed_experts.inner_experts._grouped_mm = lambda *, A, B_t, offs: (
            emulated_grouped_mm(A, B_t.transpose(-2, -1), offs, RECIPE)
        )
    x = tokens()
    with torch.no_grad():
        y, y_ref = model(x), ref(x)
    assert rel_err(y, y_ref) <= 1e-5


def test_training_with_an_optimizer_built_before_conversion():
    model = build().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    f46.convert_model(model, RECIPE)
    params = dict(model.named_parameters())
    experts = {n: p for n, p in params.items() if "inner_experts" in n}
    routers = {n: p for n, p in params.items() if "router" in n}
    assert_trains_all(model, opt, loss_fn(tokens(1)), experts, routers, before)


def test_state_dict_round_trips():
    assert_state_dict_round_trips(build, tokens, RECIPE)


def test_an_experts_module_itself_converts():
    ex = GroupedExperts.Config(
        dim=DIM, hidden_dim=FFN, num_experts=E, param_init=_EXPERT_INIT
    ).build()
    ex.init_states()
    w1 = ex.w1_EFD
    _, rep = f46.convert_model(ex, RECIPE, report=True)
    assert type(ex).__name__ == "NVFP4GroupedExperts" and ex.w1_EFD is w1
    assert rep.converted[0].name == "" and rep.projection_share == 1.0
    x = torch.randn(10, DIM)
    counts = torch.tensor([3, 0, 5, 2])
    with torch.no_grad():
        y = ex(x, counts)
    offs = torch.cumsum(counts, 0).to(torch.int32)
    h = F.silu(emulated_grouped_mm(x.bfloat16(), ex.w1_EFD.bfloat16(), offs, RECIPE))
    h = h * emulated_grouped_mm(x.bfloat16(), ex.w3_EFD.bfloat16(), offs, RECIPE)
    ref = emulated_grouped_mm(h, ex.w2_EDF.bfloat16(), offs, RECIPE).float()
    assert rel_err(y, ref) <= 1e-5
