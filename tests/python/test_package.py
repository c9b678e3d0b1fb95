"""The package's shape: importing f46 changes no process state, the top-level namespace is f46's
own API (torchao's names live in f46.torchao), the Python modules import downwards only, and a
recipe's allowed values and op arguments come from f46.recipe."""

import ast
import os
import pathlib
import subprocess
import sys
import textwrap

import f46
import f46.torchao as T
import pytest
import torch
from f46 import ops, recipe
from f46.torchao import _common

PACKAGE = pathlib.Path(f46.__file__).resolve().parent


def _modules() -> list[str]:
    """Every module of the f46 package, dotted (f46.demo.__main__ left out: it runs the demo)."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


# ---- no import-time side effects ---------------------------------------------------------
def test_importing_f46_changes_no_environment_variable():
    env = dict(os.environ)
    for name in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST"):
        env.pop(name, None)  # would hide a setdefault
    code = textwrap.dedent(
        f"""
        import importlib, os, sys
        import torch, torch.distributed
        before = dict(os.environ)
        for name in {_modules()!r}:
            importlib.import_module(name)
        after = dict(os.environ)
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        print("CHANGED", changed)
        sys.exit(1 if changed else 0)
        """
    )
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


# ---- the top-level namespace ---------------------------------------------------------------
MOVED = [
    "four_over_six_dequantize",
    "four_over_six_global_encode_scale",
    "four_over_six_grouped_mm",
    "four_over_six_linear",
    "four_over_six_mm",
    "four_over_six_quantize",
    "nvfp4_dequantize",
]


def test_top_level_is_f46s_own_api():
    for name in f46.__all__:
        assert hasattr(f46, name), name
        assert name not in T.__all__, f"f46.{name} is torchao's name ({name} in f46.torchao)"
    for name in MOVED + ["pad_token_groups", "unpad_token_groups"]:
        assert name not in f46.__all__ and name not in vars(f46), name


@pytest.mark.parametrize("name", MOVED)
def test_old_torchao_names_warn_and_forward(name):
    with pytest.warns(DeprecationWarning, match=rf"f46\.torchao\.{name}"):
        fn = getattr(f46, name)
    assert fn is getattr(T, name)


@pytest.mark.parametrize("name", ["pad_token_groups", "unpad_token_groups"])
def test_old_pad_names_raise_pointing_to_both(name):
    with pytest.raises(AttributeError, match=rf"f46\.torchao\.{name}.*f46\.functional\.{name}"):
        getattr(f46, name)
    assert not hasattr(f46, name)
    with pytest.raises(ImportError):
        exec(f"from f46 import {name}", {})


def test_unknown_attribute_is_a_plain_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        f46.not_a_name  # noqa: B018


def test_the_two_pad_functions_keep_their_meanings():
    """torchao's: 3 outputs, alignment_size 32; f46.functional's: 2 outputs, alignment 128."""
    x = torch.randn(20, 16)
    offs = torch.tensor([5, 20], dtype=torch.int32)
    padded, starts, ends = T.pad_token_groups(x, offs)
    assert starts.tolist() == [0, 32] and ends.tolist() == [32, 64] and padded.shape == (96, 16)
    xp, poffs = f46.functional.pad_token_groups(x, offs)
    assert poffs.tolist() == [128, 256] and xp.shape == (ops.padded_rows(20, 2, 128), 16)


# ---- imports go downwards ------------------------------------------------------------------
def _imports(module: str) -> set[str]:
    """The f46 modules `module` imports (at any depth of its code), resolved to modules."""
    path = PACKAGE.parent.joinpath(*module.split("."))
    is_pkg = path.is_dir()
    src = (path / "__init__.py") if is_pkg else path.with_suffix(".py")
    package = module if is_pkg else module.rpartition(".")[0]
    known, out = set(_modules()), set()
    for node in ast.walk(ast.parse(src.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            if node.level:
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in known:
                    out.add(sub)
                elif base in known:
                    out.add(base)
    out.discard(module)
    return out


def test_no_import_cycle():
    graph = {m: _imports(m) for m in _modules()}
    state: dict[str, int] = {}

    def visit(m, stack):
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle = stack[stack.index(n) :] + [n]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if n not in state:
                visit(n, stack + [n])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [m])


def test_import_graph_sees_the_torchao_modules():
    deps = _imports("f46.torchao.utils")
    assert {"f46.torchao._common", "f46.torchao.four_over_six_grouped"} <= deps
    assert "f46.torchao.utils" not in _imports("f46.torchao.four_over_six_grouped")


# ---- a recipe's values and op arguments come from f46.recipe ---------------------------------
def test_recipe_accepts_exactly_its_lists():
    for mode in recipe.ERR_MODES:
        assert f46.Recipe(err_mode=mode).err_mode == mode
    for override in recipe.BACKWARD_OVERRIDES:
        assert f46.Recipe(backward_override=override).backward_override == override
    for rounding in recipe.GRAD_ROUNDINGS:
        assert f46.Recipe(grad_rounding=rounding).grad_rounding == rounding
    for block in recipe.WEIGHT_BLOCKS.values():
        assert f46.Recipe(weight_block=block).weight_block == block
    for field, bad in (("err_mode", "l2"), ("backward_override", "bf16"),
                       ("grad_rounding", "sr"), ("weight_block", 4)):  # fmt: skip
        with pytest.raises(ValueError, match=field):
            f46.Recipe(**{field: bad})


def test_torchao_knobs_checked_against_the_recipe_lists():
    for mode in recipe.ERR_MODES:
        ok = mode in recipe.FOUR_OVER_SIX_ERR_MODES
        try:
            T.NVFP4FourOverSixTrainingOpConfig(err_mode=mode)
            assert ok, mode
        except ValueError:
            assert not ok, mode
    for override in recipe.BACKWARD_OVERRIDES:
        assert T.NVFP4FourOverSixTrainingOpConfig(backward_override=override)
    for name, block in recipe.WEIGHT_BLOCKS.items():
        assert _common.check_block(name) == block
        assert T.NVFP4FourOverSixTrainingOpConfig(weight_block=name).weight_block == name
    for bound in recipe.PRESET_SCALE_BOUNDS:
        assert T.NVFP4FourOverSixTrainingOpConfig(e4m3_scale_bound=bound)
    assert f46.Recipe.four_over_six().scale_bound in recipe.PRESET_SCALE_BOUNDS
    assert f46.Recipe.nvfp4().scale_bound in recipe.PRESET_SCALE_BOUNDS
    with pytest.raises(ValueError, match="weight_block must be '1x16' or '16x16', got '4x4'"):
        T.NVFP4FourOverSixTrainingOpConfig(weight_block="4x4")
    with pytest.raises(ValueError, match="block must be '1x16' or '16x16', got \\['1x16'\\]"):
        _common.check_block(["1x16"])


def test_knob_recipe_is_the_recipe_of_the_knobs():
    r = _common.knob_recipe("mse", 448, "1x16", True, "dequantized")
    assert r == f46.Recipe(
        err_mode="mse",
        scale_bound=448.0,
        weight_block=1,
        row_scaled_activation=True,
        backward_override="dequantized",
    )


def test_quantize_kwargs():
    r = f46.Recipe(err_mode="mse", scale_bound=300, weight_block=16, seed=7,
                   grad_rounding="stochastic")  # fmt: skip
    assert r.quantize_kwargs("activation") == dict(rule="mse", scale_bound=300.0, block=1)
    assert r.quantize_kwargs("weight") == dict(rule="mse", scale_bound=300.0, block=16)
    assert r.quantize_kwargs("gradient", 5) == dict(
        rule=recipe.GRAD_RULE,
        scale_bound=recipe.GRAD_SCALE_BOUND,
        block=1,
        gradient=True,
        stochastic=True,
        seed=7,
        offset=5,
    )
    assert r.gradient_gemm_kwargs() == dict(a_bound=448.0, b_bound=300.0, plan="auto")
    with pytest.raises(ValueError, match="operand"):
        r.quantize_kwargs("bias")


def test_quantize_kwargs_bitwise_the_explicit_arguments(device):
    """The helper's arguments quantize bitwise as the spelled-out ones did."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(32, 64, generator=g).to(device)
    r = f46.Recipe(err_mode="mse", scale_bound=448.0, weight_block=16, seed=11,
                   grad_rounding="stochastic")  # fmt: skip
    amax = ops.amax(x)
    cases = [
        ("activation", dict(rule="mse", scale_bound=448.0, block=1)),
        ("weight", dict(rule="mse", scale_bound=448.0, block=16)),
        ("gradient", dict(rule="all6", scale_bound=448.0, block=1, gradient=True,
                          stochastic=True, seed=11, offset=3)),
    ]  # fmt: skip
    for operand, explicit in cases:
        got = ops.quantize(x, amax, **r.quantize_kwargs(operand, 3))
        want = ops.quantize(x, amax, **explicit)
        for a, b in zip(got, want):
            assert torch.equal(a, b), operand
