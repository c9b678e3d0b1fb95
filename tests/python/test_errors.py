"""Every bad argument raises an error whose message names it."""

import dataclasses

import f46
import f46.torchao as T
import pytest
import torch
from f46 import ops


@pytest.mark.parametrize(
    "kw, word",
    [
        ({"err_mode": "l2"}, "err_mode"),
        ({"scale_bound": 0.0}, "scale_bound"),
        ({"scale_bound": 500.0}, "scale_bound"),
        ({"scale_bound": "256"}, "scale_bound"),
        ({"weight_block": 8}, "weight_block"),
        ({"row_scaled_activation": 1}, "row_scaled_activation"),
        ({"backward_override": "fp8"}, "backward_override"),
        ({"row_scaled_activation": True, "backward_override": "quantized"}, "row_scaled"),
        ({"grad_rounding": "sr"}, "grad_rounding"),
        ({"wgrad_rht": "yes"}, "wgrad_rht"),
        ({"pad_token_groups": 0}, "pad_token_groups"),
        ({"pad_token_groups": 24}, "pad_token_groups"),
        ({"seed": -1}, "seed"),
    ],
)
def test_recipe_validation(kw, word):
    with pytest.raises(ValueError, match=word):
        f46.Recipe(**kw)


def test_recipe_defaults_and_presets():
    r = f46.Recipe()
    assert (r.err_mode, r.scale_bound, r.weight_block) == ("mae", 256.0, 16)
    assert r.dense_backward() == "quantized" and r.grouped_backward() == "high_precision"
    assert f46.Recipe(row_scaled_activation=True).dense_backward() == "high_precision"
    assert f46.Recipe(backward_override="dequantized").grouped_backward() == "dequantized"
    n = f46.Recipe.nvfp4()
    assert (n.err_mode, n.scale_bound) == ("all6", 448.0)
    s = f46.Recipe.four_over_six()
    assert (s.err_mode, s.scale_bound) == ("mae", 256.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.err_mode = "mse"  # frozen
    assert hash(r) == hash(f46.Recipe())


def test_linear_bad_arguments(device):
    x = torch.randn(8, 64, dtype=torch.bfloat16, device=device)
    w = torch.randn(32, 64, dtype=torch.bfloat16, device=device)
    r = f46.Recipe()
    with pytest.raises(ValueError, match="dtype"):
        f46.linear(x.to(torch.int32), w, recipe=r)
    with pytest.raises(ValueError, match="in_features"):
        f46.linear(x[:, :48], w, recipe=r)
    with pytest.raises(ValueError, match=r"w: in_features K=40 must be a multiple of 16"):
        f46.linear(x[:, :40], w[:, :40], recipe=r)
    with pytest.raises(ValueError, match="bias"):
        f46.linear(x, w, torch.zeros(31, device=device), recipe=r)
    with pytest.raises(ValueError, match="out_features"):
        f46.linear(x, w[:24], recipe=r)  # 16x16 weights need N % 16 == 0
    with pytest.raises(ValueError, match="quantized backward"):
        f46.linear(x, w[:24], recipe=r.replace(weight_block=1))
    with pytest.raises(ValueError, match="w must be"):
        f46.linear(x, w[None], recipe=r)
    with pytest.raises(TypeError, match="recipe"):
        f46.linear(x, w, recipe="mae")
    qw = f46.quantize_weight(w, r)
    with pytest.raises(ValueError, match="inference"):
        f46.linear(x.clone().requires_grad_(), qw, recipe=r)
    with pytest.raises(ValueError, match="recipe"):
        f46.linear(x, qw, recipe=r.replace(err_mode="mse"))


def test_grouped_bad_arguments(device):
    a = torch.randn(24, 64, dtype=torch.bfloat16, device=device)
    b = torch.randn(3, 32, 64, dtype=torch.bfloat16, device=device)
    offs = torch.tensor([8, 16, 24], dtype=torch.int32, device=device)
    r = f46.Recipe()
    with pytest.raises(ValueError, match="offs"):
        f46.grouped_mm(a, b, offs.long(), recipe=r)
    with pytest.raises(ValueError, match="offs"):
        f46.grouped_mm(a, b, offs[:2], recipe=r)
    with pytest.raises(ValueError, match="offs"):
        f46.grouped_mm(a, b, offs[None], recipe=r)
    with pytest.raises(ValueError, match="B must be"):
        f46.grouped_mm(a, b[0], offs, recipe=r)
    with pytest.raises(ValueError, match="A must be"):
        f46.grouped_mm(a[None], b, offs, recipe=r)
    with pytest.raises(ValueError, match="bias"):
        f46.grouped_mm(a, b, offs, torch.zeros(3, 31, device=device), recipe=r)
    with pytest.raises(ValueError, match="in_features"):
        f46.grouped_mm(a[:, :32], b, offs, recipe=r)
    with pytest.raises(ValueError, match=r"B: out_features N=24 must be a multiple of 16 \(16x16"):
        f46.grouped_mm(a, b[:, :24], offs, recipe=r)
    with pytest.raises(ValueError, match="quantized backward"):
        f46.grouped_mm(
            a, b[:, :24], offs, recipe=r.replace(weight_block=1, backward_override="quantized")
        )
    with pytest.raises(ValueError, match="grouped QuantizedWeight"):
        f46.grouped_mm(a, f46.quantize_weight(b[0], r), offs, recipe=r)
    with pytest.raises(ValueError, match="num_tokens_per_expert"):
        f46.F46GroupedExperts(64, 32, 3, r).to(device)(a, torch.tensor([8, 16], device=device))
    with pytest.raises(ValueError, match="expert weights"):
        f46.F46GroupedExperts.from_bf16(b, b, b)


def test_compat_bad_arguments():
    """torchao's names raise torchao's ValueErrors (tests/python/test_torchao_api.py has more)."""
    x = torch.randn(16, 64, dtype=torch.bfloat16)
    am = x.abs().amax().float()
    with pytest.raises(ValueError, match="block"):
        T.four_over_six_quantize(x, am, block="4x4")
    with pytest.raises(ValueError, match="err_mode"):
        T.four_over_six_quantize(x, am, err_mode="l2")
    with pytest.raises(ValueError, match="e4m3_scale_bound"):
        T.four_over_six_quantize(x, am, e4m3_scale_bound=1000)


def test_ops_reject_stochastic_with_error_rule():
    """N6: stochastic rounding only with rule all6 / all4 or gradient mode."""
    x = torch.randn(16, 64, dtype=torch.bfloat16)
    with pytest.raises((RuntimeError, ValueError), match="mae"):
        ops.quantize(x, ops.amax(x), rule="mae", stochastic=True)


def test_compat_matches_core():
    """f46.torchao's names are f46's core ops under torchao's layouts (bitwise)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 64, generator=g).bfloat16()
    am = ops.amax(x)
    codes, scales = T.four_over_six_quantize(x, am[0], err_mode="mse", e4m3_scale_bound=448)
    c, s, _, _ = ops.quantize(x, am, rule="mse", scale_bound=448.0)
    assert torch.equal(codes, c) and torch.equal(scales.view(torch.uint8), s)
    assert scales.dtype == torch.float8_e4m3fn
    deq = T.four_over_six_dequantize(codes, scales, am[0], e4m3_scale_bound=448)
    assert torch.equal(deq, ops.dequantize(c, s, am, scale_bound=448.0))
    with torch.no_grad():
        x = torch.randn(128, 128, generator=g).bfloat16()
        w = (torch.randn(128, 128, generator=g) * 0.1).bfloat16()  # square: N == K
        r = f46.Recipe(weight_block=16)
        assert torch.equal(T.four_over_six_linear(x, w, None), f46.linear(x, w, None, r))
        a = torch.randn(40, 128, generator=g).bfloat16()
        b = (torch.randn(2, 128, 128, generator=g) * 0.1).bfloat16()  # (E, N, K), N == K
        offs = torch.tensor([13, 40], dtype=torch.int32)
        y = T.four_over_six_grouped_mm(a, b, offs, pad_token_groups_for_grouped_mm=True)
        assert torch.equal(y, f46.grouped_mm(a, b, offs, recipe=f46.Recipe(pad_token_groups=128)))
