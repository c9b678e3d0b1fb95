"""The training demo (python -m f46.demo): the verdict rule on synthetic losses, the corpus
split, and a tiny run over two seeds in all three modes."""

from __future__ import annotations

import dataclasses
import json
import math
import os

import f46
import pytest
import torch
from f46.demo import data as demo_data
from f46.demo import stats
from f46.demo import train as demo
from f46.demo.data import VOCAB_SIZE, BatchSampler, load_corpus
from f46.demo.model import ModelConfig, MoELM
from f46.demo.report import format_report, summarize

STEPS = 16
SEEDS = [0, 1]


# ---- the verdict rule (f46.demo.stats) ---------------------------------------------------
def test_t975_table():
    assert stats.t975(1) == pytest.approx(12.706)
    assert stats.t975(2) == pytest.approx(4.303)
    assert stats.t975(30) == pytest.approx(2.042)
    assert stats.t975(31) == pytest.approx(2.040, abs=2e-3)
    assert stats.t975(1000) == pytest.approx(1.962, abs=2e-3)
    assert all(stats.t975(d) > stats.t975(d + 1) for d in range(1, 60))
    with pytest.raises(ValueError):
        stats.t975(0)


def test_sample_mean_and_interval():
    s = stats.Sample.of([1.0, 2.0, 3.0])
    assert (s.n, s.mean, s.sd, s.min, s.max) == (3, 2.0, 1.0, 1.0, 3.0)
    assert s.se == pytest.approx(1 / math.sqrt(3))
    assert s.ci == pytest.approx(4.303 / math.sqrt(3))
    one = stats.Sample.of([0.5])
    assert one.mean == 0.5 and math.isnan(one.ci) and not one.excludes_zero()


def test_sample_interval_decides():
    assert not stats.Sample.of([1.0, 2.0, 3.0]).excludes_zero()  # 2 < 2.484
    assert stats.Sample.of([1.9, 2.0, 2.1]).excludes_zero()
    assert not stats.Sample.of([-0.1, 0.2, 0.0, -0.05]).excludes_zero()


def _losses(gap, gain, noise_gap, noise_gain, n=4):
    """Synthetic per-seed final losses: bf16 varies by seed, nvfp4 = bf16 + gap + noise,
    4/6 = nvfp4 - gain - noise (deterministic +/- noise patterns)."""
    pat = [1.0, -1.0, 0.5, -0.5, 0.0, 1.0, -1.0][:n]
    pat2 = [0.5, 1.0, -1.0, -0.5, 0.0, -1.0, 1.0][:n]
    bf16 = [2.0 + 0.03 * p for p in pat2]
    nv = [b + gap + noise_gap * p for b, p in zip(bf16, pat)]
    fs = [v - gain - noise_gain * p for v, p in zip(nv, pat2)]
    return bf16, nv, fs


def test_verdict_clearly_better():
    v = stats.verdict(*_losses(gap=0.05, gain=0.02, noise_gap=0.002, noise_gain=0.002))
    assert v.kind == "closes"
    assert v.closed == pytest.approx(0.4, abs=0.03)
    assert 0 < v.closed_ci < 0.2
    assert v.text.startswith("4/6 closes 40% of NVFP4's gap to BF16 (4 seeds, +/- ")
    assert v.gap.mean == pytest.approx(0.05) and v.gain.mean == pytest.approx(0.02)


def test_verdict_clearly_worse():
    v = stats.verdict(*_losses(gap=0.05, gain=-0.03, noise_gap=0.002, noise_gain=0.002))
    assert v.kind == "widens"
    assert v.closed == pytest.approx(-0.6, abs=0.03)
    assert v.text.startswith("4/6 widens NVFP4's gap to BF16 by 60% (4 seeds")


def test_verdict_indistinguishable():
    v = stats.verdict(*_losses(gap=0.05, gain=0.004, noise_gap=0.002, noise_gain=0.01))
    assert v.kind == "indistinguishable"
    assert v.text.startswith("not distinguishable at this scale")
    assert "95% t-interval includes 0" in v.text
    # the gap is measurable, so the fraction closed is stated with its interval (around 0.08)
    assert f"4/6 closes {100 * v.closed:.0f}% +/- {100 * v.closed_ci:.0f}% of it" in v.text
    assert v.closed == pytest.approx(0.08, abs=0.05) and v.closed_ci > abs(v.closed)


