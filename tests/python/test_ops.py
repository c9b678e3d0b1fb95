"""The torch custom ops torch.ops.f46.*: schema/fake/AOT checks (torch.library.opcheck) on every
device, Meta shapes equal to the real kernels' shapes, argument errors that name the argument,
and a few properties that only hold if the bindings pass tensors through faithfully."""

import pytest
import torch
from f46 import ops

F46 = torch.ops.f46


def _gen(seed):
    g = torch.Generator().manual_seed(seed)
    return g


def randn(shape, device, dtype=torch.bfloat16, seed=0, scale=1.0):
    x = torch.randn(shape, generator=_gen(seed), dtype=torch.float32) * scale
    return x.to(dtype).to(device)


def i32(values, device):
    return torch.tensor(values, dtype=torch.int32, device=device)


def quantized(x, **kw):
    """(codes, scales, amax) of x quantized per tensor (rowwise)."""
    am = ops.amax(x)
    c, s, _, _ = ops.quantize(x, am, **kw)
    return c, s, am


def quantized_t(x, **kw):
    """(codes_t, scales_t, amax) of x quantized along its rows (the columnwise output)."""
    am = ops.amax(x)
    _, _, ct, st = ops.quantize(x, am, rowwise=False, columnwise=True, **kw)
    return ct, st, am


# ---- cases: (op name, positional args of torch.ops.f46.<op>) ---------------------------------
def quantize_args(
    x,
    amax,
    offsets=None,
    scope="tensor",
    rule="mae",
    bound=256.0,
    block=1,
    gradient=False,
    stochastic=False,
    seed=0,
    offset=0,
    rht_rowwise=False,
    rht_columnwise=False,
    rowwise=True,
    columnwise=False,
    amax_columnwise=None,
):
    return (
        x,
        amax,
        offsets,
        scope,
        rule,
        bound,
        block,
        gradient,
        stochastic,
        seed,
        offset,
        rht_rowwise,
        rht_columnwise,
        rowwise,
        columnwise,
        amax_columnwise,
    )


def case_quantize_tensor(d):
    x = randn((32, 64), d)
    return "quantize", quantize_args(x, ops.amax(x))


def case_quantize_fp32_mse_448(d):
    x = randn((16, 48), d, dtype=torch.float32, seed=1)
    return "quantize", quantize_args(x, ops.amax(x), rule="mse", bound=448.0)


def case_quantize_row(d):
    x = randn((8, 32), d, seed=2)
    return "quantize", quantize_args(x, ops.amax(x, scope="row"), scope="row", rule="abs_max")


def case_quantize_group_columnwise(d):
    x = randn((48, 32), d, seed=3)
    offs = i32([16, 16, 48], d)
    am = ops.amax(x, scope="group", offsets=offs)
    return "quantize", quantize_args(x, am, offsets=offs, scope="group", columnwise=True)


def case_quantize_virtual_pad(d):
    x = randn((45, 32), d, seed=5)
    offs = i32([10, 10, 40], d)
    am = ops.amax(x, scope="group", offsets=offs)
    args = quantize_args(
        x, am, offsets=ops.padded_offsets(offs, 16), scope="group", rowwise=False, columnwise=True
    )
    return "quantize", (*args, offs)


def case_quantize_16x16(d):
    x = randn((32, 32), d, dtype=torch.float16, seed=4)
    return "quantize", quantize_args(x, ops.amax(x), block=16, columnwise=True)


def case_quantize_experts(d):
    w = randn((3, 32, 48), d, seed=24)
    am = torch.stack([ops.amax(w[g]) for g in range(3)]).reshape(3)
    return "quantize_experts", (w, am, "mae", 256.0, 16, True)


def case_amax_quantize_experts(d):
    w = randn((3, 32, 48), d, seed=24)
    w[1] = 0.0  # an all-zero expert: amax 0
    return "amax_quantize_experts", (w, "mae", 256.0, 16, True)


def case_amax_quantize_experts_rowwise(d):
    w = randn((5, 16, 160), d, seed=25)
    return "amax_quantize_experts", (w, "mse", 448.0, 16, False)


def case_quantize_gradient_sr_rht(d):
    x = randn((32, 64), d, seed=5)
    am = ops.amax(x)
    am_t = ops.amax(x, rht_columns=True)
    return "quantize", quantize_args(
        x,
        am,
        rule="all6",
        bound=448.0,
        gradient=True,
        stochastic=True,
        seed=7,
        offset=3,
        rht_rowwise=False,
        rht_columnwise=True,
        columnwise=True,
        amax_columnwise=am_t,
    )


