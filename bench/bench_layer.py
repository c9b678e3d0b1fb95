"""A whole SwiGLU grouped-experts layer, forward + backward: f46 NVFP4 4/6 (quantized and
dequantized backward) vs the same layer in BF16 on torch._grouped_mm, measured in one run.

Usage (GPU): F46_TORCH_LIBRARY=<build>/python/f46/libf46_torch.so python3 bench/bench_layer.py
Prints per shape and mode: ms, TFLOP/s, x BF16 (BF16 time / f46 time) of a step that quantizes
its weights (as every step after an optimizer update does), the step's peak memory
above what is resident before it (torch.cuda.max_memory_allocated) and what its forward leaves
allocated for the backward (output + saved tensors), then the geometric means;
rows with the GEMM plan forced for the shapes of FORCED_PLANS;
then a gradient-accumulation step of MICRO micro-batches (the tokens split MICRO ways) with the
quantized weights reused across micro-batches (f46.WeightCache, the module default) and
without (cache_weights=False). Uneven (seeded log-normal) routing; tokens sorted by expert;
CUDA events, median of REPS; gradients set to None before each step. F46_LAYER_STEPS=k (default
1) times k steps back to back between two events (ms per step = their time / k): the host no
longer waits for each step, so its launch time and stalls leave the figure (an experiment
towards a steadier measure; the acceptance tables use k = 1).
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

REPS = int(os.environ.get("F46_BENCH_REPS", "7"))
REUSE = os.environ.get("F46_LAYER_REUSE", "1") != "0"  # 0: skip the micro-batch rows (short runs)
STEPS = int(os.environ.get("F46_LAYER_STEPS", "1"))  # steps per timing (1: synchronize each)
MICRO = 4
MODES = ("quantized", "dequantized")
GIB = float(1 << 30)
DEVICE = "cuda"  # tests/python/test_bench_smoke.py runs main() on the CPU with tiny shapes
# Each shape's layer also timed with the recipe's gemm_plan forced to these plans (rows not in
# the automatic geometric mean; their geometric mean follows), so each layer run
# re-checks the automatic rule (src/cuda/gemm/gemm_choice.cpp): it takes plan (c) on every
# shape, so plan (a) is forced on each.
FORCED_PLANS = {"Mixtral": ("a",), "DSv3": ("a",), "Qwen3": ("a",), "gpt-oss": ("a",)}
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
        for _ in range(STEPS):
            fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / STEPS)
    return statistics.median(times)


def peak_gib(fn) -> float:
    """fn's peak allocation above what is allocated before it (after a warm-up run)."""
    fn()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - before) / GIB


def held_gib(forward) -> float:
    """What a forward leaves allocated: its output and the tensors saved for the backward."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    out = forward()
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated() - before
    del out
    return held / GIB


def f46_layer(w1, w2, w3, recipe, dev):
    """The f46 layer of the BF16 weights, quantizing its weights at every step (as a training
    step after an optimizer update must: the weights changed)."""
    layer = f46.F46GroupedExperts.from_bf16(w1.detach(), w2.detach(), w3.detach(), recipe)
    layer.to(dev)
    layer.cache_weights = False
    return layer


def f46_step(layer, x, counts, gy) -> None:
    """One timed forward + backward of the f46 layer."""
    train_step(lambda: layer(x, counts).backward(gy), (x, *layer.parameters()))


def geomean(r: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in r) / len(r))


def accumulation_step(layer, batches) -> None:
    """MICRO micro-batches accumulated into the weights' .grad (gradients reset first)."""
    for t in (*layer.parameters(), *(xb for xb, _, _ in batches)):
        t.grad = None
    for xb, cb, gb in batches:
        layer(xb, cb).backward(gb)


def micro_batches(x, gy, counts: torch.Tensor):
    """MICRO micro-batches of (x rows, per-expert counts, dy rows), gathered once outside the
    timed step: each expert's rows split MICRO ways (multiples of 16), expert-sorted."""
    c = counts.cpu()
    ends = torch.cumsum(c, 0)
    out = []
    for j in range(MICRO):
        rows, cj = [], []
        for g in range(len(c)):
            per = int(c[g]) // MICRO // 16 * 16
            lo = int(ends[g] - c[g]) + j * per
            hi = lo + per if j < MICRO - 1 else int(ends[g])
            rows.append(torch.arange(lo, hi))
            cj.append(hi - lo)
        idx = torch.cat(rows).to(x.device)
        xb = x.detach()[idx].requires_grad_()
        out.append((xb, torch.tensor(cj, device=x.device), gy[idx]))
    return out


