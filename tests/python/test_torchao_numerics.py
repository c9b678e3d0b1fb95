"""f46.torchao's numbers and layouts are torchao's: codes and scales bitwise against a torch
emulation of the 4/6 arithmetic (docs/numerics.md N2-N3), dequantize by its formula, GEMMs
with the weight read as (N, K) — square weights included, where a transposed reading would give
another product without any shape error — and torchao's backward, pad/unpad, prequantized
and dispatcher contracts."""

import f46.torchao as T
import pytest
import torch
from f46.torchao import four_over_six as dense

BF16 = torch.bfloat16


def randn(*shape, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).to(BF16)


# ---- emulation of torchao's quantizer (N2-N3) in torch ops -----------------------------------
def emulate_quantize(x, amax, block="1x16", err_mode="mae", bound=256):
    """(unpacked codes (R, C) uint8, scale bytes (R, C/16) uint8)."""
    r, c = x.shape
    xf = x.float().view(r, c // 16, 16)
    amax = amax.float()
    s_enc = T.four_over_six_global_encode_scale(amax, bound)
    err_amax = amax
    if amax.dim() == 1:
        s_enc, err_amax = s_enc.view(r, 1), amax.view(r, 1)
    if block == "16x16":
        bam = xf.abs().view(r // 16, 16, c // 16, 16).amax(dim=(1, 3)).repeat_interleave(16, 0)
    else:
        bam = xf.abs().amax(-1)
    base = (bam / torch.full((), 6.0)) * s_enc
    s6 = base.clamp(max=448.0).to(torch.float8_e4m3fn)
    s4 = (base * 1.5).clamp(max=448.0).to(torch.float8_e4m3fn)
    s_dec = 1.0 / s_enc
    inv6 = (1.0 / (s6.float() * s_dec)).clamp(max=torch.finfo(torch.float32).max)
    inv4 = (1.0 / (s4.float() * s_dec)).clamp(max=torch.finfo(torch.float32).max)
    c6, v6 = dense._fp4_rtne(xf * inv6.unsqueeze(-1))
    c4, v4 = dense._fp4_rtne(xf * inv4.unsqueeze(-1))
    e6 = dense._candidate_error(v6, s6.unsqueeze(-1), xf, err_amax, err_mode, bound)
    e4 = dense._candidate_error(v4, s4.unsqueeze(-1), xf, err_amax, err_mode, bound)
    if block == "16x16":

        def tree(e):
            t = e.view(r // 16, 16, c // 16)
            t = t[:, 0:8] + t[:, 8:16]
            t = t[:, 0:4] + t[:, 4:8]
            t = t[:, 0:2] + t[:, 2:4]
            return t[:, 0] + t[:, 1]

        pick4 = (tree(e4) < tree(e6)).repeat_interleave(16, 0)
    else:
        pick4 = e4 < e6
    codes = torch.where(pick4.unsqueeze(-1), c4, c6).view(r, c)
    return codes, torch.where(pick4, s4, s6).view(torch.uint8)


def unpack(codes):
    """(R, C/2) packed -> (R, C): element 2i is the low nibble."""
    return torch.stack([codes & 0xF, codes >> 4], dim=-1).view(codes.shape[0], -1)


def emulate_dequantize(codes, scales, amax, bound=256):
    """float64 values of torchao's decode: float(code) * float(scale) * amax / (6 * bound)."""
    grid = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=torch.float64)
    u = unpack(codes).long()
    v = torch.where(u >= 8, -grid[u & 7], grid[u & 7])
    s = scales.view(torch.float8_e4m3fn).double().repeat_interleave(16, 1)
    a = amax.double().view(-1, 1) if amax.dim() == 1 else amax.double()
    return v * s * a / (6.0 * bound)


def deq4over6(x, amax, block="1x16", err_mode="mae", bound=256):
    c, s = T.four_over_six_quantize(x, amax, block=block, err_mode=err_mode, e4m3_scale_bound=bound)
    return emulate_dequantize(c, s, amax, bound)


def test_e2m1_emulation_ties():
    v = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.1, 7.0])
    _, vals = dense._fp4_rtne(v)
    assert vals.tolist() == [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, -0.0, 6.0]
    assert dense._fp4_rtne(torch.tensor([-0.1]))[0].item() == 0x8