def test_verdict_no_gap_to_close():
    # 4/6 "recovers" a lot, but NVFP4 itself is not measurably worse than BF16.
    v = stats.verdict(*_losses(gap=0.002, gain=0.01, noise_gap=0.01, noise_gain=0.0001))
    assert v.kind == "no_gap"
    assert v.text.startswith("not distinguishable at this scale")
    v = stats.verdict(*_losses(gap=-0.05, gain=0.01, noise_gap=0.001, noise_gain=0.001))
    assert v.kind == "no_gap"  # NVFP4 clearly better than BF16: nothing to close either


def test_verdict_one_seed_and_bad_input():
    v = stats.verdict([2.0], [2.1], [2.05])
    assert v.kind == "one_seed" and v.n == 1
    assert v.closed == pytest.approx(0.5) and math.isnan(v.closed_ci)
    with pytest.raises(ValueError):
        stats.verdict([2.0, 2.1], [2.1], [2.0])
    with pytest.raises(ValueError):
        stats.verdict([], [], [])


def test_closed_fraction_delta_method():
    # gain exactly proportional to gap in every seed: the fraction is known without error.
    gap = [0.04, 0.05, 0.06, 0.03]
    r, ci = stats.closed_fraction(gap, [0.25 * g for g in gap])
    assert r == pytest.approx(0.25) and ci == pytest.approx(0.0, abs=1e-9)
    # independent noise in the gain widens the interval.
    r, ci = stats.closed_fraction(gap, [0.01, 0.02, 0.0125, 0.01])
    assert r == pytest.approx(0.0525 / 0.18) and ci > 0.1


# ---- corpus ------------------------------------------------------------------------------
def test_corpus_split_by_file(tmp_path, monkeypatch):
    for i in range(200):
        (tmp_path / f"mod_{i:03d}.py").write_text(f"# file {i:03d}\n" + "x = 1\n" * 50)
    (tmp_path / "notes.txt").write_text("not python")
    monkeypatch.setattr(demo_data, "source_roots", lambda: [("t", str(tmp_path))])
    c = demo_data.python_corpus(max_bytes=1 << 30)
    assert c["files"]["train"] + c["files"]["val"] == 200
    assert 2 <= c["files"]["val"] <= 25  # ~5% of 200
    for i in range(200):
        marker = f"# file {i:03d}\n".encode()
        assert (marker in c["train"]) != (marker in c["val"]), i  # each file in one split
    assert b"not python" not in c["train"] + c["val"]
    again = demo_data.python_corpus(max_bytes=1 << 30)
    assert again["train"] == c["train"] and again["val"] == c["val"]  # deterministic
    small = demo_data.python_corpus(max_bytes=20_000)
    assert 20_000 <= len(small["train"]) + len(small["val"]) < 25_000


def test_default_corpus_is_installed_python_source():
    c = load_corpus(max_bytes=2 << 20)
    assert c["num_bytes"] >= 2 << 20 and len(c["val"]) > 10_000
    assert c["files"]["train"] > 10 and c["files"]["val"] > 0
    assert b"def " in bytes(c["train"][:200_000].tolist())
    assert len(c["sha256"]) == 12 and load_corpus(max_bytes=2 << 20)["sha256"] == c["sha256"]


# ---- one tiny run over two seeds ---------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("demo"))
    cfg = demo.PRESETS["tiny"].with_steps(STEPS)
    logged, seen_after = [], []

    def log(s):
        logged.append(s)
        if s.startswith("after seed"):  # results.json is rewritten before this line
            with open(os.path.join(out, "results.json")) as f:
                seen_after.append(json.load(f)["seeds"])

    doc = demo.run(
        cfg, list(demo.MODES), torch.device("cpu"), out, seeds=SEEDS, bars=False, log=log
    )
    return out, doc, logged, seen_after