def case_quantize_columnwise_only(d):
    x = randn((32, 32), d, seed=6)
    return "quantize", quantize_args(x, ops.amax(x), rowwise=False, columnwise=True)


def case_dequantize(d):
    c, s, am = quantized(randn((16, 64), d, seed=7))
    return "dequantize", (c, s, am, None, "tensor", 256.0, torch.float32)


def case_dequantize_group_bf16(d):
    x = randn((24, 32), d, seed=8)
    offs = i32([10, 24], d)
    am = ops.amax(x, scope="group", offsets=offs)
    c, s, _, _ = ops.quantize(x, am, offsets=offs, scope="group")
    return "dequantize", (c, s, am, offs, "group", 256.0, torch.bfloat16)


def case_amax_tensor(d):
    return "amax", (randn((8, 32), d, seed=9), "tensor", None, False)


def case_amax_row(d):
    return "amax", (randn((8, 32), d, dtype=torch.float32, seed=10), "row", None, False)


def case_amax_group_rht(d):
    return "amax", (randn((32, 16), d, seed=11), "group", i32([16, 32], d), True)


def case_gemm(d):
    a = quantized(randn((24, 64), d, seed=12))
    b = quantized(randn((40, 64), d, seed=13))
    return "gemm", (*a, "tensor", 256.0, *b, 256.0, None, torch.bfloat16)


def case_gemm_row_bias_fp32(d):
    x = randn((8, 32), d, seed=14)
    am = ops.amax(x, scope="row")
    c, s, _, _ = ops.quantize(x, am, scope="row")
    b = quantized(randn((16, 32), d, seed=15), scale_bound=448.0)
    bias = randn((16,), d, dtype=torch.float32, seed=16)
    return "gemm", (c, s, am, "row", 256.0, *b, 448.0, bias, torch.float32)


