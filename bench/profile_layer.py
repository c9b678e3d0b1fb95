"""Where the SwiGLU grouped-experts layer's time goes (forward + backward), from a profiler trace.

Usage (GPU): F46_TORCH_LIBRARY=<build>/python/f46/libf46_torch.so python3 bench/profile_layer.py
For each MoE shape of bench_layer.py and each f46 backward mode, torch.profiler records the
CUDA kernels of F46_PROFILE_REPS layer steps (after warm-up); kernel time is summed per
category (GEMM, quantize by kind, dequantize, amax, pad/unpad, elementwise/other) and printed
per step next to the BF16 layer's step and its GEMM time (the floor). F46_PROFILE_TOP=n also
prints the n largest kernels by name; F46_PROFILE_PLAN (default "auto") forces the recipe's
gemm_plan, F46_PROFILE_SHAPES=Mixtral,DSv3 keeps those shapes. F46_PROFILE_TWO_PASS=1 also
profiles each mode with the grouped weights' amaxes as a pass of their own before
quantize_experts (ops.amax + ops.quantize_experts in place of ops.amax_quantize_experts, bitwise
the same), the A/B of the one-pass kernel in one process.
"""

from __future__ import annotations

import os
import re
import sys
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import bench_layer  # noqa: E402
import f46  # noqa: E402
import f46.quantized  # noqa: E402
from bench_layer import bf16_layer, f46_layer, f46_step, layer_operands, train_step  # noqa: E402

REPS = int(os.environ.get("F46_PROFILE_REPS", "3"))
TOP = int(os.environ.get("F46_PROFILE_TOP", "12"))
SHAPES = os.environ.get("F46_PROFILE_SHAPES", "")  # comma-separated names, default all
PLAN = os.environ.get("F46_PROFILE_PLAN", "auto")  # the recipe's gemm_plan ("c": plan (c) forced)
TWO_PASS = os.environ.get("F46_PROFILE_TWO_PASS", "0") == "1"

# First match wins: (category, regex on the demangled kernel name).
CATEGORIES = [
    ("quantize lean rows", r"quantize_rows_lean|lean_tensor"),
    ("quantize lean row+col", r"rowcol_lean"),
    ("quantize 16x16 + weights' amax (one pass)", r"experts_amax_kernel"),
    ("quantize lean 16x16", r"quad_kernel"),
    ("quantize tile", r"quantize_tile_kernel"),
    ("quantize lean cols (group)", r"cols_group"),
    ("gemm operand dequantize (plan a)", r"dequant_bf16_kernel"),
    ("dequantize", r"dequantize"),
    ("quantize other", r"quantize"),
    ("amax", r"amax"),
    ("swiglu (f46, fused amaxes)", r"swiglu_kernel"),
    ("pad/unpad", r"pad_rows|unpad|pad_"),
    ("gemm epilogue (f46)", r"gemm_epilogue_kernel"),
    ("gemm fused fp4 (plan b)", r"fused_fp4"),
    ("gemm torch (bf16)", r"enable_3x_kernel|at4cuda|nvjet|cublas|sm90_xmma"),
    ("gemm cutlass (f46)", r"cutlass|gemm"),
    ("copy", r"[Cc]opy|memcpy|Memcpy"),
    ("elementwise/other", r".*"),
]


def category(name: str) -> str:
    for cat, rx in CATEGORIES:
        if re.search(rx, name):
            return cat
    return "elementwise/other"


def kernel_times(fn) -> dict[str, float]:
    """Per-kernel-name device time (ms per step) over REPS steps after two warm-up steps."""
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(REPS):
            fn()
        torch.cuda.synchronize()
    out: dict[str, float] = defaultdict(float)
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            out[ev.name] += ev.device_time / 1000.0 / REPS
    return dict(out)


def summarize(label: str, times: dict[str, float], bf16_ms: float, bf16_gemm: float) -> None:
    cats: dict[str, float] = defaultdict(float)
    for name, ms in times.items():
        cats[category(name)] += ms
    total = sum(cats.values())
    print(
        f"\n#### {label}: {total:.2f} ms of kernels per step (BF16 layer {bf16_ms:.2f} ms, "
        f"its GEMMs {bf16_gemm:.2f} ms = the floor)"
    )
    print("| category | ms | share |\n|---|---|---|")
    for cat, ms in sorted(cats.items(), key=lambda kv: -kv[1]):
        print(f"| {cat} | {ms:.2f} | {ms / total:.1%} |")
    if TOP:
        print(f"top {TOP} kernels:")
        for name, ms in sorted(times.items(), key=lambda kv: -kv[1])[:TOP]:
            print(f"  {ms:8.3f} ms  [{category(name)}]  {name[:150]}")


def two_pass_weights(w, *, rule, scale_bound, block, columnwise):
    """ops.amax_quantize_experts as the amax pass and quantize_experts (the A/B's baseline)."""
    e, n, k = w.shape
    offs = f46.quantized.expert_row_offsets(e, n, w.device)
    amax = f46.ops.amax(w.reshape(e * n, k), scope="group", offsets=offs)
    out = f46.ops.quantize_experts(
        w, amax, rule=rule, scale_bound=scale_bound, block=block, columnwise=columnwise
    )
    return (amax, *out)


def main() -> None:
    gen = torch.Generator().manual_seed(0)
    dev = torch.device(bench_layer.DEVICE)
    want = {s for s in SHAPES.split(",") if s}
    for name, e, t, d, f in bench_layer.MOE:
        operands = layer_operands(e, t, d, f, gen, dev)  # same draws as bench_layer
        if want and name not in want:
            continue
        counts, offs, x, gy, w1, w3, w2 = operands
        bt = kernel_times(
            lambda: train_step(
                lambda: bf16_layer(x, w1, w3, w2, offs).backward(gy), (x, w1, w3, w2)
            )
        )
        bf16_ms = sum(bt.values())
        bf16_gemm = sum(ms for n, ms in bt.items() if category(n).startswith("gemm"))
        label = f"{name} E{e} T{t} D{d} F{f}"
        one_pass = f46.ops.amax_quantize_experts
        for mode in ("quantized", "dequantized"):
            for two in (False, True) if TWO_PASS else (False,):
                f46.ops.amax_quantize_experts = two_pass_weights if two else one_pass
                recipe = f46.Recipe(backward_override=mode, gemm_plan=PLAN)
                layer = f46_layer(w1, w2, w3, recipe, dev)
                ft = kernel_times(lambda: f46_step(layer, x, counts, gy))
                plan = "" if PLAN == "auto" else f", plan {PLAN}"
                plan += ", weights' amax a pass of its own" if two else ""
                summarize(f"{label}, f46 4/6 {mode} bwd{plan}", ft, bf16_ms, bf16_gemm)
                del layer
        f46.ops.amax_quantize_experts = one_pass
        del x, gy, w1, w2, w3
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
