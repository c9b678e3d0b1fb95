"""ops.swiglu / ops.swiglu_backward (docs/numerics.md N13) and the fused SwiGLU experts
(f46.experts.swiglu): on CUDA bitwise PyTorch's `F.silu(a) * b` and its autograd; on the CPU
within one bf16 unit (the backend's exp); the amaxes bitwise ops.amax of the outputs; the fused
experts bitwise the composition in every backward mode."""

import f46
import pytest
import torch
import torch.nn.functional as F
from f46 import ops
from f46.experts import grouped_mm_pair
from f46.experts.swiglu import _GroupedSwiGLU, swiglu_experts
from f46.functional import grouped_mm_amax
from test_gate_up_pair import RECIPES as PAIR_RECIPES

# Every grouped backward mode (row scaling excepted: the fused form needs group-scope amaxes).
RECIPES = {k: v for k, v in PAIR_RECIPES.items() if k != "row_scaled_1x16"}
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def gated(m, f, dtype, device, seed=0, spread=4.0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, f, generator=g) * spread
    b = torch.randn(m, f, generator=g) * 2
    dy = torch.randn(m, f, generator=g)
    return [t.to(dtype).to(device) for t in (a, b, dy)]


def torch_swiglu(a, b, dy):
    a, b = a.clone().requires_grad_(), b.clone().requires_grad_()
    h = F.silu(a) * b
    h.backward(dy)
    return h.detach(), a.grad, b.grad


def assert_bitwise(x, y, what):
    assert x.dtype == y.dtype and x.shape == y.shape, what
    same = (x == y) | (x.isnan() & y.isnan())
    assert bool(same.all()), f"{what}: {int((~same).sum())} differ, max {(x - y).abs().max()}"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_swiglu_against_torch(device, dtype):
    a, b, dy = gated(300, 136, dtype, device, seed=1)
    a[0, :4] = torch.tensor([float("inf"), -float("inf"), float("nan"), 0.0])
    a[1, :4] = torch.tensor([88.0, -88.0, 1e-30, -1.2785])  # exp range ends, silu' zero
    offs = torch.tensor([70, 70, 250], dtype=torch.int32, device=device)  # rows 250.. outside
    h, amax = ops.swiglu(a, b, offs)
    da, db, m_da, m_db = ops.swiglu_backward(dy, a, b, offs, amax_da=True, amax_db=True)
    want = torch_swiglu(a, b, dy)
    if device == "cuda":  # PyTorch's own kernels, bit for bit
        for got, w, what in zip((h, da, db), want, ("h", "da", "db")):
            assert_bitwise(got, w, what)
    else:  # the CPU's exp: one unit of the dtype
        rtol = {torch.bfloat16: 2**-7, torch.float16: 2**-10, torch.float32: 1e-5}[dtype]
        for got, w in zip((h, da, db), want):
            torch.testing.assert_close(got.float(), w.float(), rtol=rtol, atol=1e-4, equal_nan=True)
    for got, t in ((amax, h), (m_da, da), (m_db, db)):
        assert_bitwise(got, ops.amax(t, scope="group", offsets=offs), "amax")
    assert amax.isnan()[0] and m_da.isnan()[0]  # the NaN of row 0 reaches its group's amax


@cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_cuda_swiglu_large_is_torch_bitwise(dtype):
    # 6.3 M values over the range where exp(-x) is finite and beyond: every code path of expf.
    a, b, dy = gated(4096, 1536, dtype, "cuda", seed=2, spread=12.0)
    offs = torch.tensor([1000, 3000, 4096], dtype=torch.int32, device="cuda")
    h, _ = ops.swiglu(a, b, offs)
    da, db, _, _ = ops.swiglu_backward(dy, a, b, offs)
    for got, w, what in zip((h, da, db), torch_swiglu(a, b, dy), ("h", "da", "db")):
        assert_bitwise(got, w, what)


def test_swiglu_without_offsets_and_errors(device):
    a, b, dy = gated(8, 32, torch.bfloat16, device)
    h, amax = ops.swiglu(a, b)
    assert amax.shape == (0,)
    da, db, ma, mb = ops.swiglu_backward(dy, a, b)
    assert ma.shape == (0,) and mb.shape == (0,)
    assert_bitwise(ops.swiglu(a, b, torch.tensor([8], dtype=torch.int32, device=device))[0], h, "h")
    with pytest.raises(RuntimeError, match="b must have the dtype and shape of a"):
        ops.swiglu(a, b[:7].contiguous())
    with pytest.raises(RuntimeError, match="need `offsets`"):
        ops.swiglu_backward(dy, a, b, amax_da=True)
    with pytest.raises(RuntimeError, match="a must be contiguous"):
        ops.swiglu(a.t(), b.t())


