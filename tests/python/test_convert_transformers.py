"""convert_model on Hugging Face transformers 5.x MoE models (tiny, built from configs, nothing
downloaded): experts on f46's grouped GEMM through the fused-experts interface, routers kept."""

import copy
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")

import f46  # noqa: E402
from convert_helpers import (  # noqa: E402
    converted_names,
    emulate_linears,
    emulated_grouped_mm,
    rel_err,
    train_steps,
)
from f46.integrations import transformers as f46_hf  # noqa: E402

RECIPE = f46.Recipe()
MODELS = ["mixtral", "qwen3_moe", "qwen2_moe", "olmoe", "deepseek_v3", "gpt_oss"]
VOCAB = 96


def build(name: str, seed: int = 0):
    """A 2-layer model of the family, hidden 64, 4 experts of width 32, top-2, float32."""
    common = dict(
        vocab_size=VOCAB,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    t = transformers
    if name == "mixtral":
        cfg = t.MixtralConfig(**common, intermediate_size=32, num_local_experts=4, head_dim=16)
    elif name == "qwen3_moe":
        cfg = t.Qwen3MoeConfig(
            **common, intermediate_size=64, moe_intermediate_size=32, num_experts=4, head_dim=16
        )
    elif name == "qwen2_moe":
        cfg = t.Qwen2MoeConfig(
            **common,
            intermediate_size=64,
            moe_intermediate_size=32,
            shared_expert_intermediate_size=32,
            num_experts=4,
        )
    elif name == "olmoe":
        cfg = t.OlmoeConfig(**common, intermediate_size=32, num_experts=4)
    elif name == "deepseek_v3":
        common["num_key_value_heads"] = 4  # multi-head latent attention: one kv head per head
        cfg = t.DeepseekV3Config(
            **common,
            intermediate_size=64,
            moe_intermediate_size=32,
            n_routed_experts=4,
            n_shared_experts=1,
            n_group=1,
            topk_group=1,
            first_k_dense_replace=1,
            q_lora_rank=32,
            kv_lora_rank=32,
            qk_rope_head_dim=16,
            qk_nope_head_dim=16,
            v_head_dim=16,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        )
    elif name == "gpt_oss":
        cfg = t.GptOssConfig(
            **common, intermediate_size=32, num_local_experts=4, head_dim=16, sliding_window=8
        )
    cfg.num_experts_per_tok = 2
    torch.manual_seed(seed)
    return t.AutoModelForCausalLM.from_config(cfg)


def tokens(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, VOCAB, (2, 16), generator=g)


def router_params(model):
    """Parameters of the routers (…Router modules) and gate linears (Qwen2-MoE's
    shared_expert_gate)."""
    out = {}
    for name, m in model.named_modules():
        if "router" in type(m).__name__.lower() or name.endswith("shared_expert_gate"):
            out.update({f"{name}.{n}": p for n, p in m.named_parameters()})
    return out


def expert_params(model):
    return {n: p for n, p in model.named_parameters() if ".experts." in n and p.dim() == 3}


@pytest.mark.parametrize("name", MODELS)
def test_conversion_covers_experts_and_projections(name):
    model = build(name)
    routers = {n: (p, type(p)) for n, p in router_params(model).items()}
    router_modules = {
        n: type(m) for n, m in model.named_modules() if n.endswith(("gate", "router"))
    }
    model, rep = f46.convert_model(model, RECIPE, report=True)
    assert rep.projection_share >= 0.99, str(rep)
    experts = [m for m in model.modules() if f46_hf.is_fused_experts(m)]
    assert len(experts) >= 1
    for m in experts:
        assert type(m).__name__.startswith("NVFP4") and m.f46_recipe is RECIPE
    # routers and gates untouched: same modules' classes, same Parameter objects
    for n, cls in router_modules.items():
        assert type(model.get_submodule(n)) is cls, n
    after = router_params(model)
    for n, (p, _) in routers.items():
        assert after[n] is p
    # every nn.Linear left is a router / gate or the head, each with its reason
    kept = {e.name: e.kind for e in rep.kept}
    for n, m in model.named_modules():
        if type(m) is torch.nn.Linear:
            assert kept.get(n) in ("router", "head"), (n, kept.get(n))
    assert kept["lm_head"] == "head"


@pytest.mark.parametrize("name", MODELS)
def test_forward_matches_emulation(name, monkeypatch):
    """The converted model's logits equal the unconverted model run through transformers' own
    grouped experts path, with every converted matmul replaced by f46 quantize -> dequantize
    -> float64 product."""
    model = build(name).eval()
    ref = copy.deepcopy(model)
    _, rep = f46.convert_model(model, RECIPE, report=True)
    emulate_linears(ref, converted_names(rep, "F46Linear"), RECIPE)

    def grouped(input, weight, offs):  # transformers: weight (E, K, N)
        a = input.to(weight.dtype)
        return emulated_grouped_mm(a, weight.transpose(-2, -1), offs, RECIPE)

    monkeypatch.setattr(transformers.integrations.moe, "_grouped_mm", grouped)
    ref.set_experts_implementation("grouped_mm")
    x = tokens()
    with torch.no_grad():
        y = model(input_ids=x).logits
        y_ref = ref(input_ids=x).logits
    assert torch.isfinite(y).all()
    assert rel_err(y, y_ref) <= 1e-5


@pytest.mark.parametrize("name", MODELS)
def test_training_with_an_optimizer_built_before_conversion(name):
    model = build(name).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    params = dict(model.named_parameters())
    f46.convert_model(model, RECIPE)
    assert dict(model.named_parameters()) == params  # same names, same Parameter objects
    x = tokens(1)
    losses, hit = train_steps(
        model,
        opt,
        lambda m: m(input_ids=x, labels=x).loss,
        expert_params(model),
        router_params(model),
    )
    for n, h in hit.items():
        assert h.all(), f"{n}: experts without gradient in 10 steps: {h}"
    for n, p in model.named_parameters():
        if n in expert_params(model) or n in router_params(model) or "proj" in n:
            assert not torch.equal(p.detach(), before[n]), f"{n} not updated by the optimizer"


@pytest.mark.parametrize("name", MODELS)
def test_state_dict_round_trips(name):
    model = build(name).eval()
    keys = list(model.state_dict())
    f46.convert_model(model, RECIPE)
    sd = model.state_dict()
    assert list(sd) == keys
    other = f46.convert_model(build(name, seed=1).eval(), RECIPE)
    other.load_state_dict(sd)
    x = tokens()
    with torch.no_grad():
        assert torch.equal(model(input_ids=x).logits, other(input_ids=x).logits)
    build(name, seed=2).load_state_dict(sd)  # and an unconverted model loads it as is


def test_experts_implementation_registered():
    """After conversion "f46" is an experts implementation of transformers: a whole model can
    switch to it (default Recipe for modules convert_model did not touch)."""
    model = build("mixtral").eval()
    f46.convert_model(model, RECIPE)
    other = build("mixtral").eval()
    other.set_experts_implementation("f46")
    for blk_a, blk_b in zip(model.model.layers, other.model.layers):
        blk_b.self_attn = blk_a.self_attn  # converted attention in both
    x = tokens()
    with torch.no_grad():
        assert torch.equal(model(input_ids=x).logits, other(input_ids=x).logits)


def test_tied_embeddings_stay_tied():
    model = build("qwen3_moe")
    model.config.tie_word_embeddings = True
    model.tie_weights()
    emb = model.model.embed_tokens.weight
    assert model.lm_head.weight is emb
    f46.convert_model(model, RECIPE, head_names=())
    assert isinstance(model.lm_head, f46.F46Linear) and model.lm_head.weight is emb
    x = tokens()
    model(input_ids=x, labels=x).loss.backward()
    assert torch.isfinite(emb.grad).all()


@pytest.mark.parametrize("name", ["mixtral", "gpt_oss"])
def test_autocast_dtypes_follow_the_unconverted_model(name):
    model, ref = build(name).eval(), build(name).eval()
    f46.convert_model(model, RECIPE)
    x = tokens()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        y, y_ref = model(input_ids=x).logits, ref(input_ids=x).logits
        attn = model.model.layers[0].self_attn
        h = torch.randn(1, 4, 64)
        assert attn.q_proj(h).dtype == torch.bfloat16  # as nn.Linear under autocast
    assert y.dtype == y_ref.dtype and torch.isfinite(y).all()
    assert rel_err(y, y_ref) < 0.2  # NVFP4 against bf16: close, not equal


def test_whole_model_pickles_and_deepcopies(tmp_path):
    model = f46.convert_model(build("gpt_oss").eval(), RECIPE)
    x = tokens()
    with torch.no_grad():
        y = model(input_ids=x).logits
    torch.save(model, tmp_path / "m.pt")
    for other in (torch.load(tmp_path / "m.pt", weights_only=False), copy.deepcopy(model)):
        experts = other.model.layers[0].mlp.experts
        assert type(experts) is type(model.model.layers[0].mlp.experts)
        with torch.no_grad():
            assert torch.equal(other(input_ids=x).logits, y)


def test_converted_experts_trace_in_one_graph():
    """No graph break on the grouped path (token grouping, GEMMs, gpt-oss's gate, combine)."""
    model = f46.convert_model(build("gpt_oss").eval(), RECIPE)
    experts = model.model.layers[0].mlp.experts
    g = torch.Generator().manual_seed(0)
    x, idx, w = torch.randn(16, 64), torch.randint(0, 4, (16, 2), generator=g), torch.rand(16, 2)
    with torch.no_grad():
        ref = experts(x, idx, w)
        y = torch.compile(experts, backend="eager", fullgraph=True)(x, idx, w)
    assert torch.equal(y, ref)
