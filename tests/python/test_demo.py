"""The training demo (python -m f46.demo): a tiny run in all three modes."""

from __future__ import annotations

import json
import math
import os

import f46
import pytest
import torch
from f46.demo import train as demo
from f46.demo.data import VOCAB_SIZE, BatchSampler, load_corpus
from f46.demo.model import ModelConfig, MoELM

STEPS = 16


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("demo"))
    cfg = demo.PRESETS["tiny"]
    cfg = demo.dataclasses.replace(cfg, steps=STEPS)
    doc = demo.run(cfg, list(demo.MODES), torch.device("cpu"), seed=0, out_dir=out, progress=False)
    return out, doc


def test_all_modes_train_and_losses_decrease(tiny_run):
    _, doc = tiny_run
    assert list(doc["modes"]) == ["bf16", "nvfp4", "nvfp4-4/6"]
    for mode, r in doc["modes"].items():
        losses = r["train_loss"]
        assert len(losses) == STEPS
        assert all(math.isfinite(v) for v in losses), (mode, losses)
        first, last = sum(losses[:4]) / 4, sum(losses[-4:]) / 4
        assert last < first - 0.5, (mode, first, last)
        # Initial loss is near uniform over bytes; training must beat it clearly.
        assert abs(losses[0] - math.log(VOCAB_SIZE)) < 0.5, (mode, losses[0])
        vals = [v for _, v in r["val_loss"]]
        assert vals and all(math.isfinite(v) for v in vals)
        assert vals[-1] < math.log(VOCAB_SIZE) - 1.0, (mode, vals)
        assert r["wall_time_s"] > 0


def test_nvfp4_modes_use_f46_modules(tiny_run):
    _, doc = tiny_run
    cfg = demo.PRESETS["tiny"].model
    assert doc["modes"]["bf16"]["f46_modules"] == {"F46Linear": 0, "F46GroupedExperts": 0}
    for mode in ("nvfp4", "nvfp4-4/6"):
        n = doc["modes"][mode]["f46_modules"]
        # qkv + proj per layer; one grouped-experts module per layer (router/head stay BF16).
        assert n == {"F46Linear": 2 * cfg.num_layers, "F46GroupedExperts": cfg.num_layers}
    # Quantization changes the numbers: the NVFP4 runs do not reproduce the BF16 losses, and
    # the two recipes differ from each other.
    bf16 = doc["modes"]["bf16"]["train_loss"]
    nv = doc["modes"]["nvfp4"]["train_loss"]
    fs = doc["modes"]["nvfp4-4/6"]["train_loss"]
    assert bf16 != nv and nv != fs
    assert doc["modes"]["nvfp4"]["recipe"]["err_mode"] == "all6"
    assert doc["modes"]["nvfp4-4/6"]["recipe"]["err_mode"] == "mae"


def test_quant_error_reported_per_layer(tiny_run):
    _, doc = tiny_run
    assert doc["modes"]["bf16"]["quant_error"] is None
    for mode in ("nvfp4", "nvfp4-4/6"):
        qe = doc["modes"][mode]["quant_error"]
        names = set(qe)
        assert "blocks.0.attn.qkv" in names and "blocks.0.moe.experts.w2" in names
        for layer, v in qe.items():
            for kind in ("weight", "input"):
                # NVFP4 relative MSE of Gaussian-like data is ~1e-2; 0 or >0.1 means a bug.
                assert 1e-4 < v[kind] < 0.1, (mode, layer, kind, v[kind])
    table = demo.format_table(doc)
    assert "nvfp4-4/6" in table and "blocks.0.moe.experts.w1" in table


def test_outputs_written(tiny_run):
    out, doc = tiny_run
    png = os.path.join(out, "loss_curves.png")
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(png) > 10_000
    with open(os.path.join(out, "results.json")) as f:
        saved = json.load(f)
    assert saved["modes"]["nvfp4"]["final_val_loss"] == doc["modes"]["nvfp4"]["final_val_loss"]
    assert saved["config"]["steps"] == STEPS


def test_activation_error_zero_on_grid_and_positive_off_grid():
    """The error measurement itself: E2M1 grid values whose blocks all reach 6 quantize
    exactly under plain NVFP4 (bound 448: decode scale 1), random data does not."""
    g = torch.Generator().manual_seed(1)
    grid = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
    x = grid[torch.randint(0, 8, (32, 64), generator=g)]
    x = x * torch.where(torch.rand(32, 64, generator=g) < 0.5, -1.0, 1.0)
    x.view(32, 4, 16)[:, :, 0] = 6.0  # every 1x16 block has amax 6
    recipe = f46.Recipe.nvfp4()
    assert demo.activation_error(x, recipe) == 0.0
    y = torch.randn(32, 64, generator=g)
    assert demo.activation_error(y, recipe) > 1e-3
    offs = torch.tensor([8, 8, 32], dtype=torch.int32)  # per-group amax path, empty group
    assert demo.activation_error(x, recipe, offs) == 0.0
    assert demo.weight_error(torch.randn(32, 64, generator=g), recipe) > 1e-3


def test_same_seed_same_data_and_init():
    corpus = load_corpus()
    a = BatchSampler(corpus["train"], 4, 32, seed=3)
    b = BatchSampler(corpus["train"], 4, 32, seed=3)
    for _ in range(3):
        xa, ya = a.next()
        xb, yb = b.next()
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
        assert torch.equal(xa[:, 1:], ya[:, :-1])  # targets are inputs shifted by one
    cfg = demo.PRESETS["tiny"]
    m1 = demo.build_model("bf16", cfg, torch.device("cpu"), seed=5)
    m2 = demo.build_model("nvfp4", cfg, torch.device("cpu"), seed=5)
    w1 = dict(m1.named_parameters())
    for name, p in m2.named_parameters():
        assert torch.equal(p, w1[name]), name


def test_grouped_experts_match_dense_loop():
    """MoE routing: the sorted grouped experts equal a per-token loop over its top-k."""
    torch.manual_seed(0)
    cfg = ModelConfig(
        seq_len=8, dim=32, num_layers=1, num_heads=2, num_experts=4, top_k=2, ffn_dim=32
    )
    moe = MoELM(cfg).blocks[0].moe
    x = torch.randn(2, 8, 32)
    out, aux = moe(x)
    xt = x.reshape(-1, 32)
    probs = torch.softmax(moe.router(xt), -1)
    w, e = torch.topk(probs, 2, -1)
    w = w / w.sum(-1, keepdim=True)
    ex = moe.experts
    ref = torch.zeros_like(xt)
    for t in range(xt.shape[0]):
        for j in range(2):
            k = e[t, j]
            h = torch.nn.functional.silu(xt[t] @ ex.w1[k].t()) * (xt[t] @ ex.w3[k].t())
            ref[t] += w[t, j] * (h @ ex.w2[k].t())
    torch.testing.assert_close(out.reshape(-1, 32), ref, rtol=1e-5, atol=1e-6)
    assert math.isfinite(aux.item()) and aux.item() > 0


def test_cli_main(tmp_path, capsys):
    doc = demo.main(
        [
            "--preset",
            "tiny",
            "--steps",
            "2",
            "--modes",
            "nvfp4",
            "--out",
            str(tmp_path),
            "--no-progress",
            "--device",
            "cpu",
        ]
    )
    assert list(doc["modes"]) == ["nvfp4"]
    printed = capsys.readouterr().out
    assert "final train" in printed and "nvfp4" in printed
    assert os.path.exists(tmp_path / "loss_curves.png")
    with pytest.raises(SystemExit):
        demo.main(["--modes", "fp8", "--out", str(tmp_path)])