def test_all_modes_and_seeds_train(tiny_run):
    _, doc, _, _ = tiny_run
    assert doc["seeds"] == SEEDS and doc["stopped_early"] is None
    assert list(doc["runs"]) == ["bf16", "nvfp4", "nvfp4-4/6"]
    for mode, rs in doc["runs"].items():
        assert [r["seed"] for r in rs] == SEEDS
        for r in rs:
            losses = r["train_loss"]
            assert len(losses) == STEPS and all(math.isfinite(v) for v in losses), mode
            first, last = sum(losses[:4]) / 4, sum(losses[-4:]) / 4
            assert last < first - 0.5, (mode, first, last)
            assert abs(losses[0] - math.log(VOCAB_SIZE)) < 0.5, (mode, losses[0])
            assert r["final_val_loss"] < math.log(VOCAB_SIZE) - 1.0
            assert r["val_loss"][-1][0] == STEPS
            assert r["tokens_per_s"] > 0 and r["timed_steps"] == STEPS - 2
        # Seeds differ: different init and batches give different curves.
        assert rs[0]["train_loss"] != rs[1]["train_loss"]


def test_nvfp4_modes_use_f46_modules(tiny_run):
    _, doc, _, _ = tiny_run
    cfg = demo.PRESETS["tiny"].model
    assert doc["runs"]["bf16"][0]["f46_modules"] == {"F46Linear": 0, "F46GroupedExperts": 0}
    for mode in ("nvfp4", "nvfp4-4/6"):
        n = doc["runs"][mode][0]["f46_modules"]
        assert n == {"F46Linear": 2 * cfg.num_layers, "F46GroupedExperts": cfg.num_layers}
    bf16, nv, fs = (doc["runs"][m][0]["train_loss"] for m in ("bf16", "nvfp4", "nvfp4-4/6"))
    assert bf16 != nv and nv != fs  # quantization changes the numbers, the recipes differ
    # Same init and first batch: the first-step losses agree to the quantization error.
    assert abs(bf16[0] - nv[0]) < 0.05 and abs(nv[0] - fs[0]) < 0.05
    assert doc["runs"]["nvfp4"][0]["recipe"]["err_mode"] == "all6"
    assert doc["runs"]["nvfp4-4/6"][0]["recipe"]["err_mode"] == "mae"


def test_summary_and_verdict_from_the_seeds(tiny_run):
    _, doc, _, _ = tiny_run
    summ = doc["summary"]
    assert summ["n_seeds"] == 2
    val = {m: [r["final_val_loss"] for r in doc["runs"][m]] for m in doc["runs"]}
    d = summ["modes"]["nvfp4"]["val_minus_bf16"]
    diffs = [a - b for a, b in zip(val["nvfp4"], val["bf16"])]
    assert d["mean"] == pytest.approx(sum(diffs) / 2)
    assert d["min"] == pytest.approx(min(diffs)) and d["max"] == pytest.approx(max(diffs))
    assert d["ci"] == pytest.approx(12.706 * abs(diffs[0] - diffs[1]) / 2)
    v = summ["verdict"]
    expected = stats.verdict(val["bf16"], val["nvfp4"], val["nvfp4-4/6"])
    assert v["kind"] == expected.kind and v["text"] == expected.text and v["n"] == 2
    report = format_report(doc)
    assert report.splitlines()[-1] == "verdict: " + v["text"]
    assert "blocks.0.moe.experts.w1" in report and "tokens/s" in report
    assert "+/-" in report and "2 seed(s)" in report


def test_quant_error_reported_per_layer(tiny_run):
    _, doc, _, _ = tiny_run
    assert doc["runs"]["bf16"][0]["quant_error"] is None
    for mode in ("nvfp4", "nvfp4-4/6"):
        for r in doc["runs"][mode]:
            qe = r["quant_error"]
            assert "blocks.0.attn.qkv" in qe and "blocks.0.moe.experts.w2" in qe
            for layer, v in qe.items():
                for kind in ("weight", "input"):
                    # NVFP4 relative MSE of Gaussian-like data is ~1e-2; 0 or >0.1: a bug.
                    assert 1e-4 < v[kind] < 0.1, (mode, layer, kind, v[kind])
        mean = doc["summary"]["modes"][mode]["quant_error"]["blocks.0.attn.qkv"]["input"]
        per_seed = [r["quant_error"]["blocks.0.attn.qkv"]["input"] for r in doc["runs"][mode]]
        assert mean == pytest.approx(sum(per_seed) / 2)