class _ComposedSwiGLU(torch.autograd.Function):
    """The elementwise op of the fused path as its own autograd node (no amaxes): the
    composition the fused Function must equal wherever F.silu is not ops.swiglu (CPU)."""

    @staticmethod
    def forward(ctx, h1, h3):
        ctx.save_for_backward(h1, h3)
        return ops.swiglu(h1, h3)[0]

    @staticmethod
    def backward(ctx, dh):
        h1, h3 = ctx.saved_tensors
        da, db, _, _ = ops.swiglu_backward(dh.contiguous(), h1, h3)
        return da, db


def experts(device, sizes=(16, 0, 21, 43), d=64, f=48, seed=0):
    g = torch.Generator().manual_seed(seed)
    e, m = len(sizes), sum(sizes) + 3  # 3 rows past the last group
    x = (torch.randn(m, d, generator=g) * (1 + torch.arange(m) % 4)[:, None]).to(torch.bfloat16)
    w1 = (torch.randn(e, f, d, generator=g) * 0.2).to(torch.bfloat16)
    w3 = (torch.randn(e, f, d, generator=g) * 0.2).to(torch.bfloat16)
    w2 = (torch.randn(e, d, f, generator=g) * 0.2).to(torch.bfloat16)
    dy = torch.randn(m, d, generator=g).to(torch.bfloat16)
    offs = torch.tensor(sizes).cumsum(0).to(torch.int32)
    return [t.to(device) for t in (x, w1, w2, w3, dy, offs)]


def run(fn, x, w1, w2, w3, dy):
    leaves = [t.detach().clone().requires_grad_() for t in (x, w1, w2, w3)]
    f46.reset_sr_offset()
    out = fn(*leaves)
    out.backward(dy)
    return [out.detach()] + [t.grad for t in leaves]


@pytest.mark.parametrize("name", list(RECIPES))
def test_fused_function_equals_composition(device, name):
    """The fused autograd Function + grouped_mm_amax against grouped_mm_pair, the same
    elementwise op and grouped_mm: the amax plumbing changes no bit (runs on the CPU too)."""
    r = RECIPES[name]
    x, w1, w2, w3, dy, offs = experts(device)

    def composed(x, w1, w2, w3):
        h1, h3 = grouped_mm_pair(x, w1, w3, offs, r)
        return f46.grouped_mm(_ComposedSwiGLU.apply(h1, h3), w2, offs, recipe=r)

    def fused(x, w1, w2, w3):
        needs = (True, True, True)
        h, h_amax = _GroupedSwiGLU.apply(x, w1, w3, offs, r, *f46_sr_pair(r), needs)
        return grouped_mm_amax(h, w2, offs, h_amax, r)

    for got, want, what in zip(run(fused, x, w1, w2, w3, dy), run(composed, x, w1, w2, w3, dy),
                               ("out", "dx", "dw1", "dw2", "dw3")):
        assert_bitwise(got, want, f"{name} {what}")


def f46_sr_pair(recipe):
    from f46.quantized import next_sr_offset

    return next_sr_offset(recipe), next_sr_offset(recipe)


@cuda
@pytest.mark.parametrize("name", list(RECIPES))
def test_cuda_experts_fused_equals_composition(name):
    """swiglu_experts on CUDA: fused (ops.swiglu) against the composition (F.silu(h1) * h3),
    output and every gradient bitwise; F46GroupedExperts (the fused form) gives the same out."""
    r = RECIPES[name]
    x, w1, w2, w3, dy, offs = experts("cuda", sizes=(40, 0, 77, 130, 9), d=128, f=96)
    results = []
    for fused in (True, False):
        results.append(
            run(lambda *t, f=fused: swiglu_experts(*t[:1], t[1], t[2], t[3], offs, r, f),
                x, w1, w2, w3, dy)  # fmt: skip
        )
    for got, want, what in zip(*results, ("out", "dx", "dw1", "dw2", "dw3")):
        assert_bitwise(got, want, f"{name} {what}")
    m = f46.F46GroupedExperts.from_bf16(w1, w2, w3, recipe=r)
    out = m(x, offs.diff(prepend=offs.new_zeros(1)))
    assert_bitwise(out, results[1][0].to(out.dtype), "module out")


def test_grouped_mm_amax_checks_its_arguments(device):
    x, w1, w2, w3, dy, offs = experts(device)
    h = x[:, :48].contiguous()  # (M, F) stands in for the SwiGLU output
    amax = ops.amax(h, scope="group", offsets=offs)
    ref = f46.grouped_mm(h, w2, offs)
    assert torch.equal(grouped_mm_amax(h, w2, offs, amax, f46.Recipe()), ref)  # bitwise
    assert not torch.equal(grouped_mm_amax(h, w2, offs, amax * 3, f46.Recipe()), ref)  # used
    with pytest.raises(ValueError, match=r"a_amax must be \(4,\) float32"):
        grouped_mm_amax(h, w2, offs, amax[:3], f46.Recipe())
    with pytest.raises(ValueError, match="group-scope activations"):
        grouped_mm_amax(h, w2, offs, amax, f46.Recipe(row_scaled_activation=True, weight_block=1))
    with pytest.raises(ValueError, match="B must be a 3-D"):
        grouped_mm_amax(h, w2[0], offs, amax, f46.Recipe())
