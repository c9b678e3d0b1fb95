"""NVFP4 GEMM benchmark (src/cuda/gemm) against BF16 baselines measured in the same run.

Dense f46 gemm vs torch.matmul BF16 (cuBLAS) and vs the FP32 simulation (dequantize to FP32 +
FP32 matmul); M-grouped vs torch._grouped_mm BF16 (2D x 3D); K-grouped vs torch._grouped_mm
BF16 (2D x 2D). Uneven (seeded log-normal) routing, group sizes multiples of 16.
Timing: CUDA events per call after warm-up, median; inputs rotate over sets larger than L2.
Usage: F46_TORCH_LIBRARY=build/python/f46/libf46_torch.so python3 bench/bench_gemm.py
       [all|profile|dense|grouped|plans|layer-plans]  (plans: plans (a), (b), (c) vs BF16 per
       shape; layer-plans: (a) and (c) on every M-grouped GEMM of the MoE layers)
"""

from __future__ import annotations

import math
import os
import statistics
import sys

import torch

L2_BYTES = 60 << 20
WARMUP = 3
REPS = int(os.environ.get("F46_BENCH_REPS", "15"))

DENSE = [(8192, 8192, 8192), (16384, 4096, 14336), (16384, 14336, 4096), (4096, 7168, 2048)]
# name, E, M (tokens), K, N
MOE = [
    ("Mixtral", 8, 16384, 4096, 14336),
    ("DSv3", 16, 32768, 7168, 4096),
    ("Qwen3", 128, 65536, 2048, 1536),
    ("gpt-oss", 32, 32768, 2880, 5760),
]


def load_f46() -> None:
    path = os.environ.get("F46_TORCH_LIBRARY")
    if path:
        torch.ops.load_library(path)
    else:
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
        import f46.ops  # noqa: F401  (loads the extension)


def median_us(fn, sets: int) -> float:
    """Median wall time of fn(i) in microseconds, i rotating over `sets` input sets."""
    for i in range(WARMUP):
        fn(i % sets)
    times = []
    for i in range(REPS):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn(i % sets)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return statistics.median(times)


def n_sets(bytes_per_set: int) -> int:
    return max(1, min(4, math.ceil(2 * L2_BYTES / max(bytes_per_set, 1))))


