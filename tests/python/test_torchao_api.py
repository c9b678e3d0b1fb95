"""f46.torchao keeps torchao's four-over-six API: names, signatures and defaults (written out
literally below, as read in torchao's four-over-six PR), return types and exception types; the
top-level f46 names with torchao's names are the same objects. Numerics and layouts:
test_torchao_numerics.py."""

import dataclasses
import inspect

import f46.torchao as T
import pytest
import torch
from f46.torchao import four_over_six as dense
from f46.torchao import four_over_six_grouped as grouped

_ = inspect.Parameter.empty
POS = inspect.Parameter.POSITIONAL_OR_KEYWORD
KW = inspect.Parameter.KEYWORD_ONLY


def sig(fn, skip=0):
    """[(name, kind, default)] of fn's parameters, the first `skip` left out."""
    ps = list(inspect.signature(fn).parameters.values())[skip:]
    return [(p.name, p.kind, p.default) for p in ps]


def P(name, default=_, kind=POS):
    return (name, kind, default)


def K(name, default):
    return (name, KW, default)


BF16 = torch.bfloat16
AUTO = T.KernelPreference.AUTO

EXPECTED = {
    "four_over_six_global_encode_scale": [P("global_amax"), P("e4m3_scale_bound", 256)],
    "four_over_six_quantize": [
        P("x"),
        P("global_amax"),
        K("block", "1x16"),
        K("err_mode", "mae"),
        K("e4m3_scale_bound", 256),
    ],
    "nvfp4_dequantize": [
        P("codes"),
        P("scales"),
        P("global_amax"),
        K("e4m3_scale_bound", 256),
        K("out_dtype", BF16),
    ],
    "four_over_six_dequantize": [
        P("codes"),
        P("scales"),
        P("global_amax"),
        K("e4m3_scale_bound", 256),
        K("out_dtype", BF16),
    ],
    "four_over_six_grouped_mm": [
        P("A"),
        P("B"),
        P("offs"),
        P("bias", None),
        K("err_mode", "mae"),
        K("e4m3_scale_bound", 256),
        K("row_scaled_activation", False),
        K("weight_block", "16x16"),
        K("backward_override", None),
        K("pad_token_groups_for_grouped_mm", False),
    ],
    "four_over_six_quantize_expert_weights": [
        P("weight"),
        K("err_mode", "mae"),
        K("e4m3_scale_bound", 256),
        K("weight_block", "16x16"),
    ],
    "four_over_six_grouped_mm_prequantized": [
        P("A"),
        P("quantized_weight"),
        P("offs"),
        K("row_scaled_activation", False),
    ],
    "pad_token_groups": [
        P("input_act"),
        P("group_end_offsets"),
        P("alignment_size", 32),
        P("kernel_preference", AUTO),
    ],
    "unpad_token_groups": [
        P("padded_output"),
        P("original_group_end_offsets"),
        P("padded_group_start_offsets"),
        P("num_tokens"),
        P("alignment_size", 32),
        P("kernel_preference", AUTO),
    ],
    "_quantize_then_scaled_grouped_mm": [
        P("A"),
        P("B_t"),
        P("config"),
        P("offs", None),
        P("bias", None),
    ],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_function_signatures(name):
    assert sig(getattr(T, name)) == EXPECTED[name]


def test_four_over_six_mm_is_an_autograd_function():
    assert issubclass(T.four_over_six_mm, torch.autograd.Function)
    assert T.four_over_six_linear == T.four_over_six_mm.apply
    assert sig(T.four_over_six_mm.forward, skip=1) == [
        P("input_hp"),
        P("weight_hp"),
        P("bias"),
        P("err_mode", "mae"),
        P("e4m3_scale_bound", 256),
        P("row_scaled_activation", False),
        P("backward_override", None),
        P("weight_block", "16x16"),
    ]


def test_linear_module_signatures():
    assert issubclass(T.NVFP4FourOverSixLinear, torch.nn.Linear)
    knobs = [
        P("err_mode", "mae"),
        P("e4m3_scale_bound", 256),
        P("row_scaled_activation", False),
        P("backward_override", None),
        P("weight_block", "16x16"),
    ]
    assert sig(T.NVFP4FourOverSixLinear.__init__, skip=1) == [
        P("in_features"),
        P("out_features"),
        P("bias", False),
        *knobs,
        P("device", None),
        P("dtype", None),
    ]
    assert sig(T.NVFP4FourOverSixLinear.from_linear) == [P("mod"), *knobs]


def test_quantized_experts_fields():
    assert issubclass(T.FourOverSixQuantizedExperts, tuple)
    assert T.FourOverSixQuantizedExperts._fields == (
        "codes",
        "scales",
        "blocked_scales",
        "amax",
        "global_scale",
        "err_mode",
        "e4m3_scale_bound",
        "weight_block",
    )


def _fields(cls):
    return [(f.name, f.default) for f in dataclasses.fields(cls)]


def test_training_config_fields():
    assert _fields(T.NVFP4TrainingConfig) == [
        ("kernel_preference", T.KernelPreference.TRITON),
        ("process_group", None),
        ("world_size", None),
        ("rht_sign_vector", None),
        ("recipe", "default"),
        ("err_mode", "mae"),
        ("e4m3_scale_bound", 256),
        ("row_scaled_activation", False),
        ("backward_override", None),
        ("weight_block", "16x16"),
    ]
    assert T.KernelPreference.TRITON == "triton"  # str-valued, like torchao's enum
    assert [p[0] for p in sig(T.quantize_)] == ["model", "config", "filter_fn", "device"]
    assert sig(T.quantize_)[3] == P("device", None)


def test_grouped_op_config_fields():
    # Field names as torchao's grouped-GEMM dispatcher reads them off the config.
    assert _fields(T.NVFP4FourOverSixTrainingOpConfig) == [
        ("err_mode", "mae"),
        ("e4m3_scale_bound", 256),
        ("row_scaled_activation", False),
        ("weight_block", "16x16"),
        ("backward_override", None),
        ("pad_token_groups_for_grouped_mm", False),
    ]


def test_torchao_module_paths_and_all():
    for mod in (dense, grouped):
        for name in mod.__all__:
            assert getattr(T, name) is getattr(mod, name)
    assert set(grouped.__all__) == {
        "FourOverSixQuantizedExperts",
        "four_over_six_grouped_mm",
        "four_over_six_grouped_mm_prequantized",
        "four_over_six_quantize_expert_weights",
    }
    for name in T.__all__:
        assert hasattr(T, name)


# ---- exception types -----------------------------------------------------------------------
def _x(r=32, c=64):
    return torch.randn(r, c, generator=torch.Generator().manual_seed(0)).bfloat16()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"block": "4x4"}, "block must be"),
        ({"block": 16}, "block must be"),
        ({"err_mode": "l2"}, "err_mode must be"),
        ({"e4m3_scale_bound": 384}, "e4m3_scale_bound must be"),
    ],
)
def test_quantize_bad_knobs(kwargs, match):
    x = _x()
    with pytest.raises(ValueError, match=match):
        T.four_over_six_quantize(x, x.abs().amax().float(), **kwargs)


