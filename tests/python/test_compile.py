"""torch.compile(fullgraph=True) of f46.linear / f46.grouped_mm, forward and backward, is
bitwise equal to eager for every backward mode and both weight blocks.

The f46 custom ops stay opaque in the graph (Meta kernels give the shapes). On the CPU the
graphs compile with backend="aot_eager" (AOTAutograd tracing, joint forward/backward graph,
partitioning; the inductor C++ toolchain would take minutes on the 2-core CI machine); one
case also runs through inductor. On CUDA the default (inductor) backend is used.
"""

import os

import f46
import pytest
import torch

MODES = ["high_precision", "dequantized", "quantized"]


def backend_for(device):
    return "inductor" if device == "cuda" else "aot_eager"


def bitwise(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    assert torch.equal(a, b), f"max |diff| = {(a.float() - b.float()).abs().max().item()}"


def fwd_bwd(fn, inputs, dy):
    leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    y = fn(*leaves)
    y.backward(dy)
    return [y.detach()] + [t.grad for t in leaves if t.is_floating_point()]


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("weight_block", [1, 16])
def test_linear_compile_equals_eager(device, mode, weight_block):
    r = f46.Recipe(backward_override=mode, weight_block=weight_block, wgrad_rht=mode == "quantized")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 20, 64, generator=g).bfloat16().to(device)
    w = (torch.randn(32, 64, generator=g) * 0.1).bfloat16().to(device)
    b = torch.randn(32, generator=g).to(device)
    dy = torch.randn(2, 20, 32, generator=g).bfloat16().to(device)

    def fn(x, w, b):
        return f46.linear(x, w, b, r)

    eager = fwd_bwd(fn, [x, w, b], dy)
    compiled = fwd_bwd(
        torch.compile(fn, fullgraph=True, backend=backend_for(device)), [x, w, b], dy
    )
    for e, c in zip(eager, compiled):
        bitwise(c, e)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("weight_block", [1, 16])
def test_grouped_compile_equals_eager(device, mode, weight_block):
    r = f46.Recipe(
        backward_override=mode,
        weight_block=weight_block,
        pad_token_groups=16,
        row_scaled_activation=mode == "dequantized",
    )
    g = torch.Generator().manual_seed(1)
    a = torch.randn(37, 64, generator=g).bfloat16().to(device)
    bw = (torch.randn(3, 32, 64, generator=g) * 0.1).bfloat16().to(device)
    offs = torch.tensor([9, 9, 33], dtype=torch.int32, device=device)
    dy = torch.randn(37, 32, generator=g).bfloat16().to(device)

    def fn(a, bw, offs):
        return f46.grouped_mm(a, bw, offs, recipe=r)

    eager = fwd_bwd(fn, [a, bw, offs], dy)
    compiled = fwd_bwd(
        torch.compile(fn, fullgraph=True, backend=backend_for(device)), [a, bw, offs], dy
    )
    for e, c in zip(eager, compiled):
        bitwise(c, e)


@pytest.mark.skipif(os.environ.get("F46_SKIP_INDUCTOR_CPU") == "1", reason="asked to skip")
def test_linear_compile_inductor_cpu():
    """One case through inductor's C++ backend on the CPU (the bf16 casts around the opaque
    ops are the only generated code)."""
    r = f46.Recipe(backward_override="quantized")
    g = torch.Generator().manual_seed(2)
    x = torch.randn(16, 64, generator=g).bfloat16()
    w = (torch.randn(32, 64, generator=g) * 0.1).bfloat16()
    dy = torch.randn(16, 32, generator=g).bfloat16()

    def fn(x, w):
        return f46.linear(x, w, None, r)

    eager = fwd_bwd(fn, [x, w], dy)
    compiled = fwd_bwd(torch.compile(fn, fullgraph=True), [x, w], dy)
    for e, c in zip(eager, compiled):
        bitwise(c, e)
