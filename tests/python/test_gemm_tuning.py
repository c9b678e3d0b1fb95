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
    dense = ops.gemm(ac, as_, am.max().reshape(1), bc[0], bs[0], bm, **tuning)
    assert torch.equal(dense, ops.gemm(ac, as_, am.max().reshape(1), bc[0], bs[0], bm))


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"plan": "c"}, r"grouped_gemm_m: `plan` must be 'auto', 'a' or 'b', got 'c'"),
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