def test_outputs_written_per_seed(tiny_run):
    out, doc, logged, seen_after = tiny_run
    assert seen_after == [[0], [0, 1]]  # results.json rewritten after every seed
    assert any(s.startswith("  seed 1 nvfp4-4/6 step    16/16") for s in logged), logged
    png = os.path.join(out, "loss_curves.png")
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(png) > 10_000

    def no_nan(c):
        raise ValueError(f"non-JSON constant {c}")

    with open(os.path.join(out, "results.json")) as f:
        saved = json.load(f, parse_constant=no_nan)
    assert saved["runs"]["nvfp4"][1]["final_val_loss"] == doc["runs"]["nvfp4"][1]["final_val_loss"]
    assert saved["config"]["steps"] == STEPS
    assert saved["summary"]["verdict"]["text"] == doc["summary"]["verdict"]["text"]


def test_time_budget_calibrates_and_stops_early(tmp_path):
    """The GPU preset's path on the CPU: calibration picks the steps, and a seed that would
    not finish within the budget does not start."""
    cfg = demo.PRESETS["tiny"]
    logged = []
    doc = demo.run(
        cfg,
        ["bf16", "nvfp4"],
        torch.device("cpu"),
        str(tmp_path),
        seeds=[0, 1, 2],
        bars=False,
        log=logged.append,
        time_budget_s=0.01,
    )
    cal = doc["calibration"]
    assert set(cal["step_s"]) == {"bf16", "nvfp4"} and all(v > 0 for v in cal["step_s"].values())
    assert cal["steps"] == cfg.evals == doc["config"]["steps"]  # the floor: nothing fits
    assert doc["seeds"] == [0] and "time budget" in doc["stopped_early"]
    assert any(s.startswith("calibrated:") for s in logged)
    cfg2, cal2 = demo.calibrate(
        cfg, ["bf16"], load_corpus(max_bytes=1 << 20), torch.device("cpu"), 1e6
    )
    assert cal2["steps"] == cfg.steps == cfg2.steps  # everything fits: the preset's cap


def test_run_without_matplotlib_keeps_the_numbers(tmp_path, monkeypatch):
    def no_matplotlib(doc, path):
        raise ImportError("f46.demo needs matplotlib for loss_curves.png")

    monkeypatch.setattr(demo, "plot_loss_curves", no_matplotlib)
    logged = []
    doc = demo.run(demo.PRESETS["tiny"].with_steps(2), ["nvfp4"], torch.device("cpu"),
                   str(tmp_path), seeds=[0], bars=False, log=logged.append)  # fmt: skip
    assert doc["loss_curves"] is None and any(s.startswith("no plot:") for s in logged)
    with open(tmp_path / "results.json") as f:
        assert json.load(f)["seeds"] == [0]


def test_same_seed_same_data_and_init():
    corpus = load_corpus(max_bytes=1 << 20)
    a = BatchSampler(corpus["train"], 4, 32, seed=3)
    b = BatchSampler(corpus["train"], 4, 32, seed=3)
    c = BatchSampler(corpus["train"], 4, 32, seed=4)
    for _ in range(3):
        xa, ya = a.next()
        xb, yb = b.next()
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
        assert torch.equal(xa[:, 1:], ya[:, :-1])  # targets are inputs shifted by one
        assert not torch.equal(xa, c.next()[0])
    cfg = demo.PRESETS["tiny"]
    m1 = demo.build_model("bf16", cfg, torch.device("cpu"), seed=5)
    m2 = demo.build_model("nvfp4-4/6", cfg, torch.device("cpu"), seed=5)
    m3 = demo.build_model("bf16", cfg, torch.device("cpu"), seed=6)
    w1, w3 = dict(m1.named_parameters()), dict(m3.named_parameters())
    for name, p in m2.named_parameters():
        assert torch.equal(p, w1[name]), name
    assert not torch.equal(w1["tok_emb.weight"], w3["tok_emb.weight"])


