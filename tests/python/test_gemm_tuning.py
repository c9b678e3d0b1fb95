"""The GEMM ops' tuning arguments (plan, max_swizzle, raster): explicit per call (no
environment variable), checked with the op and argument named, and never a changed bit."""

import pathlib

import pytest
import torch
from f46 import ops


def operands(device, e=3, m=96, n=48, k=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g).to(torch.bfloat16).to(device)
    b = (torch.randn(e, n, k, generator=g) * 0.1).to(torch.bfloat16).to(device)
    offs = torch.tensor([32, 32, 96], dtype=torch.int32, device=device)
    am = ops.amax(a, scope="group", offsets=offs)
    ac, as_, _, _ = ops.quantize(a, am, offsets=offs, scope="group", rule="mae", block=1)
    bw = b.reshape(e * n, k)
    bm = ops.amax(bw)
    bc, bs, _, _ = ops.quantize(bw, bm, scope="tensor", rule="mae", block=1)
    return ac, as_, am, bc.view(e, n, k // 2), bs.view(e, n, k // 16), bm, offs


TUNINGS = [
    {},
    {"plan": "a"},
    {"plan": "b"},
    {"plan": "c"},
    {"plan": "a", "max_swizzle": 2, "raster": "n"},
    {"max_swizzle": 8, "raster": "m"},
]


@pytest.mark.parametrize("tuning", TUNINGS, ids=lambda t: "_".join(f"{k}{v}" for k, v in t.items()))
def test_tuning_changes_no_bit(device, tuning):
    ac, as_, am, bc, bs, bm, offs = operands(device)
    kw = dict(a_scope="group", b_bound=256.0, out_dtype=torch.float32)
    want = ops.grouped_gemm_m(ac, as_, am, bc, bs, bm, offs, **kw)
    got = ops.grouped_gemm_m(ac, as_, am, bc, bs, bm, offs, **kw, **tuning)
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))
    kw["out_dtype"] = torch.bfloat16  # plan (c) writes bf16 only (fp32: plan (a))
    want = ops.grouped_gemm_m(ac, as_, am, bc, bs, bm, offs, **kw)
    got = ops.grouped_gemm_m(ac, as_, am, bc, bs, bm, offs, **kw, **tuning)
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))
    dense = ops.gemm(ac, as_, am.max().reshape(1), bc[0], bs[0], bm, **tuning)
    assert torch.equal(dense, ops.gemm(ac, as_, am.max().reshape(1), bc[0], bs[0], bm))


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"plan": "d"}, r"grouped_gemm_m: `plan` must be 'auto', 'a', 'b' or 'c', got 'd'"),
        (
            {"max_swizzle": 3},
            r"grouped_gemm_m: `max_swizzle` must be 0 \(default\), 1, 2, 4 or 8, got 3",
        ),
        ({"raster": "k"}, r"grouped_gemm_m: `raster` must be 'm' or 'n', got 'k'"),
    ],
)
def test_bad_tuning_names_the_argument(device, bad, message):
    ac, as_, am, bc, bs, bm, offs = operands(device)
    with pytest.raises(RuntimeError, match=message):
        ops.grouped_gemm_m(ac, as_, am, bc, bs, bm, offs, a_scope="group", **bad)


def test_the_library_reads_no_environment_variable():
    """No switch of the library lives in the environment (tuning is an argument): no getenv in
    the C++ sources, no os.environ / os.getenv in the Python package, except the loader's
    F46_TORCH_LIBRARY (where the built op library is, not how it computes)."""
    root = pathlib.Path(__file__).resolve().parents[2]
    found = []
    for folder, pattern in (("src", "getenv"), ("include", "getenv"), ("bindings", "getenv")):
        for f in (root / folder).rglob("*"):
            if f.suffix in (".h", ".cpp", ".cu", ".cuh") and pattern in f.read_text():
                found.append(str(f.relative_to(root)))
    for f in (root / "python" / "f46").rglob("*.py"):
        text = f.read_text()
        if ("os.environ" in text or "os.getenv" in text) and f.name != "_loader.py":
            found.append(str(f.relative_to(root)))
    assert found == []


# ---- the recipe's plan: every GEMM of a layer step takes it, and no bit changes -------------
def _layer_step(device, plan, backward="quantized"):
    import f46

    torch.manual_seed(0)
    recipe = f46.Recipe(backward_override=backward, gemm_plan=plan)
    layer = f46.F46GroupedExperts(64, 48, 4, recipe).to(device)
    for p in layer.parameters():
        p.data = p.data.to(torch.bfloat16)
    counts = torch.tensor([16, 0, 21, 43], device=device)
    x = torch.randn(80, 64, device=device).to(torch.bfloat16).requires_grad_()
    w = torch.randn(32, 64, device=device).to(torch.bfloat16).requires_grad_()
    f46.reset_sr_offset()
    y = layer(x, counts)
    z = f46.linear(y, w, recipe=recipe)
    z.float().square().sum().backward()
    return [z, x.grad, w.grad, layer.w1.grad, layer.w2.grad, layer.w3.grad]


def test_recipe_plan_reaches_every_gemm(monkeypatch):
    seen = []
    for name in ("gemm", "grouped_gemm_m", "grouped_gemm_k"):
        real = getattr(ops, name)

        def spy(*a, _real=real, _name=name, **kw):
            seen.append((_name, kw.get("plan")))
            return _real(*a, **kw)

        monkeypatch.setattr(ops, name, spy)
    _layer_step("cpu", "a")
    assert {n for n, _ in seen} == {"gemm", "grouped_gemm_m", "grouped_gemm_k"}
    assert all(plan == "a" for _, plan in seen), seen


@pytest.mark.parametrize("plan", ["a", "b", "c"])
def test_recipe_plan_changes_no_bit(device, plan):
    """Forced plans against the automatic one, forward and every gradient (on CUDA the plans
    run different kernels; the CPU ignores the plan)."""
    want = _layer_step(device, "auto")
    got = _layer_step(device, plan)
    for g, w in zip(got, want):
        assert torch.equal(g.view(torch.int16), w.view(torch.int16))


def test_recipe_plan_is_checked():
    import f46

    with pytest.raises(ValueError, match=r"Recipe.gemm_plan must be one of .*got 'd'"):
        f46.Recipe(gemm_plan="d")