def test_quantize_bad_shapes():
    x = _x()
    am = x.abs().amax().float()
    with pytest.raises(ValueError, match="2D"):
        T.four_over_six_quantize(x.view(2, 16, 64), am)
    with pytest.raises(ValueError, match="divisible by 16"):
        T.four_over_six_quantize(x[:, :40], am)
    with pytest.raises(ValueError, match="R divisible by 16"):
        T.four_over_six_quantize(x[:20], am, block="16x16")
    with pytest.raises(ValueError, match="row vector"):
        T.four_over_six_quantize(x, am.repeat(7))
    with pytest.raises(ValueError, match="1x16 blocks only"):
        T.four_over_six_quantize(x, x.abs().amax(1).float(), block="16x16")


def test_dequantize_bad_arguments():
    x = _x()
    am = x.abs().amax().float()
    c, s = T.four_over_six_quantize(x, am)
    with pytest.raises(ValueError, match="e4m3_scale_bound"):
        T.nvfp4_dequantize(c, s, am, e4m3_scale_bound=128)
    with pytest.raises(ValueError, match="scales must have shape"):
        T.nvfp4_dequantize(c, s[:, :2], am)
    with pytest.raises(ValueError, match="row vector"):
        T.nvfp4_dequantize(c, s, torch.ones(7))


def test_linear_bad_arguments():
    x, w = _x(128, 128), _x(256, 128)
    with pytest.raises(ValueError, match="divisible by 128"):
        T.four_over_six_linear(x[:100], w, None)
    with pytest.raises(ValueError, match="no quantized backward"):
        T.four_over_six_linear(x, w, None, "mae", 256, True, "quantized")
    with pytest.raises(ValueError, match="backward_override"):
        T.four_over_six_linear(x, w, None, "mae", 256, False, "bf16")
    with pytest.raises(ValueError, match="weight_block|block must be"):
        T.four_over_six_linear(x, w, None, "mae", 256, False, None, "32x32")
    with pytest.raises(ValueError, match="err_mode"):
        T.four_over_six_linear(x, w, None, "rmse")
    # The weight is (N, K): a transposed (K, N) weight is a layout mismatch, not a product.
    with pytest.raises(ValueError, match=r"\(N, K\)"):
        T.four_over_six_linear(x, w.t(), None)
    with pytest.raises(ValueError, match="bias"):
        T.four_over_six_linear(x, w, torch.zeros(128, dtype=torch.bfloat16))