# row-scaled is 1x16 only (16x16 with it is a ValueError, test_torchao_api)
@pytest.mark.parametrize("block,row_scaled", [("1x16", False), ("16x16", False), ("1x16", True)])
@pytest.mark.parametrize("err_mode", ["mae", "mse"])
@pytest.mark.parametrize("bound", [256, 448])
def test_quantize_bitwise_torchao_arithmetic(block, err_mode, bound, row_scaled):
    x = randn(48, 96, seed=1)
    x[0:16, 0:16] = 0  # an all-zero block / tile: scale 0, codes 0
    x[20, 5] = -1e-6  # rounds to zero with its sign (code 0x8)
    amax = (x.abs().amax(1) if row_scaled else x.abs().amax()).float()
    codes, scales = T.four_over_six_quantize(
        x, amax, block=block, err_mode=err_mode, e4m3_scale_bound=bound
    )
    assert isinstance(codes, torch.Tensor) and isinstance(scales, torch.Tensor)
    assert codes.dtype == torch.uint8 and codes.shape == (48, 48)
    assert scales.dtype == torch.float8_e4m3fn and scales.shape == (48, 6)
    ref_codes, ref_scales = emulate_quantize(x, amax, block, err_mode, bound)
    assert torch.equal(unpack(codes), ref_codes)
    assert torch.equal(scales.view(torch.uint8), ref_scales)
    assert (ref_scales[0:16, 0] == 0).all()


def test_quantize_uses_both_candidates_and_per_row_equals_rows_alone():
    x = randn(64, 256, seed=2)
    am = x.abs().amax(1).float()
    c, s = T.four_over_six_quantize(x, am)
    for r in (0, 17, 63):
        cr, sr = T.four_over_six_quantize(x[r : r + 1], am[r])
        assert torch.equal(c[r : r + 1], cr) and torch.equal(
            s[r : r + 1].view(torch.uint8), sr.view(torch.uint8)
        )
    _, s4 = emulate_quantize(x, am)
    base = (x.float().view(64, 16, 16).abs().amax(-1) / 6.0) * T.four_over_six_global_encode_scale(
        am
    ).view(64, 1)
    six = base.clamp(max=448).to(torch.float8_e4m3fn).view(torch.uint8)
    assert (s.view(torch.uint8) != six).any() and (s.view(torch.uint8) == six).any()


def test_global_encode_scale():
    am = torch.tensor([2.0, 0.0, 3e38, 1e-40])
    s = T.four_over_six_global_encode_scale(am, 448)
    assert s.dtype == torch.float32 and s.shape == (4,)
    assert (
        s[0].item() == 448 * 6 / 2.0
        and s[1].item() == 1.0
        and s[2].item() == pytest.approx(448 * 6 / 3e38)
    )
    assert s[3].item() == torch.finfo(torch.float32).max  # capped, not inf
    assert T.four_over_six_global_encode_scale(torch.tensor(1e-45)).item() > 0


@pytest.mark.parametrize("row_scaled", [False, True])
@pytest.mark.parametrize("out_dtype", [torch.float32, BF16])
def test_dequantize_formula(row_scaled, out_dtype):
    x = randn(32, 64, seed=3)
    am = (x.abs().amax(1) if row_scaled else x.abs().amax()).float()
    c, s = T.four_over_six_quantize(x, am, e4m3_scale_bound=448)
    y = T.nvfp4_dequantize(c, s, am, e4m3_scale_bound=448, out_dtype=out_dtype)
    assert y.dtype == out_dtype and y.shape == (32, 64)
    # N8: (scale * amax) * (1 / (6 * bound)) in FP32, times the code value: compare in FP32.
    g = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6])
    u = unpack(c).long()
    v = torch.where(u >= 8, -g[u & 7], g[u & 7])
    a = am.view(-1, 1) if row_scaled else am
    dec = (s.float() * a) * (torch.ones(()) / torch.full((), 6.0 * 448))
    ref = (v.view(32, 4, 16) * dec.unsqueeze(-1)).view(32, 64).to(out_dtype)
    assert torch.equal(y, ref)
    assert torch.equal(
        T.four_over_six_dequantize(c, s, am, e4m3_scale_bound=448, out_dtype=out_dtype), y
    )


# ---- dense GEMM: the weight is (N, K), square weights included -------------------------------
def close_to_bf16(y, ref, rtol=2.0**-8):
    """y (bf16) is ref rounded once to bf16 (plus FP32 accumulation noise)."""
    err = (y.double() - ref).abs()
    assert (err <= rtol * ref.abs() + 1e-6 * ref.abs().max()).all(), err.max()