def grouped_weight(d, e, n, k, seed):
    """b (E, N, K) quantized per expert: codes (E, N, K/2), scales (E, N, K/16), amax (E)."""
    w = randn((e * n, k), d, seed=seed)
    offs = torch.arange(1, e + 1, dtype=torch.int32, device=d) * n
    am = ops.amax(w, scope="group", offsets=offs)
    c, s, _, _ = ops.quantize(w, am, offsets=offs, scope="group")
    return c.reshape(e, n, k // 2), s.reshape(e, n, k // 16), am


def case_grouped_gemm_m(d):
    a = quantized(randn((40, 32), d, seed=17))
    b = grouped_weight(d, 3, 16, 32, seed=18)
    offs = i32([10, 10, 33], d)
    bias = randn((3, 16), d, dtype=torch.float32, seed=19)
    return "grouped_gemm_m", (*a, "tensor", 256.0, *b, "group", 256.0, offs, bias, torch.bfloat16)


def case_grouped_gemm_k(d):
    t = 48
    a = quantized_t(randn((t, 16), d, seed=20))  # (16, T/2)
    b = quantized_t(randn((t, 32), d, seed=21))  # (32, T/2)
    offs = i32([16, 16, 48], d)
    return "grouped_gemm_k", (*a, "tensor", 256.0, *b, "tensor", 256.0, offs, torch.float32)


def case_grouped_gemm_m_pair(d):
    a = quantized(randn((40, 32), d, seed=30))
    b1, b3 = (grouped_weight(d, 3, 16, 32, seed=s) for s in (31, 32))
    offs = i32([10, 10, 33], d)
    return "grouped_gemm_m_pair", (
        *a, "tensor", 256.0, *b1, *b3, "group", 256.0, offs, torch.bfloat16,
    )  # fmt: skip


def case_grouped_gemm_k_pair(d):
    t = 48
    a1, a3 = (quantized_t(randn((t, 16), d, seed=s)) for s in (33, 34))  # (16, T/2)
    b = quantized_t(randn((t, 32), d, seed=35))  # (32, T/2)
    offs = i32([16, 16, 48], d)
    return "grouped_gemm_k_pair", (
        *a1, *a3, "tensor", 256.0, *b, "tensor", 256.0, offs, torch.float32,
    )  # fmt: skip


def case_pad(d):
    return "pad_token_groups", (randn((20, 32), d, seed=22), i32([5, 5, 17], d), 8)


def case_unpad(d):
    x = randn((20, 32), d, seed=23)
    offs = i32([5, 5, 17], d)
    y, poffs = ops.pad_token_groups(x, offs, 8)
    return "unpad_token_groups", (y, offs, poffs, 20)


def case_zero_rows(d):
    return "zero_rows_past_groups_", (randn((20, 32), d, seed=24), i32([5, 5, 17], d))


def case_swiglu(d):
    return "swiglu", (randn((20, 32), d, seed=25), randn((20, 32), d, seed=26), i32([5, 5, 17], d))


def case_swiglu_backward(d):
    a, b, dy = (randn((20, 32), d, seed=s) for s in (27, 28, 29))
    return "swiglu_backward", (dy, a, b, i32([5, 5, 17], d), True, False)


CASES = [
    case_quantize_tensor,
    case_quantize_fp32_mse_448,
    case_quantize_row,
    case_quantize_group_columnwise,
    case_quantize_virtual_pad,
    case_quantize_16x16,
    case_quantize_experts,
    case_amax_quantize_experts,
    case_amax_quantize_experts_rowwise,
    case_quantize_gradient_sr_rht,
    case_quantize_columnwise_only,
    case_dequantize,
    case_dequantize_group_bf16,
    case_amax_tensor,
    case_amax_row,
    case_amax_group_rht,
    case_gemm,
    case_gemm_row_bias_fp32,
    case_grouped_gemm_m,
    case_grouped_gemm_k,
    case_grouped_gemm_m_pair,
    case_grouped_gemm_k_pair,
    case_pad,
    case_unpad,
    case_zero_rows,
    case_swiglu,
    case_swiglu_backward,
]
CASE_IDS = [c.__name__[len("case_") :] for c in CASES]


def as_tuple(out, args=()):
    """An op's outputs as a tuple; for an in-place op (no outputs) the tensor it mutated."""
    if out is None:
        return (args[0],)
    return out if isinstance(out, (tuple, list)) else (out,)


def test_every_op_has_a_case():
    names = {c(torch.device("cpu"))[0] for c in CASES}
    assert names == {
        "quantize",
        "quantize_experts",
        "amax_quantize_experts",
        "dequantize",
        "amax",
        "gemm",
        "grouped_gemm_m",
        "grouped_gemm_k",
        "grouped_gemm_m_pair",
        "grouped_gemm_k_pair",
        "pad_token_groups",
        "unpad_token_groups",
        "zero_rows_past_groups_",
        "swiglu",
        "swiglu_backward",
    }
    registered = {s.name[5:] for s in torch._C._jit_get_all_schemas() if s.name.startswith("f46::")}
    assert names == registered  # every registered op has an opcheck case


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_opcheck(case, device):
    name, args = case(device)
    torch.library.opcheck(getattr(F46, name).default, args)


def to_meta(a):
    return a.to("meta") if isinstance(a, torch.Tensor) else a


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_meta_shapes_equal_real(case, device):
    name, args = case(device)
    op = getattr(F46, name)
    real = as_tuple(op(*args), args)
    meta_args = [to_meta(a) for a in args]
    meta = as_tuple(op(*meta_args), meta_args)
    assert len(real) == len(meta)
    for r, m in zip(real, meta):
        assert m.device.type == "meta"
        assert (tuple(m.shape), m.dtype) == (tuple(r.shape), r.dtype)
        assert r.device.type == torch.device(device).type


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_cuda_equals_cpu(case):
    name, args = case("cpu")
    op = getattr(F46, name)
    cpu = as_tuple(op(*args), args)
    cuda_args = [a.cuda() if isinstance(a, torch.Tensor) else a for a in args]
    cuda = as_tuple(op(*cuda_args), cuda_args)
    for c, g in zip(cpu, cuda):
        if name.startswith("grouped_gemm") or name == "gemm":
            # N10: accumulation order is backend-defined; values agree to FP32 rounding.
            torch.testing.assert_close(g.cpu().float(), c.float(), rtol=1e-2, atol=1e-2)
        elif name.startswith("swiglu"):
            # N13: 1 + exp(-x) is the backend's (CUDA expf as PyTorch's kernel, the CPU's
            # std::exp): one bf16 unit apart at most (test_swiglu.py checks CUDA == PyTorch).
            torch.testing.assert_close(g.cpu().float(), c.float(), rtol=2**-7, atol=1e-5)
        else:
            assert torch.equal(g.cpu(), c), name


# ---- wrappers: defaults, layouts, strides --------------------------------------------------
def test_wrapper_defaults_match_schema_arguments(device):
    x = randn((32, 64), device, seed=30)
    am = ops.amax(x)
    got = ops.quantize(x, am)
    want = F46.quantize(*quantize_args(x, am))
    for g, w in zip(got, want):
        assert torch.equal(g, w)
    assert got[2].shape == (0,) and got[3].shape == (0,)  # outputs not asked for
    assert got[0].dtype == torch.uint8 and got[0].shape == (32, 32)
    assert got[1].dtype == torch.uint8 and got[1].shape == (32, 4)


def test_row_strided_input_equals_contiguous(device):
    big = randn((32, 128), device, seed=31)
    x = big[:, 32:96]  # (32, 64), row stride 128: the view's strides must reach the core
    assert not x.is_contiguous()
    am = ops.amax(x.contiguous())
    for g, w in zip(ops.quantize(x, am), ops.quantize(x.contiguous(), am)):
        assert torch.equal(g, w)


def test_dequantize_roundtrip_is_close(device):
    x = randn((64, 64), device, dtype=torch.float32, seed=32)
    c, s, am = quantized(x)
    y = ops.dequantize(c, s, am, dtype=torch.float32)
    assert y.shape == x.shape and y.dtype == torch.float32
    rel = ((y - x).norm() / x.norm()).item()
    assert 0 < rel < 0.2  # NVFP4 keeps ~1 significant digit; a layout bug gives rel ~ 1.4


def test_gemm_equals_matmul_of_dequantized(device):
    a = quantized(randn((16, 64), device, seed=33))
    b = quantized(randn((24, 64), device, seed=34))
    out = ops.gemm(*a, *b, out_dtype=torch.float32)
    da = ops.dequantize(*a, dtype=torch.float32).double().cpu()
    db = ops.dequantize(*b, dtype=torch.float32).double().cpu()
    ref = da @ db.T
    rel = ((out.double().cpu() - ref).norm() / ref.norm()).item()
    assert rel < 1e-5


def test_pad_unpad_roundtrip(device):
    x = randn((21, 16), device, seed=35)
    offs = i32([4, 4, 19], device)
    y, poffs = ops.pad_token_groups(x, offs, 16)
    assert y.shape == (ops.padded_rows(21, 3, 16), 16) and poffs.dtype == torch.int32
    back = ops.unpad_token_groups(y, offs, poffs, 21)
    assert torch.equal(back[:19], x[:19])
    assert torch.equal(back[19:], torch.zeros_like(back[19:]))  # rows past offs[-1]


def test_zero_rows_past_groups_in_place(device):
    """Rows at and past offs[-1] become zeros (NaN included), in place; the others and the
    columns outside a strided view keep every bit."""
    base = randn((9, 12), device, seed=36)
    base[7, 2] = float("nan")
    x = base[:, 2:10]  # (9, 8) rows 12 apart
    keep = base.clone()
    out = ops.zero_rows_past_groups_(x, i32([3, 3, 6], device))
    assert out is x
    assert torch.equal(base[:6], keep[:6]) and torch.equal(base[:, :2], keep[:, :2])
    assert torch.equal(base[6:, 10:], keep[6:, 10:])
    assert torch.equal(base[6:, 2:10], torch.zeros_like(base[6:, 2:10]))
    ops.zero_rows_past_groups_(base, i32([9], device))  # every row grouped: nothing changes
    assert torch.equal(base[:6], keep[:6])
    compiled = torch.compile(lambda t, o: ops.zero_rows_past_groups_(t.clone(), o), fullgraph=True)
    y = randn((5, 4), device, seed=37)
    assert torch.equal(compiled(y, i32([2], device)), torch.cat([y[:2], torch.zeros_like(y[2:])]))


def test_extension_loaded_from_the_package():
    from f46 import _loader

    assert _loader.load().endswith(".so")
    assert hasattr(torch.ops.f46, "quantize")


# ---- errors name the argument --------------------------------------------------------------
def test_error_unsupported_dtype_names_argument(device):
    x = randn((16, 32), device, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="`x`.*float64|`x`.*Double"):
        ops.quantize(x, torch.ones(1, device=device))


def test_error_amax_dtype_names_argument(device):
    x = randn((16, 32), device)
    with pytest.raises(RuntimeError, match="amax"):
        ops.quantize(x, torch.ones(1, dtype=torch.float64, device=device))


def test_error_ndim_names_argument(device):
    with pytest.raises(RuntimeError, match="`x` must be 2-D"):
        ops.quantize(randn((2, 16, 32), device), torch.ones(1, device=device))
    with pytest.raises(RuntimeError, match="`b_codes` must be 3-D"):
        a = quantized(randn((16, 32), device))
        ops.grouped_gemm_m(*a, *a, i32([16], device))


def test_error_quantize_experts_names_argument(device):
    w = randn((3, 16, 32), device)
    with pytest.raises(RuntimeError, match="quantize_experts: `w` must be 3-D"):
        ops.quantize_experts(w[0], torch.ones(3, device=device))
    with pytest.raises(RuntimeError, match="quantize_experts: `amax` must have E = 3.*got 2"):
        ops.quantize_experts(w, torch.ones(2, device=device))
    with pytest.raises(RuntimeError, match="x columns must be a multiple of 16"):
        ops.quantize_experts(randn((3, 16, 40), device), torch.ones(3, device=device))


def test_error_amax_quantize_experts_names_argument(device):
    w = randn((3, 16, 32), device)
    with pytest.raises(RuntimeError, match="amax_quantize_experts: `w` must be 3-D"):
        ops.amax_quantize_experts(w[0])
    with pytest.raises(RuntimeError, match="amax_quantize_experts: `rule` must be .*got 'l2'"):
        ops.amax_quantize_experts(w, rule="l2")
    with pytest.raises(RuntimeError, match="x columns must be a multiple of 16"):
        ops.amax_quantize_experts(randn((3, 16, 40), device))


def test_error_columns_not_multiple_of_16(device):
    x = randn((16, 40), device)
    with pytest.raises(RuntimeError, match="x columns must be a multiple of 16"):
        ops.quantize(x, ops.amax(x))


def test_error_bad_option_strings(device):
    x = randn((16, 32), device)
    am = ops.amax(x)
    with pytest.raises(RuntimeError, match="`scope`.*'cols'"):
        ops.quantize(x, am, scope="cols")
    with pytest.raises(RuntimeError, match="`rule`.*'l2'"):
        ops.quantize(x, am, rule="l2")
    with pytest.raises(RuntimeError, match="`block`.*8"):
        ops.quantize(x, am, block=8)
    with pytest.raises(RuntimeError, match="`a_scope`.*'x'"):
        a = quantized(x)
        ops.gemm(*a, *a, a_scope="x")


def test_error_stochastic_with_error_rule_names_rule(device):
    x = randn((16, 32), device)
    with pytest.raises(RuntimeError, match="mae"):
        ops.quantize(x, ops.amax(x), rule="mae", stochastic=True)


def test_error_gemm_k_mismatch(device):
    a = quantized(randn((16, 64), device))
    b = quantized(randn((16, 32), device, seed=1))
    with pytest.raises(RuntimeError, match="K = "):
        ops.gemm(*a, *b)


def test_error_group_scope_needs_offsets(device):
    x = randn((16, 32), device)
    with pytest.raises(RuntimeError, match="offsets"):
        ops.amax(x, scope="group")
    with pytest.raises(RuntimeError, match="offsets"):
        ops.quantize(x, torch.ones(1, device=device), scope="group")


def test_error_unpad_num_rows(device):
    x = randn((16, 16), device)
    offs = i32([16], device)
    y, poffs = ops.pad_token_groups(x, offs, 16)
    with pytest.raises(RuntimeError, match="`num_rows`"):
        ops.unpad_token_groups(y, offs, poffs, -1)
    with pytest.raises(RuntimeError, match="`alignment`"):
        ops.pad_token_groups(x, offs, 0)


@pytest.mark.parametrize("gradient", [False, True])
def test_quantize_virtual_pad_equals_padded_copy(device, gradient):
    """N12 virtual padding: ops.quantize(x, source_offsets=offs) is bitwise the quantization of
    pad_token_groups(x, offs, 16), and padded_offsets gives the ends that call writes."""
    x = randn((70, 64), device, seed=40)
    offs = i32([9, 9, 41, 66], device)  # an empty group, 4 rows past the end
    xp, poffs = ops.pad_token_groups(x, offs, 16)
    assert torch.equal(ops.padded_offsets(offs, 16), poffs)
    am = ops.amax(x, scope="group", offsets=offs)
    kw = dict(scope="group", rowwise=False, columnwise=True)
    if gradient:
        kw.update(rule="all6", scale_bound=448.0, gradient=True, stochastic=True, seed=3, offset=2)
    want = ops.quantize(xp, am, offsets=poffs, **kw)
    got = ops.quantize(x, am, offsets=poffs, source_offsets=offs, **kw)
    assert torch.equal(got[2], want[2]) and torch.equal(got[3], want[3])
    with pytest.raises(RuntimeError, match="source_offsets needs cfg.columnwise without"):
        ops.quantize(x, am, offsets=poffs, source_offsets=offs, scope="group", columnwise=True)