def rand_q(shape, gen):
    """Random NVFP4 operand: every code nibble, E4M3 scale bytes in [0x30, 0x58]."""
    *lead, rows, k = shape
    codes = torch.randint(
        0, 256, (*lead, rows, k // 2), dtype=torch.uint8, device="cuda", generator=gen
    )
    scales = torch.randint(
        0x30, 0x59, (*lead, rows, k // 16), dtype=torch.uint8, device="cuda", generator=gen
    )
    return codes, scales


_LUT = None


def deq(codes, scales, dtype):
    """Exact dequantization code * scale (no global scale) in `dtype`."""
    global _LUT
    if _LUT is None:
        mag = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
        _LUT = torch.tensor(mag + [-v for v in mag], dtype=torch.float32, device="cuda")
    v = torch.stack([_LUT[(codes & 15).long()], _LUT[(codes >> 4).long()]], dim=-1)
    v = v.reshape(*codes.shape[:-1], codes.shape[-1] * 2)
    s = scales.view(torch.float8_e4m3fn).float().repeat_interleave(16, dim=-1)
    return (v * s).to(dtype)


def routing(e: int, m: int, seed: int) -> list[int]:
    """Uneven group sizes (multiples of 16) summing to m."""
    g = torch.Generator().manual_seed(seed)
    w = torch.exp(0.6 * torch.randn(e, generator=g))
    sizes = [int(x) // 16 * 16 for x in (w / w.sum() * m).tolist()]
    sizes[int(torch.argmax(w))] += m - sum(sizes)
    return sizes


def group_offs(e: int, m: int) -> torch.Tensor:
    """The cumulative group ends (int32, CUDA) of routing(e, m, seed=e)."""
    sizes = routing(e, m, seed=e)
    return torch.tensor(sizes, dtype=torch.int32, device="cuda").cumsum(0).to(torch.int32)


def row(name: str, us: float, flops: float, base_us: float) -> tuple[str, float]:
    line = f"| {name} | {us:9.1f} | {flops / us / 1e6:7.1f} | {base_us / us:5.3f} |"
    return line, base_us / us


def table(title: str, rows: list[tuple[str, float]], base: str) -> list[str]:
    out = [f"### {title}", "", f"| shape | us | TFLOP/s | x {base} |", "|---|---|---|---|"]
    out += [r[0] for r in rows]
    gm = math.exp(sum(math.log(r[1]) for r in rows) / len(rows))
    out += [f"| geometric mean | | | {gm:5.3f} |", ""]
    return out


def bench_dense(gen) -> list[str]:
    f46, sim = [], []
    for m, k, n in DENSE:
        sets = n_sets((m + n) * k * 2)
        qa = [rand_q((m, k), gen) for _ in range(sets)]
        qb = [rand_q((n, k), gen) for _ in range(sets)]
        am, bm = torch.tensor([3.0], device="cuda"), torch.tensor([5.0], device="cuda")
        xa = [deq(*q, torch.bfloat16) for q in qa]
        xb = [deq(*q, torch.bfloat16) for q in qb]
        flops = 2.0 * m * n * k

        def run_f46(i):
            torch.ops.f46.gemm(
                qa[i][0],
                qa[i][1],
                am,
                "tensor",
                256.0,
                qb[i][0],
                qb[i][1],
                bm,
                256.0,
                None,
                torch.bfloat16,
            )

        def run_bf16(i):
            torch.matmul(xa[i], xb[i].t())

        def run_sim(i):
            ya = deq(*qa[i], torch.float32)
            yb = deq(*qb[i], torch.float32)
            torch.matmul(ya, yb.t()).mul_(3.0 * 5.0 / (1536.0 * 1536.0))

        t_f46 = median_us(run_f46, sets)
        t_bf16 = median_us(run_bf16, sets)
        del xa, xb
        torch.cuda.empty_cache()
        t_sim = median_us(run_sim, sets)
        name = f"M{m} K{k} N{n}"
        f46.append(row(name, t_f46, flops, t_bf16))
        sim.append(row(name, t_f46, flops, t_sim))
        print(
            f"dense {name}: f46 {t_f46:.0f} us, bf16 {t_bf16:.0f} us, fp32-sim {t_sim:.0f} us",
            flush=True,
        )
        del qa, qb
        torch.cuda.empty_cache()
    return table("Dense: f46 NVFP4 vs torch.matmul BF16 (cuBLAS)", f46, "BF16") + table(
        "Dense: f46 NVFP4 vs FP32 simulation (dequantize + FP32 matmul)", sim, "FP32 sim"
    )


def bench_grouped(gen) -> list[str]:
    mrows, krows = [], []
    for name, e, m, k, n in MOE:
        offs = group_offs(e, m)
        flops = 2.0 * m * n * k
        am = torch.rand(e, device="cuda", generator=gen) + 1.0
        bm = torch.rand(e, device="cuda", generator=gen) + 1.0
        label = f"{name} E{e} M{m} K{k} N{n}"

        # M-grouped: A (M, K), B (E, N, K) -> (M, N)
        qa, qb = rand_q((m, k), gen), rand_q((e, n, k), gen)
        xa, xb = deq(*qa, torch.bfloat16), deq(*qb, torch.bfloat16)
        t_f46 = median_us(lambda i: grouped_m(qa, am, qb, bm, offs), 1)
        t_bf16 = median_us(lambda i: torch._grouped_mm(xa, xb.transpose(-2, -1), offs=offs), 1)
        mrows.append(row(label, t_f46, flops, t_bf16))
        print(f"M-grouped {label}: f46 {t_f46:.0f} us, bf16 {t_bf16:.0f} us", flush=True)
        del qa, qb, xa, xb
        torch.cuda.empty_cache()

        # K-grouped (wgrad): dY^T (N, T), X^T (K, T) -> (E, N, K)
        qy, qx = rand_q((n, m), gen), rand_q((k, m), gen)
        xy, xx = deq(*qy, torch.bfloat16), deq(*qx, torch.bfloat16)
        t_f46 = median_us(
            lambda i: torch.ops.f46.grouped_gemm_k(
                qy[0],
                qy[1],
                am,
                "group",
                448.0,
                qx[0],
                qx[1],
                bm,
                "group",
                448.0,
                offs,
                torch.bfloat16,
            ),
            1,
        )
        t_bf16 = median_us(lambda i: torch._grouped_mm(xy, xx.t(), offs=offs), 1)
        krows.append(row(label, t_f46, flops, t_bf16))
        print(f"K-grouped {label}: f46 {t_f46:.0f} us, bf16 {t_bf16:.0f} us", flush=True)
        del qy, qx, xy, xx
        torch.cuda.empty_cache()
    return table("M-grouped: f46 NVFP4 vs torch._grouped_mm BF16 (2D x 3D)", mrows, "BF16") + table(
        "K-grouped (wgrad): f46 NVFP4 vs torch._grouped_mm BF16 (2D x 2D)", krows, "BF16"
    )


def dense(qa, am, qb, bm, **tuning):
    """f46's dense GEMM of quantized (codes, scales) pairs, per-tensor amaxes, bf16 out."""
    return torch.ops.f46.gemm(
        qa[0], qa[1], am, "tensor", 256.0, qb[0], qb[1], bm, 256.0, None, torch.bfloat16, **tuning
    )


def grouped_m(qa, am, qb, bm, offs, plan="auto"):
    """f46's M-grouped GEMM of quantized (codes, scales) pairs, group-scope amaxes, bf16 out."""
    return torch.ops.f46.grouped_gemm_m(
        qa[0], qa[1], am, "group", 256.0, qb[0], qb[1], bm, "group", 256.0, offs, None,
        torch.bfloat16, plan=plan,
    )  # fmt: skip


def profile_and_sweep(gen) -> None:
    """Per-kernel GPU times of one call (torch.profiler) and a scheduler knob sweep."""
    from torch.profiler import ProfilerActivity, profile

    m = k = n = 8192
    qa, qb = rand_q((m, k), gen), rand_q((n, k), gen)
    am = torch.tensor([3.0], device="cuda")

    def call(swizzle=0, raster="m"):
        return dense(qa, am, qb, am, max_swizzle=swizzle, raster=raster)

    def call_row():
        return torch.ops.f46.gemm(
            qa[0],
            qa[1],
            am.expand(m).contiguous(),
            "row",
            256.0,
            qb[0],
            qb[1],
            am,
            256.0,
            None,
            torch.bfloat16,
        )

    for name, fn in (("fused (tensor scope)", call), ("unfused (row scope)", call_row)):
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
        print(f"--- profile dense 8192^3, {name}, 3 calls")
        print(
            prof.key_averages().table(
                sort_by="cuda_time_total", row_limit=8, max_name_column_width=60
            )
        )
    flops = 2.0 * m * n * k
    for sw in (1, 2, 4, 8):
        for ra in ("m", "n"):
            t = median_us(lambda i: call(sw, ra), 1)
            print(
                f"sweep dense 8192^3 swizzle {sw} raster {ra}: {t:.0f} us "
                f"{flops / t / 1e6:.0f} TFLOP/s",
                flush=True,
            )


PLANS = ("a", "b", "c")


def plan_times(call) -> tuple[float, ...]:
    """Median us of call(i, plan) under each of PLANS (the GEMM ops' `plan`)."""
    return tuple(median_us(lambda i: call(i, plan), 1) for plan in PLANS)


def bench_plans(gen) -> list[str]:
    """Plan (a) (dequantize to BF16 + CUTLASS) vs plan (b) (fused 4-bit kernel) vs plan (c)
    (4-bit weight, register-sourced WGMMA) vs BF16, and which plan the automatic rule took
    (`auto ~`: the plan whose time an unforced call matched, a guess when plans are within
    noise): dense four, then M-grouped four."""
    lines = [
        "### GEMM plans: (a) dequantize + CUTLASS, (b) fused 4-bit kernel, (c) 4-bit weight",
        "",
        "| shape | BF16 us | (a) us | (b) us | (c) us | (a) x BF16 | (b) x BF16 | (c) x BF16 "
        "| auto ~ |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    cases = [("dense", 1, m, k, n) for m, k, n in DENSE] + list(MOE)
    for name, e, m, k, n in cases:
        qa = rand_q((m, k), gen)
        am = torch.rand(e, device="cuda", generator=gen) + 1.0
        bm = torch.rand(e, device="cuda", generator=gen) + 1.0
        if name == "dense":
            qb = rand_q((n, k), gen)
            xa, xb = deq(*qa, torch.bfloat16), deq(*qb, torch.bfloat16)

            def call(i, plan="auto"):
                dense(qa, am, qb, bm, plan=plan)

            t_bf16 = median_us(lambda i: torch.matmul(xa, xb.t()), 1)
            label = f"M{m} K{k} N{n}"
        else:
            offs = group_offs(e, m)
            qb = rand_q((e, n, k), gen)
            xa, xb = deq(*qa, torch.bfloat16), deq(*qb, torch.bfloat16)

            def call(i, plan="auto"):
                grouped_m(qa, am, qb, bm, offs, plan)

            t_bf16 = median_us(lambda i: torch._grouped_mm(xa, xb.transpose(-2, -1), offs=offs), 1)
            label = f"{name} E{e} M{m} K{k} N{n}"
        times = plan_times(call)
        t_auto = median_us(call, 1)
        auto = PLANS[min(range(len(PLANS)), key=lambda j: abs(t_auto - times[j]))]
        flops = 2.0 * m * n * k
        lines.append(
            f"| {label} | {t_bf16:.1f} | "
            + " | ".join(f"{t:.1f}" for t in times)
            + " | "
            + " | ".join(f"{t_bf16 / t:.3f}" for t in times)
            + f" | {auto} |"
        )
        print(
            f"plans {label}: bf16 {t_bf16:.0f} us ({flops / t_bf16 / 1e6:.0f} TFLOP/s), "
            + ", ".join(f"{p} {t:.0f} us" for p, t in zip(PLANS, times))
            + f", auto~{auto}",
            flush=True,
        )
        del qa, qb, xa, xb
        torch.cuda.empty_cache()
    return lines + [""]


def grouped_m_pair(qa, am, qb1, qb3, bm, offs, plan="auto"):
    """f46's M-grouped GEMM pair (one A, two weights of one shape; A's BF16 copy made once)."""
    return torch.ops.f46.grouped_gemm_m_pair(
        qa[0], qa[1], am, "group", 256.0, qb1[0], qb1[1], bm, qb3[0], qb3[1], bm, "group",
        256.0, offs, torch.bfloat16, plan=plan,
    )  # fmt: skip


def bench_layer_plans(gen) -> list[str]:
    """Plans (a) and (c) on the M-grouped GEMMs each MoE layer of MOE runs, as it runs them: the
    forward gate and up as one pair (N = F each, ops.grouped_gemm_m_pair), the forward down, the
    dgrad of down, and the dgrads of gate and up (two GEMMs of K = F, N = D); the wgrad GEMMs
    are K-grouped, plan (a) only."""
    lines = [
        "### Plans (a) and (c) on the layer's M-grouped GEMMs",
        "",
        "| layer | GEMM | E | M | K | N | (a) us | (c) us | (c) / (a) time |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, e, m, d, f in MOE:
        offs = group_offs(e, m)
        am = torch.rand(e, device="cuda", generator=gen) + 1.0
        bm = torch.rand(e, device="cuda", generator=gen) + 1.0
        for gemm, k, n, count in (
            ("fwd gate + up (pair)", d, f, 2),
            ("fwd down", f, d, 1),
            ("dgrad down", d, f, 1),
            ("dgrad gate, up (two)", f, d, 2),
        ):
            qa = [rand_q((m, k), gen) for _ in range(count)]
            qb = [rand_q((e, n, k), gen) for _ in range(count)]

            def run(p):
                if gemm.startswith("fwd gate"):
                    return grouped_m_pair(qa[0], am, qb[0], qb[1], bm, offs, p)
                return [grouped_m(x, am, w, bm, offs, p) for x, w in zip(qa, qb)]

            ta, tc = (median_us(lambda i, p=p: run(p), 1) for p in ("a", "c"))
            lines.append(
                f"| {name} | {gemm} | {e} | {m} | {k} | {n} | {ta:.1f} | {tc:.1f} | {tc / ta:.3f} |"
            )
            print(lines[-1], flush=True)
            del qa, qb
            torch.cuda.empty_cache()
    return lines + [""]


def main() -> None:
    load_f46()
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator(device="cuda").manual_seed(0)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    lines = []
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    if which in ("all", "profile"):
        profile_and_sweep(gen)
    if which in ("all", "dense"):
        lines += bench_dense(gen)
    if which in ("all", "grouped"):
        lines += bench_grouped(gen)
    if which in ("all", "plans"):
        lines += bench_plans(gen)
    if which == "layer-plans":
        lines += bench_layer_plans(gen)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
