"""convert_model on transformers 4.x-style ModuleList experts.

Only one transformers version can be installed (5.x, whose MoE models keep fused experts), so
this file builds a small stand-in written after transformers 4.x's Mixtral sparse MoE block:
a `gate` nn.Linear router, an nn.ModuleList of SwiGLU expert MLPs (w1, w2, w3, act_fn), softmax
top-k routing renormalised over the k picks, a Python loop over the experts, and the
(hidden_states, router_logits) return. The converted block must run all experts in grouped
GEMMs (no per-expert loop) on the experts' own parameters."""

import copy

import f46
import pytest
import torch
import torch.nn.functional as F
from convert_helpers import (
    assert_state_dict_round_trips,
    assert_trains_all,
    converted_names,
    emulate_linears,
    rel_err,
)
from f46.experts import routing as f46_routing
from torch import nn

RECIPE = f46.Recipe()
VOCAB, DIM, FFN, E, TOP_K = 96, 64, 32, 4, 2


class Top2MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Linear(DIM, FFN, bias=False)
        self.w2 = nn.Linear(FFN, DIM, bias=False)
        self.w3 = nn.Linear(DIM, FFN, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.w2(self.act_fn(self.w1(x)) * self.w3(x))


class SparseMoeBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_experts, self.top_k, self.jitter_noise = E, TOP_K, 0.0
        self.gate = nn.Linear(DIM, E, bias=False)
        self.experts = nn.ModuleList([Top2MLP() for _ in range(E)])

    def forward(self, hidden_states):
        b, s, d = hidden_states.shape
        x = hidden_states.view(-1, d)
        router_logits = self.gate(x)
        weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        weights, selected = torch.topk(weights, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        weights = weights.to(x.dtype)
        out = torch.zeros_like(x)
        mask = F.one_hot(selected, num_classes=self.num_experts).permute(2, 1, 0)
        for e in range(self.num_experts):
            idx, top_x = torch.where(mask[e])
            y = self.experts[e](x[top_x]) * weights[top_x, idx, None]
            out.index_add_(0, top_x, y.to(x.dtype))
        return out.reshape(b, s, d), router_logits


class RMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(DIM))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(), RMSNorm()
        self.proj = nn.Linear(DIM, DIM, bias=False)
        self.block_sparse_moe = SparseMoeBlock()

    def forward(self, h):
        h = h + self.proj(self.norm1(h))
        return h + self.block_sparse_moe(self.norm2(h))[0]


class TinyMoeLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList([Layer(), Layer()])
        self.norm = RMSNorm()
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, ids):
        h = self.embed_tokens(ids)
        for layer in self.layers:
            h = layer(h)
        return self.lm_head(self.norm(h))


def build(seed=0):
    torch.manual_seed(seed)
    return TinyMoeLM()


def tokens(seed=0):
    return torch.randint(0, VOCAB, (2, 16), generator=torch.Generator().manual_seed(seed))


def loss_fn(x):
    return lambda m: F.cross_entropy(m(x)[:, :-1].reshape(-1, VOCAB), x[:, 1:].reshape(-1))


def test_conversion_is_grouped_and_keeps_the_router():
    model = build()
    gates = [blk.block_sparse_moe.gate for blk in model.layers]
    model, rep = f46.convert_model(model, RECIPE, report=True)
    assert rep.projection_share >= 0.99, str(rep)
    for blk, gate in zip(model.layers, gates):
        moe = blk.block_sparse_moe
        assert type(moe).__name__ == "NVFP4SparseMoeBlock" and isinstance(moe, SparseMoeBlock)
        assert moe.gate is gate and type(gate) is nn.Linear
        assert all(type(lin) is nn.Linear for e in moe.experts for lin in (e.w1, e.w2, e.w3))
    kinds = {e.name: e.kind for e in rep.kept}
    assert kinds["layers.0.block_sparse_moe.gate"] == "router"
    _, again = f46.convert_model(model, RECIPE, report=True)  # idempotent, same shares
    assert {e.kind for e in again.converted} == {"converted before"}
    assert (again.nvfp4_numel, again.matmul_numel) == (rep.nvfp4_numel, rep.matmul_numel)
    # one grouped GEMM per projection (gate, up, down) per layer; the expert MLPs never run
    calls = []
    real, real_pair = f46_routing.grouped_mm, f46_routing.grouped_mm_pair

    def spy(*a, **k):
        calls.append(a[1].shape)
        return real(*a, **k)

    def spy_pair(*a, **k):  # gate and up: one call with x quantized once
        calls.extend([a[1].shape, a[2].shape])
        return real_pair(*a, **k)

    f46_routing.grouped_mm = spy
    f46_routing.grouped_mm_pair = spy_pair

    def refuse(*_):
        raise AssertionError("an expert MLP ran on its own")

    hooks = [
        e.register_forward_pre_hook(refuse)
        for blk in model.layers
        for e in blk.block_sparse_moe.experts
    ]
    try:
        with torch.no_grad():
            model(tokens())
    finally:
        f46_routing.grouped_mm, f46_routing.grouped_mm_pair = real, real_pair
        for h in hooks:
            h.remove()
    assert calls == [(E, FFN, DIM), (E, FFN, DIM), (E, DIM, FFN)] * 2


def test_forward_matches_emulation():
    """Logits equal the stand-in's own loop with every converted linear (experts included)
    replaced by f46 quantize -> dequantize -> float64 product: the expert loop feeds each
    expert exactly its tokens, so its per-tensor amax is the grouped GEMM's per-group one."""
    model = build().eval()
    ref = copy.deepcopy(model)
    _, rep = f46.convert_model(model, RECIPE, report=True)
    names = converted_names(rep, "F46Linear")
    for i in range(len(ref.layers)):
        for e in range(E):
            names += [f"layers.{i}.block_sparse_moe.experts.{e}.{w}" for w in ("w1", "w2", "w3")]
    emulate_linears(ref, names, RECIPE)
    x = tokens()
    with torch.no_grad():
        y, y_ref = model(x), ref(x)
    assert rel_err(y, y_ref) <= 1e-5


def test_training_with_an_optimizer_built_before_conversion():
    model = build().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    params = dict(model.named_parameters())
    f46.convert_model(model, RECIPE)
    assert dict(model.named_parameters()) == params
    experts = {n: p for n, p in model.named_parameters() if ".experts." in n}
    routers = {n: p for n, p in model.named_parameters() if ".gate." in n}
    assert_trains_all(model, opt, loss_fn(tokens(1)), experts, routers, before)


def test_state_dict_round_trips():
    assert_state_dict_round_trips(build, tokens, RECIPE)


@pytest.mark.parametrize("bias", [False, True])
def test_unrecognised_blocks_fall_back_to_linears(bias):
    """Expert MLPs with biases are not 4.x sparse MoE experts: no grouped block, each expert
    linear converted on its own."""
    model = build()
    for blk in model.layers:
        for e in blk.block_sparse_moe.experts:
            if bias:
                e.w1 = nn.Linear(DIM, FFN, bias=True)
    f46.convert_model(model, RECIPE)
    moe = model.layers[0].block_sparse_moe
    assert (type(moe) is SparseMoeBlock) == bias
    if bias:
        assert isinstance(moe.experts[0].w1, f46.F46Linear)