def test_run_shares_batches_and_init_within_a_seed(tmp_path, monkeypatch):
    """What run() feeds train_step: per seed, every mode gets the same initial weights and the
    same batches in the same order; another seed gets others."""
    seen = []  # (seed index by call order, is-quantized, embedding at step 0, batch)
    original = demo.train_step

    def spy(model, opt, x, y, lr, cfg):
        quantized = any(isinstance(m, f46.F46Linear) for m in model.modules())
        seen.append((quantized, model.tok_emb.weight.detach().clone(), x.clone()))
        return original(model, opt, x, y, lr, cfg)

    monkeypatch.setattr(demo, "train_step", spy)
    cfg = demo.PRESETS["tiny"].with_steps(3)
    demo.run(cfg, ["bf16", "nvfp4"], torch.device("cpu"), str(tmp_path), seeds=[0, 1],
             bars=False, log=None)  # fmt: skip
    assert len(seen) == 2 * 2 * 3  # seeds x modes x steps, seed-major
    runs = [seen[i : i + 3] for i in range(0, 12, 3)]  # s0 bf16, s0 nvfp4, s1 bf16, s1 nvfp4
    assert [r[0][0] for r in runs] == [False, True, False, True]
    for a, b in ((runs[0], runs[1]), (runs[2], runs[3])):
        assert torch.equal(a[0][1], b[0][1])  # same init
        assert all(torch.equal(sa[2], sb[2]) for sa, sb in zip(a, b))  # same batches
    assert not torch.equal(runs[0][0][1], runs[2][0][1])
    assert not torch.equal(runs[0][0][2], runs[2][0][2])