def main() -> None:
    gen = torch.Generator().manual_seed(0)
    dev = torch.device(DEVICE)
    ratios: dict[str, list[float]] = {m: [] for m in MODES}
    forced: dict[str, list[float]] = {}
    reuse: dict[str, list[float]] = {m: [] for m in MODES}
    rows = []
    print(
        "| shape | mode | ms | TFLOP/s | x BF16 | peak GiB | saved GiB |\n"
        "|---|---|---|---|---|---|---|"
    )
    for name, e, t, d, f in MOE:
        counts, offs, x, gy, w1, w3, w2 = layer_operands(e, t, d, f, gen, dev)
        flops = 18.0 * t * d * f  # 3 GEMMs forward, 6 backward

        def run_bf16():
            train_step(lambda: bf16_layer(x, w1, w3, w2, offs).backward(gy), (x, w1, w3, w2))

        base = median_ms(run_bf16)
        label = f"{name} E{e} T{t} D{d} F{f}"
        print(
            f"| {label} | bf16 | {base:8.2f} | {flops / base / 1e9:6.1f} | 1.000 | "
            f"{peak_gib(run_bf16):.2f} | {held_gib(lambda: bf16_layer(x, w1, w3, w2, offs)):.2f} |"
        )
        micro = micro_batches(x, gy, counts)
        for mode in MODES:
            layer = f46_layer(w1, w2, w3, f46.Recipe(backward_override=mode), dev)

            def run_f46():
                f46_step(layer, x, counts, gy)

            ms = median_ms(run_f46)
            ratios[mode].append(base / ms)
            print(
                f"| {label} | f46 4/6, {mode} bwd | {ms:8.2f} | {flops / ms / 1e9:6.1f} | "
                f"{base / ms:.3f} | {peak_gib(run_f46):.2f} | "
                f"{held_gib(lambda: layer(x, counts)):.2f} |"
            )
            if REUSE:
                times = []
                for cache in (True, False):
                    layer.cache_weights = cache
                    times.append(median_ms(lambda: accumulation_step(layer, micro)))
                reuse[mode].append(times[1] / times[0])
                rows.append((label, mode, times[0], times[1]))
            del layer
        for plan in FORCED_PLANS.get(name, ()):
            for mode in MODES:
                recipe = f46.Recipe(backward_override=mode, gemm_plan=plan)
                layer = f46_layer(w1, w2, w3, recipe, dev)
                ms = median_ms(lambda: f46_step(layer, x, counts, gy))
                forced.setdefault(mode, []).append(base / ms)
                print(
                    f"| {label} | f46 4/6, {mode} bwd, plan {plan} | {ms:8.2f} | "
                    f"{flops / ms / 1e9:6.1f} | {base / ms:.3f} | | |"
                )
                del layer
        del x, gy, w1, w2, w3, micro
        torch.cuda.empty_cache()
    for mode, r in ratios.items():
        print(f"| geometric mean | f46 4/6, {mode} bwd | | | {geomean(r):.3f} | | |")
    for mode, r in forced.items():  # one forced plan per shape: the plan the rule did not take
        if len(r) == len(MOE):
            print(
                f"| geometric mean | f46 4/6, {mode} bwd, FORCED_PLANS | | | {geomean(r):.3f} | | |"
            )
    print(
        f"\n| shape | mode | {MICRO} micro-batches, weights reused ms | quantized per call ms "
        "| speed-up |\n|---|---|---|---|---|"
    )
    for label, mode, on, off in rows:
        print(f"| {label} | {mode} bwd | {on:8.2f} | {off:8.2f} | {off / on:.3f} |")
    for mode, r in reuse.items():
        if r:
            print(f"| geometric mean | {mode} bwd | | | {geomean(r):.3f} |")


if __name__ == "__main__":
    main()