@pytest.mark.parametrize("row_scaled", [False, True])
@pytest.mark.parametrize("weight_block", ["16x16", "1x16"])
def test_linear_square_weight_is_x_times_w_transposed(row_scaled, weight_block):
    M = N = K = 128
    x = randn(M, K, seed=4)
    w = randn(N, K, seed=5, scale=0.1)
    assert not torch.equal(w, w.t())
    with torch.no_grad():
        y = T.four_over_six_linear(x, w, None, "mae", 256, row_scaled, None, weight_block)
    assert y.dtype == BF16 and y.shape == (M, N)
    xa = (x.abs().amax(1) if row_scaled else x.abs().amax()).float()
    xd = deq4over6(x, xa)
    wd = deq4over6(w, w.abs().amax().float(), block=weight_block)
    ref = xd @ wd.t()  # float64
    close_to_bf16(y, ref)
    wrong = xd @ wd  # the weight read as (K, N)
    assert ((y.double() - wrong).norm() / wrong.norm()).item() > 0.5


def test_linear_3d_input_bias_and_module():
    x = randn(2, 64, 128, seed=6)
    w = randn(128, 128, seed=7, scale=0.1)
    b = randn(128, seed=8)
    with torch.no_grad():
        y = T.four_over_six_linear(x, w, b)
        y0 = T.four_over_six_linear(x.reshape(128, 128), w, None)
    assert y.shape == (2, 64, 128)
    assert torch.equal(y.reshape(128, 128), y0 + b)  # bias added to the bf16 output
    lin = torch.nn.Linear(128, 128, bias=True).to(BF16)
    m = T.NVFP4FourOverSixLinear.from_linear(lin, weight_block="1x16")
    assert m.weight is lin.weight and m.bias is lin.bias and m.weight_block == "1x16"
    with torch.no_grad():
        assert torch.equal(
            m(x), T.four_over_six_linear(x, lin.weight, lin.bias, "mae", 256, False, None, "1x16")
        )


def _grads(fn, *ts):
    ts = [t.clone().requires_grad_(True) for t in ts]
    y = fn(*ts)
    dy = randn(*y.shape, seed=99)
    y.backward(dy)
    return y.detach(), dy, [t.grad for t in ts]


@pytest.mark.parametrize("row_scaled", [False, True])
def test_linear_backward_overrides(row_scaled):
    x, w = randn(128, 256, seed=9), randn(128, 256, seed=10, scale=0.1)
    _, dy, (dx, dw) = _grads(
        lambda a, b: T.four_over_six_linear(a, b, None, "mae", 256, row_scaled, "high_precision"),
        x,
        w,
    )
    assert torch.equal(dx, dy @ w) and torch.equal(dw, dy.t() @ x)
    _, dy, (dx, dw) = _grads(
        lambda a, b: T.four_over_six_linear(
            a, b, None, "mse", 256, row_scaled, "dequantized", "1x16"
        ),
        x,
        w,
    )
    xa = (x.abs().amax(1) if row_scaled else x.abs().amax()).float()
    wa = w.abs().amax().float()
    xd = T.nvfp4_dequantize(*T.four_over_six_quantize(x, xa, err_mode="mse"), xa)
    wd = T.nvfp4_dequantize(*T.four_over_six_quantize(w, wa, block="1x16", err_mode="mse"), wa)
    assert torch.equal(dx, dy @ wd) and torch.equal(dw, dy.t() @ xd)


def test_linear_quantized_backward_and_bias_grad():
    x, w, b = randn(128, 256, seed=11), randn(128, 256, seed=12, scale=0.1), randn(128, seed=13)
    _, dy, (dx, dw, db) = _grads(lambda a, c, d: T.four_over_six_linear(a, c, d), x, w, b)
    for got, ref in ((dx, dy.double() @ w.double()), (dw, dy.double().t() @ x.double())):
        assert ((got.double() - ref).norm() / ref.norm()).item() < 0.25  # NVFP4 noise
    assert torch.equal(db, dy.sum(0))


# ---- grouped ---------------------------------------------------------------------------------
def _grouped_inputs(sizes, K=128, N=128, seed=20):
    a = randn(sum(sizes), K, seed=seed)
    b = randn(len(sizes), N, K, seed=seed + 1, scale=0.1)
    offs = torch.tensor(sizes, dtype=torch.int32).cumsum(0, dtype=torch.int32)
    return a, b, offs


def _bounds(offs):
    o = [0] + offs.tolist()
    return list(zip(o[:-1], o[1:]))


