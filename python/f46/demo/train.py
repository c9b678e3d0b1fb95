"""Train the MoE LM in BF16, NVFP4 (all-6) and NVFP4 Four Over Six, same seed and batches.

    python -m f46.demo [--device cpu|cuda|auto] [--preset tiny|small|large] [--steps N]
                       [--modes bf16,nvfp4,nvfp4-4/6] [--out DIR] [--seed S] [--corpus PATH]

Every mode runs under BF16 autocast; the NVFP4 modes first convert the attention projections
and the grouped experts with f46.convert_model (router, embeddings, norms and head stay high
precision). Writes OUT/loss_curves.png and OUT/results.json and prints a summary table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable

import torch

from .. import F46GroupedExperts, F46Linear, Recipe, convert_model, ops, quantize_weight
from .data import BatchSampler, fixed_batches, load_corpus
from .model import HIGH_PRECISION, ModelConfig, MoELM
from .plot import plot_loss_curves


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    model: ModelConfig
    batch: int
    steps: int
    lr: float
    eval_every: int
    eval_batches: int
    warmup: int
    weight_decay: float = 0.1
    grad_clip: float = 1.0


PRESETS = {
    # For tests: seconds per mode.
    "tiny": TrainConfig(
        ModelConfig(
            seq_len=32, dim=64, num_layers=1, num_heads=2, num_experts=4, top_k=2, ffn_dim=64
        ),
        batch=4,
        steps=16,
        lr=4e-3,
        eval_every=8,
        eval_batches=2,
        warmup=2,
    ),
    # CPU default: all three modes in a few minutes on 2 cores.
    "small": TrainConfig(
        ModelConfig(
            seq_len=64, dim=128, num_layers=2, num_heads=4, num_experts=4, top_k=2, ffn_dim=256
        ),
        batch=8,
        steps=150,
        lr=3e-3,
        eval_every=25,
        eval_batches=4,
        warmup=15,
    ),
    # GPU default.
    "large": TrainConfig(
        ModelConfig(
            seq_len=256, dim=512, num_layers=4, num_heads=8, num_experts=8, top_k=2, ffn_dim=1024
        ),
        batch=32,
        steps=600,
        lr=1.5e-3,
        eval_every=50,
        eval_batches=8,
        warmup=60,
    ),
}

MODES: dict[str, Callable[[], Recipe] | None] = {
    "bf16": None,
    "nvfp4": Recipe.nvfp4,  # all-6, bound 448
    "nvfp4-4/6": Recipe.four_over_six,  # MAE 4/6 selection, bound 256
}


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warmup, then cosine decay to 10% of the peak."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(t, 1.0))))


def count_f46_modules(model: torch.nn.Module) -> dict:
    n_lin = sum(isinstance(m, F46Linear) for m in model.modules())
    n_exp = sum(isinstance(m, F46GroupedExperts) for m in model.modules())
    return {"F46Linear": n_lin, "F46GroupedExperts": n_exp}


def build_model(mode: str, cfg: TrainConfig, device: torch.device, seed: int) -> MoELM:
    torch.manual_seed(seed)  # identical initial weights in every mode
    model = MoELM(cfg.model)
    recipe_fn = MODES[mode]
    if recipe_fn is not None:
        convert_model(model, recipe_fn(), skip=HIGH_PRECISION)
    return model.to(device)


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": cfg.weight_decay},
        {"params": other, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95))


@torch.no_grad()
def evaluate(model: MoELM, batches: list, device: torch.device) -> float:
    model.eval()
    total = 0.0
    for x, y in batches:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            lm, _ = model.loss(x.to(device), y.to(device))
        total += lm.item()
    model.train()
    return total / len(batches)


# ---- quantization error (N8 dequantize of the N3 quantization, the mode's recipe) --------
def _rel_mse(ref: torch.Tensor, deq: torch.Tensor) -> float:
    ref, deq = ref.double(), deq.double()
    den = ref.pow(2).sum().item()
    return (deq - ref).pow(2).sum().item() / den if den > 0 else 0.0


def weight_error(w: torch.Tensor, recipe: Recipe) -> float:
    """Relative MSE of the f46-quantized weight (recipe's blocks, per-tensor/expert amax)."""
    qw = quantize_weight(w.detach(), recipe)
    return _rel_mse(w, qw.dequantize(torch.float32))


def activation_error(x: torch.Tensor, recipe: Recipe, offsets: torch.Tensor | None = None):
    """Relative MSE of the f46-quantized activation x (R, K), 1x16 blocks, per-tensor amax
    (per-group amax over the token groups `offsets` for the grouped experts)."""
    x = x.detach().contiguous()
    scope = "group" if offsets is not None else "tensor"
    amax = ops.amax(x, scope=scope, offsets=offsets)
    codes, scales, _, _ = ops.quantize(
        x,
        amax,
        offsets=offsets,
        scope=scope,
        rule=recipe.err_mode,
        scale_bound=recipe.scale_bound,
        block=1,
    )
    deq = ops.dequantize(
        codes,
        scales,
        amax,
        offsets=offsets,
        scope=scope,
        scale_bound=recipe.scale_bound,
        dtype=torch.float32,
    )
    return _rel_mse(x, deq)


@torch.no_grad()
def quantization_errors(model: MoELM, batch, device: torch.device) -> dict:
    """{layer name: {"weight": rel MSE, "input": rel MSE}} for every f46 module, measured on
    the activations that reach it on one validation batch. Expert w2's input is the SwiGLU
    hidden state recomputed in FP32 from the captured expert input."""
    captured = {}
    hooks = []
    for name, m in model.named_modules():
        if isinstance(m, (F46Linear, F46GroupedExperts)):

            def hook(mod, args, name=name):
                captured[name] = tuple(a.detach() for a in args)

            hooks.append(m.register_forward_pre_hook(hook))
    model.eval()
    try:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            model(batch[0].to(device))
    finally:
        for h in hooks:
            h.remove()
        model.train()
    out = {}
    for name, m in model.named_modules():
        if name not in captured:
            continue
        if isinstance(m, F46Linear):
            x = captured[name][0]
            out[name] = {
                "weight": weight_error(m.weight, m.recipe),
                "input": activation_error(x.reshape(-1, x.shape[-1]), m.recipe),
            }
            continue
        x, counts = captured[name]  # (T, D) sorted by expert, (E)
        offs = torch.cumsum(counts.to(x.device), 0).to(torch.int32)
        xf = x.float()
        h = torch.cat(
            [  # (T, F) fp32 SwiGLU hidden, the input of w2
                torch.nn.functional.silu(xe @ m.w1[e].float().t()) * (xe @ m.w3[e].float().t())
                for e, xe in enumerate(torch.split(xf, counts.tolist()))
            ]
        )
        for w in ("w1", "w3"):
            out[f"{name}.{w}"] = {
                "weight": weight_error(getattr(m, w), m.recipe),
                "input": activation_error(x, m.recipe, offs),
            }
        out[f"{name}.w2"] = {
            "weight": weight_error(m.w2, m.recipe),
            "input": activation_error(h, m.recipe, offs),
        }
    return out


# ---- progress ----------------------------------------------------------------------------
class _TextBar:
    """Minimal progress bar when tqdm is not installed."""

    def __init__(self, total: int, desc: str):
        self.total, self.desc, self.n, self.post = total, desc, 0, ""
        self.t0 = time.time()

    def update(self, k: int = 1):
        self.n += k
        if self.n == self.total or self.n % max(1, self.total // 20) == 0:
            filled = int(30 * self.n / self.total)
            rate = self.n / max(time.time() - self.t0, 1e-9)
            print(
                f"\r{self.desc} [{'#' * filled}{'.' * (30 - filled)}] {self.n}/{self.total} "
                f"{rate:.1f} it/s {self.post}",
                end="",
                file=sys.stderr,
                flush=True,
            )

    def set_postfix_str(self, s: str):
        self.post = s

    def close(self):
        print(file=sys.stderr)


def _progress(total: int, desc: str, enabled: bool):
    if not enabled:
        return None
    try:
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, dynamic_ncols=True, leave=True)
    except ImportError:
        return _TextBar(total, desc)


# ---- one mode ----------------------------------------------------------------------------
def train_mode(
    mode: str,
    cfg: TrainConfig,
    corpus: dict,
    device: torch.device,
    seed: int,
    progress: bool = True,
) -> dict:
    model = build_model(mode, cfg, device, seed)
    opt = make_optimizer(model, cfg)
    sampler = BatchSampler(corpus["train"], cfg.batch, cfg.model.seq_len, seed)
    val = fixed_batches(corpus["val"], cfg.batch, cfg.model.seq_len, cfg.eval_batches, seed + 1)
    train_loss, val_loss = [], []
    bar = _progress(cfg.steps, f"{mode:>9}", progress)
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.time()
    for step in range(cfg.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, cfg)
        x, y = sampler.next()
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            lm, total = model.loss(x, y)
        opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        train_loss.append(lm.item())
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            val_loss.append((step + 1, evaluate(model, val, device)))
        if bar is not None:
            last_val = f" val {val_loss[-1][1]:.3f}" if val_loss else ""
            bar.set_postfix_str(f"loss {train_loss[-1]:.3f}{last_val}")
            bar.update(1)
    if device.type == "cuda":
        torch.cuda.synchronize()
    wall = time.time() - t0
    if bar is not None:
        bar.close()
    tail = max(1, min(10, cfg.steps // 10))
    result = {
        "train_loss": train_loss,
        "val_loss": val_loss,
        "final_train_loss": sum(train_loss[-tail:]) / tail,
        "final_train_loss_window": tail,
        "final_val_loss": val_loss[-1][1],
        "wall_time_s": wall,
        "f46_modules": count_f46_modules(model),
        "recipe": None if MODES[mode] is None else dataclasses.asdict(MODES[mode]()),
        "quant_error": None,
    }
    if MODES[mode] is not None:
        result["quant_error"] = quantization_errors(model, val[0], device)
    return result


def run(
    cfg: TrainConfig,
    modes: list,
    device: torch.device,
    seed: int,
    out_dir: str,
    corpus_path: str | None = None,
    progress: bool = True,
) -> dict:
    """Trains every mode, writes OUT/loss_curves.png and OUT/results.json, returns results."""
    for m in modes:
        if m not in MODES:
            raise ValueError(f"unknown mode {m!r}; choose from {list(MODES)}")
    os.makedirs(out_dir, exist_ok=True)
    corpus = load_corpus(corpus_path)
    results = {}
    for m in modes:
        r = results[m] = train_mode(m, cfg, corpus, device, seed, progress)
        if progress:
            print(
                f"{m}: final train {r['final_train_loss']:.4f}, val {r['final_val_loss']:.4f}, "
                f"{r['wall_time_s']:.1f} s",
                file=sys.stderr,
                flush=True,
            )
    png = plot_loss_curves(results, os.path.join(out_dir, "loss_curves.png"))
    doc = {
        "config": dataclasses.asdict(cfg),
        "device": str(device),
        "device_name": (
            torch.cuda.get_device_name(device)
            if device.type == "cuda"
            else platform.processor() or platform.machine()
        ),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "seed": seed,
        "corpus": {"source": corpus["source"], "bytes": corpus["num_bytes"]},
        "modes": results,
        "loss_curves": png,
    }
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
    return doc


# ---- report ------------------------------------------------------------------------------
def _mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def format_table(doc: dict) -> str:
    modes = doc["modes"]
    lines = []
    hdr = (
        f"{'mode':<10} | {'final train':>11} | {'final val':>9} | "
        f"{'quant err W (mean)':>18} | {'quant err X (mean)':>18} | {'wall time':>9}"
    )
    lines += [hdr, "-" * len(hdr)]
    for mode, r in modes.items():
        qe = r["quant_error"]
        w = f"{_mean([v['weight'] for v in qe.values()]):.3e}" if qe else "-"
        x = f"{_mean([v['input'] for v in qe.values()]):.3e}" if qe else "-"
        lines.append(
            f"{mode:<10} | {r['final_train_loss']:>11.4f} | {r['final_val_loss']:>9.4f}"
            f" | {w:>18} | {x:>18} | {r['wall_time_s']:>8.1f}s"
        )
    quant = [m for m, r in modes.items() if r["quant_error"]]
    if quant:
        layers = list(modes[quant[0]]["quant_error"])
        width = max(len(s) for s in layers + ["layer"])
        lines += ["", "per-layer relative dequantization MSE (weight W / input activation X):"]
        hdr = f"{'layer':<{width}} | " + " | ".join(
            f"{m + ' W':>13} | {m + ' X':>13}" for m in quant
        )
        lines += [hdr, "-" * len(hdr)]
        for layer in layers:
            cells = []
            for m in quant:
                v = modes[m]["quant_error"].get(layer)
                cells += [f"{v['weight']:>13.3e}", f"{v['input']:>13.3e}"] if v else ["-", "-"]
            lines.append(f"{layer:<{width}} | " + " | ".join(cells))
    return "\n".join(lines)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="f46-demo", description=__doc__.split("\n")[0])
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="model/training size (default: small on CPU, large on CUDA)",
    )
    p.add_argument("--steps", type=int, help="training steps (default: the preset's)")
    p.add_argument(
        "--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(MODES)}"
    )
    p.add_argument("--out", default="f46_demo_out", help="output directory")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corpus", help="train on this local text file instead of the stdlib source")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = PRESETS[args.preset or ("large" if device.type == "cuda" else "small")]
    if args.steps is not None:
        if args.steps < 1:
            raise SystemExit(f"--steps must be >= 1, got {args.steps}")
        cfg = dataclasses.replace(
            cfg,
            steps=args.steps,
            warmup=min(cfg.warmup, args.steps),
            eval_every=min(cfg.eval_every, args.steps),
        )
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise SystemExit(f"--modes: unknown {unknown}; choose from {','.join(MODES)}")
    print(
        f"f46 demo: device {device}, preset {args.preset or 'default'}, {cfg.steps} steps, "
        f"modes {','.join(modes)}, seed {args.seed}",
        flush=True,
    )
    doc = run(cfg, modes, device, args.seed, args.out, args.corpus, not args.no_progress)
    print()
    print(f"corpus: {doc['corpus']['bytes']} bytes ({doc['corpus']['source'][:70]}...)")
    print(f"model: {cfg.model}")
    print(format_table(doc))
    print(f"\nwrote {doc['loss_curves']} and {os.path.join(args.out, 'results.json')}")
    return doc


def cli() -> int:
    """Console entry point (f46-demo): runs main and returns exit status 0."""
    main()
    return 0