def test_activation_error_zero_on_grid_and_positive_off_grid():
    """The error measurement itself: E2M1 grid values whose blocks all reach 6 quantize
    exactly under plain NVFP4 (bound 448: decode scale 1), random data does not."""
    from f46.demo.quant_error import activation_error, weight_error

    g = torch.Generator().manual_seed(1)
    grid = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
    x = grid[torch.randint(0, 8, (32, 64), generator=g)]
    x = x * torch.where(torch.rand(32, 64, generator=g) < 0.5, -1.0, 1.0)
    x.view(32, 4, 16)[:, :, 0] = 6.0  # every 1x16 block has amax 6
    recipe = f46.Recipe.nvfp4()
    assert activation_error(x, recipe) == 0.0
    y = torch.randn(32, 64, generator=g)
    assert activation_error(y, recipe) > 1e-3
    offs = torch.tensor([8, 8, 32], dtype=torch.int32)  # per-group amax path, empty group
    assert activation_error(x, recipe, offs) == 0.0
    assert weight_error(torch.randn(32, 64, generator=g), recipe) > 1e-3


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
    args = ["--preset", "tiny", "--steps", "3", "--seeds", "2", "--seed", "7"]
    doc = demo.main(args + ["--out", str(tmp_path), "--no-progress", "--device", "cpu"])
    assert doc["seeds"] == [7, 8] and doc["config"]["steps"] == 3 and doc["calibration"] is None
    printed = capsys.readouterr().out
    assert "final val" in printed and "tokens/s" in printed and "\nverdict: " in printed
    assert os.path.exists(tmp_path / "loss_curves.png")
    with pytest.raises(SystemExit):
        demo.main(["--modes", "fp8", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        demo.main(["--seeds", "0", "--out", str(tmp_path)])


def test_summary_without_all_modes_has_no_verdict(tiny_run):
    _, doc, _, _ = tiny_run
    part = {**doc, "runs": {"nvfp4": doc["runs"]["nvfp4"]}}
    summ = summarize(part)
    assert summ["verdict"] is None and "val_minus_bf16" not in summ["modes"]["nvfp4"]
    assert "verdict" not in format_report({**part, "summary": summ})


def test_nvfp4_backward_reaches_every_converted_module(tmp_path):
    """backward="nvfp4" gives every converted module NVIDIA's NVFP4 training backward (quantized
    gradient GEMMs, stochastic rounding, RHT wgrad), is recorded in results.json, and changes
    the gradients of a training step against the recipes' default backward."""
    cfg = dataclasses.replace(demo.PRESETS["tiny"], backward="nvfp4")
    assert demo.PRESETS["large"].backward == "nvfp4"
    m = demo.build_model("nvfp4-4/6", cfg, torch.device("cpu"), seed=0)
    recipes = [
        x.recipe for x in m.modules() if isinstance(x, (f46.F46Linear, f46.F46GroupedExperts))
    ]
    assert recipes and all(
        (r.backward_override, r.grad_rounding, r.wgrad_rht, r.err_mode) ==
        ("quantized", "stochastic", True, "mae") for r in recipes
    )  # fmt: skip
    grads = {}
    for backward in ("default", "nvfp4"):
        c = dataclasses.replace(cfg, backward=backward)
        model = demo.build_model("nvfp4", c, torch.device("cpu"), seed=0)
        x, y = BatchSampler(load_corpus(max_bytes=1 << 20)["train"], 4, 32, seed=0).next()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            model.loss(x, y)[1].backward()
        grads[backward] = model.blocks[0].moe.experts.w1.grad.clone()
    assert not torch.equal(grads["default"], grads["nvfp4"])
    doc = demo.run(cfg.with_steps(2), ["nvfp4"], torch.device("cpu"), str(tmp_path), seeds=[0],
                   bars=False, log=None)  # fmt: skip
    assert doc["config"]["backward"] == "nvfp4"
    assert doc["runs"]["nvfp4"][0]["recipe"]["backward_override"] == "quantized"
    with pytest.raises(ValueError, match="backward"):
        dataclasses.replace(cfg, backward="fp8")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_bf16_experts_on_cuda_match_the_expert_loop():
    """The BF16 baseline's experts on CUDA (torch grouped GEMM) compute the per-expert SwiGLU of
    the CPU loop, forward and backward (FP32 references, BF16 tolerance), empty experts too."""
    from f46.demo.model import GroupedExperts

    torch.manual_seed(0)
    m = GroupedExperts(64, 128, 4)
    for w in (m.w1, m.w2, m.w3):
        torch.nn.init.normal_(w, std=0.05)
    counts = torch.tensor([40, 0, 70, 18])
    x = torch.randn(128, 64)
    gy = torch.randn(128, 64)
    ref_m = GroupedExperts(64, 128, 4).double()
    ref_m.load_state_dict(m.state_dict())
    xr = x.double().requires_grad_()
    ref = ref_m(xr, counts)
    ref.backward(gy.double())
    mc = m.cuda()
    xc = x.cuda().requires_grad_()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = mc(xc, counts.cuda())
    assert y.dtype == torch.bfloat16
    y.float().backward(gy.cuda())
    scale = ref.abs().max().item()
    assert (y.double().cpu() - ref).abs().max().item() < 2e-2 * scale
    for got, want in ((xc.grad, xr.grad), (mc.w1.grad, ref_m.w1.grad), (mc.w2.grad, ref_m.w2.grad)):
        err = (got.double().cpu() - want).abs().max().item()
        assert err < 3e-2 * want.abs().max().item(), err
    assert mc.w1.grad[1].abs().max().item() == 0.0  # the empty expert gets no gradient


def test_merge_of_single_seed_parts_equals_one_run(tmp_path):
    """Seeds run in separate parts and merged (f46.demo.merge) give the losses, differences and
    verdict of one run over the same seeds; parts with other settings or a repeated seed raise."""
    from f46.demo import merge as demo_merge

    cfg = demo.PRESETS["tiny"].with_steps(3)
    kw = {"bars": False, "log": None}
    one = demo.run(cfg, list(demo.MODES), torch.device("cpu"), str(tmp_path / "one"), [0, 1], **kw)
    parts = [
        demo.run(cfg, list(demo.MODES), torch.device("cpu"), str(tmp_path / f"p{s}"), [s], **kw)
        for s in (0, 1)
    ]
    merged = demo_merge.main([str(tmp_path / "m"), str(tmp_path / "p0"), str(tmp_path / "p1")])
    assert merged["seeds"] == [0, 1] and merged["config"]["seeds"] == 2
    for m in demo.MODES:
        got = [r["final_val_loss"] for r in merged["runs"][m]]
        assert got == [r["final_val_loss"] for r in one["runs"][m]], m
        assert merged["summary"]["modes"][m]["final_val"] == one["summary"]["modes"][m]["final_val"]
    assert merged["summary"]["verdict"] == one["summary"]["verdict"]
    with open(tmp_path / "m" / "results.json") as f:
        assert json.load(f)["seeds"] == [0, 1]
    with pytest.raises(ValueError, match="seed"):
        demo_merge.merge([parts[0], parts[0]])
    other = demo.run(cfg.with_steps(2), list(demo.MODES), torch.device("cpu"),
                     str(tmp_path / "o"), [2], **kw)  # fmt: skip
    with pytest.raises(ValueError, match="steps"):
        demo_merge.merge([parts[0], other], ["p0", "o"])