def test_grouped_square_weights_are_b_transposed_per_group():
    a, b, offs = _grouped_inputs([50, 0, 78])  # N == K == 128
    with torch.no_grad():
        y = T.four_over_six_grouped_mm(a, b, offs)
    assert y.dtype == BF16 and y.shape == (128, 128)
    for g, (s, e) in enumerate(_bounds(offs)):
        if s == e:
            continue
        ad = deq4over6(a[s:e], a[s:e].abs().amax().float())
        bd = deq4over6(b[g], b[g].abs().amax().float(), block="16x16")
        close_to_bf16(y[s:e], ad @ bd.t())
        wrong = ad @ bd
        assert ((y[s:e].double() - wrong).norm() / wrong.norm()).item() > 0.5


def test_grouped_equals_dense_per_group_and_bias():
    a, b, offs = _grouped_inputs([128, 256], K=256, N=128)
    bias = randn(128, seed=30)
    with torch.no_grad():
        y = T.four_over_six_grouped_mm(a, b, offs, bias, weight_block="1x16")
        for g, (s, e) in enumerate(_bounds(offs)):
            ref = T.four_over_six_linear(
                a[s:e], b[g], None, "mae", 256, False, "high_precision", "1x16"
            )
            assert torch.equal(y[s:e], ref + bias)


@pytest.mark.parametrize("row_scaled", [False, True])
def test_grouped_backward_dequantized_and_padding_option(row_scaled):
    a, b, offs = _grouped_inputs([100, 0, 150], K=128, N=256)

    def run(pad):
        return _grads(
            lambda x, w: T.four_over_six_grouped_mm(
                x,
                w,
                offs,
                err_mode="mse",
                row_scaled_activation=row_scaled,
                backward_override="dequantized",
                pad_token_groups_for_grouped_mm=pad,
            ),
            a,
            b,
        )

    y, dy, (da, db) = run(False)
    y2, _, (da2, db2) = run(True)
    assert torch.equal(y, y2) and torch.equal(da, da2) and torch.equal(db, db2)
    if row_scaled:
        xa = a.abs().amax(1).float()
    else:
        xa = torch.cat(
            [a[s:e].abs().amax().float().expand(e - s) for s, e in _bounds(offs) if e > s]
        )
    ad = T.nvfp4_dequantize(*T.four_over_six_quantize(a, xa, err_mode="mse"), xa)
    wd = torch.stack(
        [
            T.nvfp4_dequantize(
                *T.four_over_six_quantize(
                    b[g], b[g].abs().amax().float(), block="16x16", err_mode="mse"
                ),
                b[g].abs().amax().float(),
            )
            for g in range(3)
        ]
    )
    assert torch.equal(da, torch._grouped_mm(dy, wd, offs=offs))
    assert torch.equal(db, torch._grouped_mm(dy.t(), ad, offs=offs))
    assert (db[1] == 0).all()


def test_grouped_quantized_backward_is_f46_extra():
    a, b, offs = _grouped_inputs([100, 28], K=128, N=128)
    _, dy, (da, db) = _grads(
        lambda x, w: T.four_over_six_grouped_mm(x, w, offs, backward_override="quantized"), a, b
    )
    ref_da = torch.cat([dy[s:e].double() @ b[g].double() for g, (s, e) in enumerate(_bounds(offs))])
    assert torch.isfinite(da).all() and torch.isfinite(db).all()
    assert ((da.double() - ref_da).norm() / ref_da.norm()).item() < 0.25


# ---- pad / unpad, prequantized experts, dispatcher, quantize_ ---------------------------------
def test_pad_unpad_torchao_layout():
    x = randn(42, 32, seed=40)
    offs = torch.tensor([5, 5, 42], dtype=torch.int32)
    xr = x.clone().requires_grad_(True)
    p, starts, ends = T.pad_token_groups(xr, offs)  # alignment_size 32
    assert p.shape == (160, 32)  # round_up(42 + 3 * 32, 32), torchao's upper bound
    assert starts.tolist() == [0, 32, 32] and ends.tolist() == [32, 32, 96]
    assert starts.dtype == ends.dtype == torch.int32
    assert torch.equal(p[0:5], x[0:5]) and torch.equal(p[32:69], x[5:42])
    assert (p[5:32] == 0).all() and (p[69:] == 0).all()
    u = T.unpad_token_groups(p, offs, starts, 42)
    assert torch.equal(u, x)
    (p.float() * torch.arange(160.0).view(-1, 1)).sum().backward()
    assert xr.grad[0, 0].item() == 0 and xr.grad[5, 0].item() == 32 and xr.grad[41, 0].item() == 68