def test_grouped_bad_arguments():
    a, b = _x(256, 256), _x(2 * 128, 256).view(2, 128, 256)
    offs = torch.tensor([128, 256], dtype=torch.int32)
    with pytest.raises(ValueError, match="1D int32"):
        T.four_over_six_grouped_mm(a, b, offs.long())
    with pytest.raises(ValueError, match="one group-end offset per expert"):
        T.four_over_six_grouped_mm(a, b, offs[:1])
    with pytest.raises(ValueError, match="divisible by 128"):
        T.four_over_six_grouped_mm(a[:, :144], b[:, :, :144].contiguous(), offs)
    with pytest.raises(ValueError, match="backward_override"):
        T.four_over_six_grouped_mm(a, b, offs, backward_override="bf16")
    # torch._grouped_mm's (E, K, N) operand where torchao takes (E, N, K): raises.
    with pytest.raises(ValueError, match=r"\(E, N, K\)"):
        T.four_over_six_grouped_mm(a, b.transpose(-2, -1), offs)
    with pytest.raises(ValueError, match=r"\(E, N, K\)"):
        T.four_over_six_grouped_mm(a, b[0], offs)


def test_prequantized_bad_arguments():
    a, b = _x(256, 128), _x(256, 128).view(2, 128, 128)
    offs = torch.tensor([128, 256], dtype=torch.int32)
    with torch.no_grad():
        q = T.four_over_six_quantize_expert_weights(b)
    with pytest.raises(RuntimeError, match="inference-only"):
        T.four_over_six_grouped_mm_prequantized(a, q, offs)
    with torch.no_grad():
        with pytest.raises(ValueError, match="disagree on K"):
            T.four_over_six_grouped_mm_prequantized(torch.cat([a, a], 1), q, offs)
        with pytest.raises(ValueError, match="1D int32"):
            T.four_over_six_grouped_mm_prequantized(a, q, offs.long())
    with pytest.raises(ValueError, match="divisible by 128"):
        T.four_over_six_quantize_expert_weights(b[:, :, :64])


def test_training_config_validation():
    with pytest.raises(ValueError, match="recipe must be"):
        T.NVFP4TrainingConfig(recipe="4over6")
    with pytest.raises(ValueError, match="err_mode configures the 'four_over_six'"):
        T.NVFP4TrainingConfig(err_mode="mse")
    with pytest.raises(ValueError, match="stay at its default under recipe='default'"):
        T.NVFP4TrainingConfig(backward_override="dequantized")
    with pytest.raises(ValueError, match="err_mode must be"):
        T.NVFP4TrainingConfig(recipe="four_over_six", err_mode="rmse")
    with pytest.raises(ValueError, match="e4m3_scale_bound must be"):
        T.NVFP4TrainingConfig(recipe="four_over_six", e4m3_scale_bound=384)
    with pytest.raises(ValueError, match="backward_override must be"):
        T.NVFP4TrainingConfig(recipe="four_over_six", backward_override="bf16")
    with pytest.raises(ValueError, match="weight_block must be"):
        T.NVFP4TrainingConfig(recipe="four_over_six", weight_block="32x32")
    with pytest.raises(ValueError, match="world_size configures the 'default'"):
        T.NVFP4TrainingConfig(recipe="four_over_six", world_size=2)
    with pytest.raises(ValueError, match="weight_block must be"):
        T.NVFP4FourOverSixTrainingOpConfig(weight_block="1x32")
    with pytest.raises(ValueError, match="config"):
        T._quantize_then_scaled_grouped_mm(_x(), _x().view(1, 32, 64), object())


def test_quantize_with_grouped_op_config_leaves_2d_weights_alone():
    """The op config wraps 3-D (expert) weights only (test_torchao_grouped_weight.py); a
    Linear's weight stays a plain Parameter, the same object."""
    lin = torch.nn.Linear(128, 128)
    w = lin.weight
    T.quantize_(lin, T.NVFP4FourOverSixTrainingOpConfig())
    assert lin.weight is w and type(lin.weight) is torch.nn.Parameter


def test_default_recipe_is_torchao_or_a_clear_error():
    model = torch.nn.Sequential(torch.nn.Linear(128, 128))
    try:
        import torchao.prototype.moe_training.nvfp4_training.nvfp4_training  # noqa: F401
    except ImportError:
        with pytest.raises(NotImplementedError, match="recipe='four_over_six'"):
            T.quantize_(model, T.NVFP4TrainingConfig())
        with pytest.raises(NotImplementedError):
            T.NVFP4Linear(128, 128)
    else:
        T.quantize_(model, T.NVFP4TrainingConfig())
        assert type(model[0]).__name__ == "NVFP4Linear"
