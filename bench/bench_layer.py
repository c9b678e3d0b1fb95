"""A whole SwiGLU grouped-experts layer, forward + backward: f46 NVFP4 4/6 (quantized and
dequantized backward) vs the same layer in BF16 on torch._grouped_mm, measured in one run.

Usage (GPU): F46_TORCH_LIBRARY=<build>/python/f46/libf46_torch.so python3 bench/bench_layer.py
Prints: shape | mode | ms | x BF16 (BF16 time / f46 time), then the geometric mean per mode.
Uneven (seeded log-normal) routing; tokens sorted by expert; CUDA events, median of REPS;
gradients set to None before each step (until 2026-12-06, a2bdc78, they accumulated, which
added the same ~3 ms of .grad additions to both sides).
"""

from __future__ import annotations

import math
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import f46  # noqa: E402
import f46.functional  # noqa: E402

REPS = int(os.environ.get("F46_BENCH_REPS", "7"))
# F46_LAYER_COMPARE=1: also time the layer with the opt-in paths not yet on by default (the
# fused ops.swiglu and the virtual token-group padding on CUDA), in the same run.
COMPARE = os.environ.get("F46_LAYER_COMPARE", "0") == "1"


def set_opt_in(on: bool) -> None:
    f46.functional.VIRTUAL_PAD_ON_CUDA = on
# name, E, tokens, dim D, hidden F
MOE = [
    ("Mixtral", 8, 16384, 4096, 14336),
    ("DSv3", 16, 32768, 7168, 4096),
    ("Qwen3", 128, 65536, 2048, 1536),
    ("gpt-oss", 32, 32768, 2880, 5760),
]


def routing(e: int, tokens: int, gen: torch.Generator) -> torch.Tensor:
    """Uneven per-expert token counts (multiples of 16) summing to `tokens`."""
    w = torch.exp(torch.randn(e, generator=gen) * 0.6)
    counts = torch.floor(w / w.sum() * tokens / 16).long() * 16
    counts[0] += tokens - counts.sum()
    return counts


def bf16_layer(x, w1, w3, w2, offs):
    h = F.silu(torch._grouped_mm(x, w1.transpose(-2, -1), offs)) * torch._grouped_mm(
        x, w3.transpose(-2, -1), offs
    )
    return torch._grouped_mm(h, w2.transpose(-2, -1), offs)


def layer_operands(e, t, d, f, gen, dev):
    """Routing counts (E), offsets (E) int32, x and dy (T, D), w1/w3 (E, F, D), w2 (E, D, F)."""
    counts = routing(e, t, gen).to(dev)
    offs = torch.cumsum(counts, 0).to(torch.int32)
    x = (torch.randn(t, d, device=dev) * 0.5).to(torch.bfloat16).requires_grad_()
    gy = torch.randn(t, d, device=dev).to(torch.bfloat16)
    w1 = (torch.randn(e, f, d, device=dev) * 0.02).to(torch.bfloat16).requires_grad_()
    w3 = (torch.randn(e, f, d, device=dev) * 0.02).to(torch.bfloat16).requires_grad_()
    w2 = (torch.randn(e, d, f, device=dev) * 0.02).to(torch.bfloat16).requires_grad_()
    return counts, offs, x, gy, w1, w3, w2


def train_step(layer_fn, leaves) -> None:
    """One layer step as training runs it: gradients set to None first (optimizer.zero_grad's
    default), so the backward writes them instead of accumulating into .grad."""
    for t in leaves:
        t.grad = None
    layer_fn()


def median_ms(fn) -> float:
    for _ in range(2):
        fn()
    times = []
    for _ in range(REPS):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def main() -> None:
    gen = torch.Generator().manual_seed(0)
    dev = torch.device("cuda")
    ratios: dict[str, list[float]] = {"quantized": [], "dequantized": []}
    opted: dict[str, list[float]] = {"quantized": [], "dequantized": []}
    print("| shape | mode | ms | TFLOP/s | x BF16 |\n|---|---|---|---|---|")
    for name, e, t, d, f in MOE:
        counts, offs, x, gy, w1, w3, w2 = layer_operands(e, t, d, f, gen, dev)
        flops = 18.0 * t * d * f  # 3 GEMMs forward, 6 backward

        def run_bf16():
            train_step(lambda: bf16_layer(x, w1, w3, w2, offs).backward(gy), (x, w1, w3, w2))

        base = median_ms(run_bf16)
        label = f"{name} E{e} T{t} D{d} F{f}"
        print(f"| {label} | bf16 | {base:8.2f} | {flops / base / 1e9:6.1f} | 1.000 |")
        for mode in ("quantized", "dequantized"):
            layer = f46.F46GroupedExperts.from_bf16(
                w1.detach(), w2.detach(), w3.detach(), f46.Recipe(backward_override=mode)
            )
            layer.to(dev)

            def run_f46():
                train_step(lambda: layer(x, counts).backward(gy), (x, *layer.parameters()))

            default = (layer.fused_swiglu, f46.functional.VIRTUAL_PAD_ON_CUDA)
            for opt_in in (False, True) if COMPARE else (False,):
                layer.fused_swiglu = True if opt_in else default[0]
                set_opt_in(True if opt_in else default[1])
                ms = median_ms(run_f46)
                (opted if opt_in else ratios)[mode].append(base / ms)
                what = ", fused SwiGLU + virtual padding" if opt_in else ""
                print(
                    f"| {label} | f46 4/6, {mode} bwd{what} | {ms:8.2f} | "
                    f"{flops / ms / 1e9:6.1f} | {base / ms:.3f} |"
                )
            set_opt_in(default[1])
            del layer
        del x, gy, w1, w2, w3
        torch.cuda.empty_cache()
    for mode, r in ratios.items():
        gm = math.exp(sum(math.log(v) for v in r) / len(r))
        print(f"| geometric mean | f46 4/6, {mode} bwd | | | {gm:.3f} |")
    for mode, r in opted.items():
        if r:
            gm = math.exp(sum(math.log(v) for v in r) / len(r))
            print(
                f"| geometric mean | f46 4/6, {mode} bwd, fused SwiGLU + virtual padding | | | "
                f"{gm:.3f} |"
            )


if __name__ == "__main__":
    main()