def test_to_blocked_layout():
    s = torch.arange(128 * 8, dtype=torch.int32).view(128, 8)
    blk = T.to_blocked(s)
    r, c = torch.meshgrid(torch.arange(128), torch.arange(4), indexing="ij")
    for tile in range(2):  # column blocks
        idx = tile * 512 + (r % 32) * 16 + (r // 32) * 4 + c
        assert torch.equal(blk[idx], s[:, tile * 4 : tile * 4 + 4])
    assert T.to_blocked(torch.ones(5, 3)).numel() == 128 * 4


@pytest.mark.parametrize("row_scaled", [False, True])
def test_prequantized_experts(row_scaled):
    a, b, offs = _grouped_inputs([128, 0, 256], K=256, N=128)
    with torch.no_grad():
        ref = T.four_over_six_grouped_mm(
            a,
            b,
            offs,
            err_mode="mse",
            e4m3_scale_bound=448,
            row_scaled_activation=row_scaled,
            weight_block="1x16",
        )
        q = T.four_over_six_quantize_expert_weights(
            b, err_mode="mse", e4m3_scale_bound=448, weight_block="1x16"
        )
        assert q.codes.shape == (3, 128, 128) and q.scales.dtype == torch.float8_e4m3fn
        assert torch.equal(
            q.blocked_scales.view(torch.uint8),
            torch.stack([T.to_blocked(s) for s in q.scales]).view(torch.uint8),
        )
        assert torch.equal(q.global_scale, q.amax / (448 * 6.0))
        out = T.four_over_six_grouped_mm_prequantized(a, q, offs, row_scaled_activation=row_scaled)
        assert torch.equal(out, ref)
        tail = torch.cat([a, randn(128, 256, seed=41) * 100])  # over-allocated, garbage
        out2 = T.four_over_six_grouped_mm_prequantized(
            tail, q, offs, row_scaled_activation=row_scaled
        )
        assert torch.equal(out2[:384], ref) and (out2[384:] == 0).all()


def test_dispatcher_takes_b_transposed_and_zero_tail():
    a, b, offs = _grouped_inputs([128, 128], K=128, N=256)
    cfg = T.NVFP4FourOverSixTrainingOpConfig(backward_override="dequantized", weight_block="1x16")
    a_over = torch.cat([a, torch.full((64, 128), 123.0, dtype=BF16)])
    y, _, (da, db) = _grads(
        lambda x, w: T._quantize_then_scaled_grouped_mm(x, w.transpose(-2, -1), cfg, offs),
        a_over,
        b,
    )
    with torch.no_grad():
        ref = T.four_over_six_grouped_mm(
            a, b, offs, backward_override="dequantized", weight_block="1x16"
        )
    assert y.shape == (320, 256) and torch.equal(y[:256], ref) and (y[256:] == 0).all()
    assert (da[256:] == 0).all()


def test_quantize_converts_linears_keeping_parameters():
    model = torch.nn.Sequential(
        torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128, bias=False)
    )
    w0 = model[0].weight
    cfg = T.NVFP4TrainingConfig(
        recipe="four_over_six", err_mode="mse", backward_override="dequantized"
    )
    T.quantize_(model, cfg, filter_fn=lambda m, fqn: isinstance(m, torch.nn.Linear) and fqn != "2")
    assert type(model[0]) is T.NVFP4FourOverSixLinear and model[0].weight is w0
    assert model[0].err_mode == "mse" and model[0].backward_override == "dequantized"
    assert type(model[2]) is torch.nn.Linear
    first = model[0]
    T.quantize_(model, T.NVFP4TrainingConfig(recipe="four_over_six"))
    assert model[0] is first and type(model[2]) is T.NVFP4FourOverSixLinear
    y = model.to(BF16)(randn(128, 128, seed=50))
    assert y.shape == (128, 128) and y.dtype == BF16


@pytest.mark.parametrize("override", ["quantized", "high_precision", "dequantized"])
def test_linear_compile_fullgraph_equals_eager(override):
    x, w = randn(128, 256, seed=60), randn(128, 256, seed=61, scale=0.1)

    def fn(a, b):
        return T.four_over_six_linear(a, b, None, "mae", 256, False, override)

    ye, dy, ge = _grads(fn, x, w)
    yc, _, gc = _grads(torch.compile(fn, fullgraph=True), x, w)
    assert torch.equal(yc, ye) and all(torch.equal(a, b) for a, b in zip(gc, ge))
