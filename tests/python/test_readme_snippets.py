"""The README's snippets run as a user would paste them: the first ```python block of each Python
section (PyTorch, torchao, Hugging Face transformers, torchtitan) is executed on the CPU in a
fresh namespace and must leave the objects its comments promise; the C++ block is made of lines of
examples/cpp/quantize_inspect.cpp, in order (that example is built and run by tests/consumer)."""

from __future__ import annotations

import pathlib
import re

import pytest
import torch
from f46.integrations._swap import SwappedModule
from f46.torchao import NVFP4FourOverSixLinear
from f46.torchao.grouped_weight import FourOverSixGroupedWeight

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
SECTIONS = ("PyTorch", "torchao", "Hugging Face transformers", "torchtitan")


def _snippets() -> dict[str, str]:
    """Section title -> its first ```python block."""
    out = {}
    for title in SECTIONS:
        code = re.search(r"```python\n(.*?)```", _section(title), re.S)
        assert code, f"README section '{title}' has no python snippet"
        out[title] = code.group(1)
    return out


def _section(title: str) -> str:
    m = re.search(r"^### " + re.escape(title) + r"\n(.*?)(?=^##)", README.read_text(), re.S | re.M)
    assert m, f"README has no section '### {title}'"
    return m.group(1)


def _run(code: str) -> dict:
    ns: dict = {"__name__": "readme_snippet"}
    torch.manual_seed(0)
    exec(compile(code, str(README), "exec"), ns)  # noqa: S102 - the README's own code
    return ns


def test_pytorch_snippet():
    ns = _run(_snippets()["PyTorch"])
    assert ns["y"].shape == (64, 512) and ns["z"].shape == (96, 512)
    assert ns["out"].shape == (96, 256) and torch.isfinite(ns["out"]).all()
    assert ns["w"].grad is not None and ns["experts"].w2.grad is not None
    # the linear is f46's NVFP4 product, not a BF16 matmul
    assert not torch.equal(ns["y"], ns["x"] @ ns["w"].t())


def _code_lines(text: str) -> list[str]:
    """Non-empty lines without their // comments, whitespace squeezed."""
    lines = (re.sub(r"//.*", "", ln) for ln in text.splitlines())
    return [" ".join(ln.split()) for ln in lines if ln.strip()]


def test_cpp_snippet_is_the_example():
    block = re.search(r"```cpp\n(.*?)```", _section("C++"), re.S)
    assert block, "README section 'C++' has no cpp snippet"
    example = README.parent / "examples" / "cpp" / "quantize_inspect.cpp"
    remaining = iter(_code_lines(example.read_text()))
    for line in _code_lines(block.group(1)):
        assert any(line == ex for ex in remaining), f"README C++ line not in the example: {line}"


def test_torchao_snippet():
    ns = _run(_snippets()["torchao"])
    assert ns["y"].shape == (300, 512) and ns["y"].dtype == torch.bfloat16
    assert isinstance(ns["model"][0], NVFP4FourOverSixLinear)
    assert isinstance(ns["moe_model"].w1, FourOverSixGroupedWeight)
    grad = ns["moe_model"].w1.grad
    assert grad is not None and grad.shape == (4, 512, 256) and torch.isfinite(grad).all()


def test_transformers_snippet():
    pytest.importorskip("transformers")
    ns = _run(_snippets()["Hugging Face transformers"])
    report = str(ns["report"])
    assert "experts" in report and "router / gate" in report
    experts = ns["model"].model.layers[0].mlp.experts
    assert isinstance(experts, SwappedModule)  # converted to f46's experts, not left in BF16
    assert experts.gate_up_proj.grad is not None  # the snippet's backward reached the experts


def test_torchtitan_snippet():
    pytest.importorskip("torchtitan.models.common.config_utils")
    ns = _run(_snippets()["torchtitan"])
    assert ns["out"].shape == (2, 64, 256) and torch.isfinite(ns["out"]).all()
    gate = ns["moe"].router.gate  # the router left alone: still torchtitan's own Linear
    assert type(gate).__module__.startswith("torchtitan") and type(gate).__name__ == "Linear"
    experts = ns["moe"].routed_experts.inner_experts
    assert isinstance(experts, SwappedModule) and type(experts).__name__ == "NVFP4GroupedExperts"


def test_readme_is_a_front_page():
    """At most ~150 lines (a newcomer reads it in two minutes), the two commands first."""
    lines = README.read_text().splitlines()
    assert len(lines) <= 155, f"README.md has {len(lines)} lines"
    quick = lines.index("## Quick start")
    assert quick < 15 and "scripts/demo.sh" in "\n".join(lines[quick : quick + 5])
