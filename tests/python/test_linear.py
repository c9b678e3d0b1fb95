"""f46.linear: forward and the three backward modes against manual op compositions.

References are composed from f46 ops on the documented operands (bitwise) or from BF16
matmuls (bitwise on the CPU). Numbers: docs/numerics.md N2-N10.
"""

import f46
import pytest
import torch
import torch.nn.functional as F
from f46 import ops
from f46.quantized import quantize_gradient, quantize_weight


def bitwise(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    assert torch.equal(a, b), f"max |diff| = {(a.float() - b.float()).abs().max().item()}"


def hp_close(a, b, device):
    if device == "cpu":
        bitwise(a, b)
    else:
        torch.testing.assert_close(a.float(), b.float(), rtol=1e-2, atol=1e-2)


def make(device, m=40, k=64, n=48, seed=0, dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(m, k, generator=g) * (1 + torch.arange(m) % 7)[:, None]).to(dtype)
    w = (torch.randn(n, k, generator=g) * 0.05).to(dtype)
    bias = torch.randn(n, generator=g)
    return x.to(device), w.to(device), bias.to(device)


def manual_forward(x, w, bias, r):
    scope = "row" if r.row_scaled_activation else "tensor"
    am = ops.amax(x, scope=scope)
    c, s, _, _ = ops.quantize(x, am, scope=scope, rule=r.err_mode, scale_bound=r.scale_bound)
    qw = quantize_weight(w, r)
    return ops.gemm(
        c,
        s,
        am,
        qw.codes,
        qw.scales,
        qw.amax,
        a_scope=scope,
        a_bound=r.scale_bound,
        b_bound=r.scale_bound,
        bias=bias,
        out_dtype=x.dtype,
    )


def run(x, w, bias, r, dy):
    x = x.clone().requires_grad_()
    w = w.clone().requires_grad_()
    bias = bias.clone().requires_grad_()
    y = f46.linear(x, w, bias, r)
    y.backward(dy)
    return y.detach(), x.grad, w.grad, bias.grad


@pytest.mark.parametrize("weight_block", [1, 16])
@pytest.mark.parametrize("row_scaled", [False, True])
@pytest.mark.parametrize("err_mode", ["mae", "mse", "all6"])
def test_forward_equals_manual(device, weight_block, row_scaled, err_mode):
    r = f46.Recipe(weight_block=weight_block, row_scaled_activation=row_scaled, err_mode=err_mode)
    x, w, bias = make(device)
    with torch.no_grad():
        y = f46.linear(x, w, bias, r)
    bitwise(y, manual_forward(x, w, bias, r))
    # 4/6 forward is close to the BF16 product
    ref = x.double() @ w.double().t() + bias.double()
    assert ((y.double() - ref).norm() / ref.norm()).item() < 0.2


@pytest.mark.parametrize("mode", ["high_precision", "dequantized"])
@pytest.mark.parametrize("row_scaled", [False, True])
def test_bf16_backward_modes(device, mode, row_scaled):
    r = f46.Recipe(backward_override=mode, row_scaled_activation=row_scaled, weight_block=1)
    x, w, bias = make(device)
    dy = torch.randn(x.shape[0], w.shape[0]).to(torch.bfloat16).to(device)
    _, dx, dw, db = run(x, w, bias, r, dy)
    if mode == "dequantized":
        scope = "row" if row_scaled else "tensor"
        am = ops.amax(x, scope=scope)
        c, s, _, _ = ops.quantize(x, am, scope=scope, rule=r.err_mode)
        xo, wo = ops.dequantize(c, s, am, scope=scope), quantize_weight(w, r).dequantize()
    else:
        xo, wo = x, w
    hp_close(dx, dy @ wo, device)
    hp_close(dw, dy.t() @ xo, device)
    torch.testing.assert_close(db, dy.float().sum(0))


def manual_quantized_backward(x, w, dy, r, sr_offset=0):
    """dgrad = Q_grad(dY) (rowwise along N) x Q(W)^T columnwise; wgrad = Q_grad(dY)^T x Q(X)^T,
    both columnwise along the tokens (padded to 16 with zero rows), RHT when asked (N7)."""
    m = x.shape[0]
    p = (m + 15) // 16 * 16 - m
    xp, dyp = F.pad(x, (0, 0, 0, p)), F.pad(dy, (0, 0, 0, p))
    qw = quantize_weight(w, r, columnwise=True)
    xam = ops.amax(xp)
    xam_t = ops.amax(xp, rht_columns=True) if r.wgrad_rht else xam
    _, _, xct, xst = ops.quantize(
        xp,
        xam,
        rule=r.err_mode,
        scale_bound=r.scale_bound,
        rowwise=False,
        columnwise=True,
        rht_columnwise=r.wgrad_rht,
        amax_columnwise=xam_t,
    )
    gam = ops.amax(dyp)
    gam_t = ops.amax(dyp, rht_columns=True) if r.wgrad_rht else gam
    gc, gs, gct, gst = quantize_gradient(
        dyp, gam, r, sr_offset, columnwise=True, amax_columnwise=gam_t
    )
    dx = ops.gemm(
        gc[:m],
        gs[:m],
        gam,
        qw.codes_t,
        qw.scales_t,
        qw.amax,
        a_bound=448.0,
        b_bound=r.scale_bound,
        out_dtype=x.dtype,
    )
    dw = ops.gemm(
        gct, gst, gam_t, xct, xst, xam_t, a_bound=448.0, b_bound=r.scale_bound, out_dtype=w.dtype
    )
    return dx, dw


@pytest.mark.parametrize("weight_block", [1, 16])
@pytest.mark.parametrize("rht", [False, True])
@pytest.mark.parametrize("m", [40, 48])
def test_quantized_backward_equals_manual(device, weight_block, rht, m):
    r = f46.Recipe(weight_block=weight_block, wgrad_rht=rht)
    assert r.dense_backward() == "quantized"
    x, w, bias = make(device, m=m)
    dy = torch.randn(m, w.shape[0]).to(torch.bfloat16).to(device)
    _, dx, dw, _ = run(x, w, bias, r, dy)
    rdx, rdw = manual_quantized_backward(x, w, dy, r)
    bitwise(dx, rdx)
    bitwise(dw, rdw)


def test_quantized_backward_stochastic_equals_manual(device):
    r = f46.Recipe(grad_rounding="stochastic", seed=11)
    x, w, bias = make(device, m=32)
    dy = torch.randn(32, w.shape[0]).to(torch.bfloat16).to(device)
    f46.reset_sr_offset(5)
    _, dx, dw, _ = run(x, w, bias, r, dy)
    rdx, rdw = manual_quantized_backward(x, w, dy, r, sr_offset=5)
    bitwise(dx, rdx)
    bitwise(dw, rdw)
    _, dx2, _, _ = run(x, w, bias, r, dy)  # offset 6: other random bits
    assert not torch.equal(dx, dx2)


def sqnr_db(x, ref):
    x, ref = x.double(), ref.double()
    return (10 * torch.log10(ref.pow(2).sum() / (x - ref).pow(2).sum())).item()


@pytest.mark.parametrize(
    "recipe",
    [
        f46.Recipe(),
        f46.Recipe(wgrad_rht=True),
        f46.Recipe(grad_rounding="stochastic"),
        f46.Recipe.nvfp4(),
    ],
)
def test_quantized_gradients_close_to_bf16(device, recipe):
    """Quantized gradients agree with BF16 gradients within SQNR > 10 dB."""
    x, w, bias = make(device, m=128, k=128, n=64)
    dy = torch.randn(128, 64).to(torch.bfloat16).to(device)
    _, dx, dw, _ = run(x, w, bias, recipe, dy)
    _, hdx, hdw, _ = run(x, w, bias, recipe.replace(backward_override="high_precision"), dy)
    assert sqnr_db(dx, hdx) > 10.0
    assert sqnr_db(dw, hdw) > 10.0


def test_leading_dims_zero_tokens_dtypes(device):
    r = f46.Recipe()
    x, w, bias = make(device, m=24)
    y3 = f46.linear(x.view(2, 12, 64), w, bias, r)
    bitwise(y3.reshape(24, -1), f46.linear(x, w, bias, r))
    x0 = torch.zeros(0, 3, 64, dtype=torch.bfloat16, device=device, requires_grad=True)
    wg = w.clone().requires_grad_()
    y0 = f46.linear(x0, wg, None, r)
    assert y0.shape == (0, 3, 48)
    y0.sum().backward()
    assert wg.grad is not None and not wg.grad.any()
    # fp32 activations / weights and a bf16 bias give fp32 output; bias dtypes agree
    y32 = f46.linear(x.float(), w.float(), bias.bfloat16(), r)
    assert y32.dtype == torch.float32
    bitwise(f46.linear(x, w, bias.bfloat16(), r), manual_forward(x, w, bias.bfloat16(), r))


@pytest.mark.parametrize("weight_block", [1, 16])
def test_prequantized_equals_differentiable(device, weight_block):
    r = f46.Recipe(weight_block=weight_block)
    x, w, bias = make(device)
    qw = f46.quantize_weight(w, r)
    with torch.no_grad():
        bitwise(f46.linear(x, qw, bias, r), f46.linear(x, w, bias, r))
    cache = f46.WeightCache()
    q1 = cache.get(w, r)
    assert cache.get(w, r) is q1  # reused for the same version
    w.add_(1.0)  # in-place update bumps w._version
    q2 = cache.get(w, r)
    assert q2 is not q1 and not torch.equal(q2.codes, q1.codes)
    with torch.no_grad():
        bitwise(f46.linear(x, q2, bias, r), f46.linear(x, w, bias, r))


def test_nan_input_propagates(device):
    """N9: a NaN anywhere in x makes the per-tensor amax NaN and every output non-finite."""
    x, w, bias = make(device)
    x[3, 5] = float("nan")
    with torch.no_grad():
        y = f46.linear(x, w, bias, f46.Recipe())
    assert not torch.isfinite(y.float()).any()
