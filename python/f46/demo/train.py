"""Train the MoE LM in BF16, NVFP4 (all-6) and NVFP4 Four Over Six over several seeds.

    python -m f46.demo [--device cpu|cuda|auto] [--preset tiny|small|large|long|stress|probe]
                       [--seeds N] [--seed K] [--steps N] [--time-budget S]
                       [--modes bf16,nvfp4,nvfp4-4/6] [--backward NAME] [--lr-scale K]
                       [--all-linears | --no-all-linears] [--error-checkpoints N]
                       [--probe [SETTING,...]] [--out DIR] [--corpus PATH]

Every mode runs under BF16 autocast; the NVFP4 modes first convert the attention projections
and the grouped experts with f46.convert_model (router, embeddings, norms and head stay high
precision; with --all-linears only the embeddings, norms and shapes NVFP4 cannot take). The
stress options (--lr-scale, --backward, --all-linears) and --probe, which compares named stress
settings, are argued in f46.demo.presets. Within a seed every mode starts from the same weights
and sees the same batches;
seeds run one after another (all modes of seed 0, then seed 1, ...), and after each seed
OUT/results.json and OUT/loss_curves.png are rewritten and the verdict so far is printed
(f46.demo.stats states the rule). With a time budget (the `large` GPU preset has one) the
steps per run are calibrated after a warm-up of every mode so that all seeds fit, and no seed
starts that would not finish in time. At cfg.error_steps (--error-checkpoints evenly spaced
training steps) the per-layer error record (f46.demo.quant_error.ErrorRecorder) is taken and
OUT/quant_error.png drawn beside the loss curves.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Callable

import torch

from .. import F46GroupedExperts, F46Linear, Recipe, convert_model, reset_sr_offset
from .data import BatchSampler, fixed_batches, load_corpus
from .model import HIGH_PRECISION, MoELM
from .plot import plot_loss_curves, plot_quant_error
from .presets import BACKWARDS, MODES, PRESETS, STRESS_SETTINGS, TrainConfig  # noqa: F401 (the API)
from .presets import device_name as _device_name
from .probe import format_probe, run_probe
from .quant_error import ErrorRecorder, quantization_errors
from .report import format_report, progress_bar, stress_text, summarize

VAL_SEED = 10_000  # the validation batches: the same for every mode and seed


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warmup, then cosine decay to 10% of the peak."""
    if step < cfg.warmup:
        return cfg.peak_lr * (step + 1) / cfg.warmup
    t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.peak_lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(t, 1.0))))


def count_f46_modules(model: torch.nn.Module) -> dict:
    n_lin = sum(isinstance(m, F46Linear) for m in model.modules())
    n_exp = sum(isinstance(m, F46GroupedExperts) for m in model.modules())
    return {"F46Linear": n_lin, "F46GroupedExperts": n_exp}


def mode_recipe(mode: str, cfg: TrainConfig) -> Recipe | None:
    """The recipe of an NVFP4 mode with the preset's backward; None for BF16."""
    recipe_fn = MODES[mode]
    return None if recipe_fn is None else recipe_fn(**BACKWARDS[cfg.backward])


def high_precision(cfg: TrainConfig) -> tuple:
    """The module names the NVFP4 modes leave in high precision (besides shapes NVFP4 cannot
    take and the embeddings): router and head, none with all_linears."""
    return () if cfg.all_linears else HIGH_PRECISION


def build_model(mode: str, cfg: TrainConfig, device: torch.device, seed: int) -> MoELM:
    torch.manual_seed(seed)  # identical initial weights in every mode
    model = MoELM(cfg.model)
    recipe = mode_recipe(mode, cfg)
    if recipe is not None and cfg.all_linears:
        convert_model(model, recipe, head_names=(), keep_routers=False)
    elif recipe is not None:
        convert_model(model, recipe, skip=HIGH_PRECISION)
    return model.to(device)


def kept_linears(model: torch.nn.Module) -> list:
    """Names of the linears left in high precision (nn.Linear, not F46Linear)."""
    return [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": cfg.weight_decay},
        {"params": other, "weight_decay": 0.0},
    ]
    fused = all(p.is_cuda for p in model.parameters())  # one kernel per step on the GPU
    return torch.optim.AdamW(groups, lr=cfg.peak_lr, betas=(0.9, 0.95), fused=fused or None)


def train_step(model: MoELM, opt, x, y, lr: float, cfg: TrainConfig) -> torch.Tensor:
    """One optimizer step; returns the LM loss (detached, not synchronized)."""
    for g in opt.param_groups:
        g["lr"] = lr
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        lm, total = model.loss(x, y)
    opt.zero_grad(set_to_none=True)
    total.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    opt.step()
    return lm.detach()


@torch.no_grad()
def evaluate(model: MoELM, batches: list) -> float:
    model.eval()
    losses = []
    for x, y in batches:
        with torch.autocast(x.device.type, dtype=torch.bfloat16):
            lm, _ = model.loss(x, y)
        losses.append(lm)
    model.train()
    return torch.stack(losses).mean().item()


def _sync(device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ---- one run -----------------------------------------------------------------------------
def train_mode(
    mode: str,
    cfg: TrainConfig,
    corpus: dict,
    device: torch.device,
    seed: int,
    bars: bool = True,
    log: Callable[[str], None] | None = None,
) -> dict:
    """Trains one mode from seed `seed`. Returns losses, tokens/s, the quantization error and
    the error record at cfg.error_steps. tokens/s counts the training steps after the first
    cfg.timing_skip (warm-up), evaluation and error measurement excluded. Stochastic rounding
    starts every run at offset 0 (N6), so a seed trains the same alone or after others (parts)."""
    reset_sr_offset(0)
    model = build_model(mode, cfg, device, seed)
    recipe = mode_recipe(mode, cfg)
    err_steps, record = set(cfg.error_steps), []
    opt = make_optimizer(model, cfg)
    sampler = BatchSampler(corpus["train"], cfg.batch, cfg.model.seq_len, seed, device)
    val = fixed_batches(
        corpus["val"], cfg.batch, cfg.model.seq_len, cfg.final_eval_batches, VAL_SEED, device
    )
    train_loss, pending, val_loss = [], [], []
    skip = min(cfg.timing_skip, cfg.steps - 1)
    bar = progress_bar(cfg.steps, f"seed {seed} {mode:>9}", bars)
    bar_every = 1 if device.type == "cpu" else 25  # a bar update synchronizes the device
    _sync(device)
    t0 = time.perf_counter()
    timed_s, tick = 0.0, None
    for step in range(cfg.steps):
        if step == skip:
            _sync(device)
            tick = time.perf_counter()
        x, y = sampler.next()
        if step not in err_steps:
            pending.append(train_step(model, opt, x, y, lr_at(step, cfg), cfg))
        else:
            with ErrorRecorder(model, high_precision(cfg)) as rec:
                pending.append(train_step(model, opt, x, y, lr_at(step, cfg), cfg))
            _sync(device)
            t_rec = time.perf_counter()
            record.append({"step": step + 1, "layers": rec.measure(recipe)})
            if tick is not None:
                tick += time.perf_counter() - t_rec  # the measurement stays out of tokens/s
        last = step + 1 == cfg.steps
        if (
            (step + 1) % cfg.eval_every == 0
            or last
            or (bar is not None and (step + 1) % bar_every == 0)
        ):
            if tick is not None:
                _sync(device)
                timed_s += time.perf_counter() - tick
            train_loss += torch.stack(pending).float().tolist()
            pending = []
            if (step + 1) % cfg.eval_every == 0 or last:
                n = cfg.final_eval_batches if last else cfg.eval_batches
                val_loss.append((step + 1, evaluate(model, val[:n])))
                if log is not None and bar is None:
                    log(
                        f"  seed {seed} {mode:<9} step {step + 1:>5}/{cfg.steps}  "
                        f"train {train_loss[-1]:.4f}  val {val_loss[-1][1]:.4f}  "
                        f"{time.perf_counter() - t0:6.1f} s"
                    )
            if bar is not None:
                last_val = f" val {val_loss[-1][1]:.3f}" if val_loss else ""
                bar.set_postfix_str(f"loss {train_loss[-1]:.3f}{last_val}")
                bar.update(step + 1 - bar.n)
            if tick is not None:
                tick = time.perf_counter()
    _sync(device)
    wall = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    tail = max(1, min(10, cfg.steps // 10))
    timed_steps = cfg.steps - skip
    return {
        "seed": seed,
        "train_loss": train_loss,
        "val_loss": val_loss,
        "final_train_loss": sum(train_loss[-tail:]) / tail,
        "final_train_loss_window": tail,
        "final_val_loss": val_loss[-1][1],
        "wall_time_s": wall,
        "timed_steps": timed_steps,
        "tokens_per_s": timed_steps * cfg.batch * cfg.model.seq_len / max(timed_s, 1e-9),
        "f46_modules": count_f46_modules(model),
        "high_precision_linears": None if recipe is None else kept_linears(model),
        "recipe": None if recipe is None else dataclasses.asdict(recipe),
        "quant_error": None if recipe is None else quantization_errors(model, val[0], device),
        "quant_error_over_training": record or None,
    }


# ---- calibration -------------------------------------------------------------------------
def calibrate(
    cfg: TrainConfig, modes: list, corpus: dict, device: torch.device, budget_s: float
) -> tuple[TrainConfig, dict]:
    """Warms every mode up (kernels, allocator, autotuning) on a throw-away model, measures its
    step, evaluation and error-record time, and returns cfg with the most steps (at most
    cfg.steps) for which cfg.seeds seeds of every mode fit in budget_s (with a 15% margin)."""
    step_s, eval_s, build_s, record_s = {}, {}, {}, {}
    for mode in modes:
        t = time.perf_counter()
        model = build_model(mode, cfg, device, seed=999_999)
        _sync(device)
        build_s[mode] = time.perf_counter() - t
        opt = make_optimizer(model, cfg)
        sampler = BatchSampler(corpus["train"], cfg.batch, cfg.model.seq_len, 999_999, device)
        val = fixed_batches(
            corpus["val"], cfg.batch, cfg.model.seq_len, cfg.eval_batches, 999_999, device
        )
        for i in range(4):
            train_step(model, opt, *sampler.next(), cfg.peak_lr * (i + 1) / 4, cfg)
        evaluate(model, val[:1])
        _sync(device)
        t = time.perf_counter()
        k = 8
        for _ in range(k):
            train_step(model, opt, *sampler.next(), cfg.peak_lr, cfg)
        _sync(device)
        step_s[mode] = (time.perf_counter() - t) / k
        t = time.perf_counter()
        evaluate(model, val)
        eval_s[mode] = (time.perf_counter() - t) / len(val)  # per batch
        t = time.perf_counter()
        if cfg.error_checkpoints:  # one recorded step and its measurement
            with ErrorRecorder(model, high_precision(cfg)) as rec:
                train_step(model, opt, *sampler.next(), cfg.peak_lr, cfg)
            rec.measure(mode_recipe(mode, cfg))
            _sync(device)
        record_s[mode] = time.perf_counter() - t
        del model, opt
    per_step = sum(step_s.values())  # one step of every mode
    per_eval_batch = sum(eval_s.values())
    # A seed: every mode's model, steps, (evals - 1) evaluations of eval_batches, the final
    # one, the error table and the error record; then the plots and results.json (~3-5 s).
    fixed = (
        sum(build_s.values())
        + per_eval_batch * ((cfg.evals - 1) * cfg.eval_batches + cfg.final_eval_batches + 4)
        + len(cfg.error_steps) * sum(record_s.values())
        + (5.0 if cfg.error_checkpoints else 3.0)
    )
    per_seed_budget = 0.85 * budget_s / cfg.seeds
    steps = int((per_seed_budget - fixed) / per_step)
    steps = max(cfg.evals, min(cfg.steps, steps // 10 * 10))
    info = {
        "budget_s": budget_s,
        "step_s": step_s,
        "eval_batch_s": eval_s,
        "build_s": build_s,
        "record_s": record_s,
        "steps": steps,
        "projected_s": cfg.seeds * (fixed + steps * per_step),
    }
    return cfg.with_steps(steps), info


# ---- all seeds ---------------------------------------------------------------------------
def run(
    cfg: TrainConfig,
    modes: list,
    device: torch.device,
    out_dir: str,
    seeds: list | None = None,
    corpus_path: str | None = None,
    bars: bool = True,
    log: Callable[[str], None] | None = print,
    time_budget_s: float | None = None,
    start_time: float | None = None,
) -> dict:
    """Trains every mode for every seed (seed-major), rewriting OUT/results.json and
    OUT/loss_curves.png (and OUT/quant_error.png with the error record) after each finished
    seed; returns the results document."""
    for m in modes:
        if m not in MODES:
            raise ValueError(f"unknown mode {m!r}; choose from {list(MODES)}")
    start = time.perf_counter() if start_time is None else start_time
    log = log or (lambda s: None)
    seeds = list(range(cfg.seeds)) if seeds is None else list(seeds)
    if not seeds:
        raise ValueError("run needs at least one seed")
    os.makedirs(out_dir, exist_ok=True)
    corpus = load_corpus(corpus_path, cfg.corpus_bytes)
    corpus.update(train=corpus["train"].to(device), val=corpus["val"].to(device))
    log(
        f"corpus: {corpus['num_bytes'] / 1e6:.1f} MB (train {len(corpus['train']) / 1e6:.1f} MB"
        f", val {len(corpus['val']) / 1e6:.1f} MB"
        + (
            f", files {corpus['files']['train']}/{corpus['files']['val']}"
            if corpus["files"]
            else ""
        )
        + f", sha256 {corpus['sha256']}) in {time.perf_counter() - start:.1f} s"
    )
    calibration = None
    if time_budget_s is not None:
        cfg = dataclasses.replace(cfg, seeds=len(seeds))
        remaining = time_budget_s - (time.perf_counter() - start)
        cfg, calibration = calibrate(cfg, modes, corpus, device, remaining)
        log(
            "calibrated: "
            + ", ".join(f"{m} {1e3 * s:.1f} ms/step" for m, s in calibration["step_s"].items())
            + f"; {cfg.steps} steps per run, projected {calibration['projected_s']:.0f} s for "
            f"{len(seeds)} seeds (budget {time_budget_s:.0f} s from start-up)"
        )
    tokens_per_run = cfg.steps * cfg.batch * cfg.model.seq_len
    doc = {
        "config": dataclasses.asdict(cfg),
        "device": str(device),
        "device_name": _device_name(device),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "seeds": [],
        "tokens_per_run": tokens_per_run,
        "epochs_per_run": tokens_per_run / len(corpus["train"]),
        "corpus": {
            "source": corpus["source"],
            "bytes": corpus["num_bytes"],
            "train_bytes": len(corpus["train"]),
            "val_bytes": len(corpus["val"]),
            "files": corpus["files"],
            "sha256": corpus["sha256"],
        },
        "calibration": calibration,
        "stopped_early": None,
        "runs": {m: [] for m in modes},
        "summary": None,
        "loss_curves": None,
        "quant_error_plot": None,
    }
    seed_s = 0.0
    for k, seed in enumerate(seeds):
        elapsed = time.perf_counter() - start
        if time_budget_s is not None and k > 0 and elapsed + seed_s > time_budget_s:
            doc["stopped_early"] = (
                f"time budget: seed {seed} (~{seed_s:.0f} s) would end after "
                f"{time_budget_s:.0f} s; {k} of {len(seeds)} seeds run"
            )
            log(doc["stopped_early"])
            break
        t_seed = time.perf_counter()
        for m in modes:
            r = train_mode(m, cfg, corpus, device, seed, bars, log)
            doc["runs"][m].append(r)
            log(
                f"seed {seed} {m}: final train {r['final_train_loss']:.4f}, val "
                f"{r['final_val_loss']:.4f}, {r['tokens_per_s']:.0f} tokens/s, "
                f"{r['wall_time_s']:.1f} s"
            )
        seed_s = max(seed_s, time.perf_counter() - t_seed)
        doc["seeds"].append(seed)
        doc["summary"] = summarize(doc)
        try:
            doc["loss_curves"] = plot_loss_curves(doc, os.path.join(out_dir, "loss_curves.png"))
            doc["quant_error_plot"] = plot_quant_error(
                doc, os.path.join(out_dir, "quant_error.png")
            )
        except ImportError as e:  # no matplotlib: the numbers still count
            log(f"no plot: {e}")
        doc["wall_time_s"] = time.perf_counter() - start
        with open(os.path.join(out_dir, "results.json"), "w") as f:
            json.dump(doc, f, indent=1)
        v = doc["summary"]["verdict"]
        log(f"after seed {seed} ({time.perf_counter() - start:.0f} s): " + (v["text"] if v else ""))
    return doc


# ---- command line ------------------------------------------------------------------------
def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="f46-demo", description=__doc__.split("\n")[0])
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="model/training size (default: small on CPU, large on CUDA, probe with --probe)",
    )
    p.add_argument("--seeds", type=int, help="seeds per mode (default: the preset's)")
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--steps", type=int, help="training steps per run (no calibration)")
    p.add_argument(
        "--backward",
        choices=sorted(BACKWARDS),
        help="the NVFP4 modes' backward (default: the preset's; BACKWARDS in f46/demo/presets.py)",
    )
    p.add_argument("--lr-scale", type=float, help="peak learning rate x K (default: preset's)")
    p.add_argument(
        "--all-linears",
        action=argparse.BooleanOptionalAction,
        help="head (and router, shape permitting) in NVFP4 too (default: the preset's)",
    )
    p.add_argument(
        "--error-checkpoints",
        type=int,
        help="training steps with the per-layer error record, evenly spaced (0: none)",
    )
    p.add_argument(
        "--probe",
        nargs="?",
        const=",".join(STRESS_SETTINGS),
        metavar="SETTING,...",
        help=f"compare stress settings (default all: {','.join(STRESS_SETTINGS)}), one seed each",
    )
    p.add_argument(
        "--time-budget",
        type=float,
        help="seconds for the whole run: calibrates the steps (default: the preset's; 0: none)",
    )
    p.add_argument(
        "--modes",
        help=f"comma-separated subset of {','.join(MODES)} (default: all; bf16,nvfp4 with --probe)",
    )
    p.add_argument("--out", default="f46_demo_out", help="output directory")
    p.add_argument("--corpus", help="train on this local text file instead of Python's source")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: the CPUs available)")
    p.add_argument("--no-progress", action="store_true", help="log lines instead of bars")
    return p.parse_args(argv)


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def config_from_args(args: argparse.Namespace, device: torch.device):
    """(cfg, time budget or None, modes) of the command line, SystemExit on a bad value."""
    default = "probe" if args.probe else ("large" if device.type == "cuda" else "small")
    cfg = PRESETS[args.preset or default]
    budget = cfg.time_budget_s if args.time_budget is None else (args.time_budget or None)
    stress = {"backward": args.backward, "lr_scale": args.lr_scale, "all_linears": args.all_linears}
    stress = {k: v for k, v in stress.items() if v is not None}
    if args.probe and stress:
        raise SystemExit(f"--probe sets {', '.join(stress)} per setting; leave them out")
    if args.lr_scale is not None and not 0 < args.lr_scale < math.inf:
        raise SystemExit(f"--lr-scale must be a positive number, got {args.lr_scale}")
    if args.error_checkpoints is not None and args.error_checkpoints < 0:
        raise SystemExit(f"--error-checkpoints must be >= 0, got {args.error_checkpoints}")
    if args.error_checkpoints is not None:
        stress["error_checkpoints"] = args.error_checkpoints
    cfg = dataclasses.replace(cfg, **stress)
    if args.steps is not None:
        if args.steps < 1:
            raise SystemExit(f"--steps must be >= 1, got {args.steps}")
        cfg, budget = cfg.with_steps(args.steps), None
    if args.seeds is not None and args.seeds < 1:
        raise SystemExit(f"--seeds must be >= 1, got {args.seeds}")
    spec = args.modes or ("bf16,nvfp4" if args.probe else ",".join(MODES))
    modes = [m.strip() for m in spec.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise SystemExit(f"--modes: unknown {unknown}; choose from {','.join(MODES)}")
    return cfg, budget, modes


def main(argv=None) -> dict:
    start = time.perf_counter()
    args = parse_args(argv)
    if args.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(args.device)
    torch.set_num_threads(args.threads or _available_cpus())
    cfg, budget, modes = config_from_args(args, device)
    log = lambda s: print(s, flush=True)
    if args.probe:
        settings = [s.strip() for s in args.probe.split(",") if s.strip()]
        if any(s not in STRESS_SETTINGS for s in settings) or not settings:
            raise SystemExit(f"--probe: choose settings from {','.join(STRESS_SETTINGS)}")
        print(
            f"f46 demo probe: device {device} ({_device_name(device)}), settings "
            f"{','.join(settings)}, modes {','.join(modes)}, {cfg.steps} steps",
            flush=True,
        )
        doc = run_probe(
            cfg, settings, modes, device, args.out, args.seed, args.corpus, log, budget, start,
            train_fn=train_mode,
        )  # fmt: skip
        print()
        print(format_probe(doc))
        print(f"wrote {os.path.join(args.out, 'probe.json')}")
        print(f"total wall time {time.perf_counter() - start:.0f} s")
        return doc
    n_seeds = args.seeds or cfg.seeds
    print(
        f"f46 demo: device {device} ({_device_name(device)}), preset "
        f"{args.preset or 'default'}, "
        + (f"{cfg.steps} steps" if budget is None else f"steps calibrated to {budget:.0f} s")
        + f", seeds {args.seed}..{args.seed + n_seeds - 1}, modes {','.join(modes)}, "
        f"NVFP4 backward {cfg.backward}{stress_text(dataclasses.asdict(cfg))}, "
        f"{torch.get_num_threads()} threads",
        flush=True,
    )
    print(f"model: {cfg.model}", flush=True)
    doc = run(
        cfg,
        modes,
        device,
        args.out,
        seeds=range(args.seed, args.seed + n_seeds),
        corpus_path=args.corpus,
        bars=not args.no_progress,
        log=log,
        time_budget_s=budget,
        start_time=start,
    )
    print()
    print(format_report(doc))
    plots = [p for p in (doc["loss_curves"], doc["quant_error_plot"]) if p] or ["no plot"]
    print(f"wrote {', '.join(plots)} and {os.path.join(args.out, 'results.json')}")
    print(f"total wall time {time.perf_counter() - start:.0f} s")
    return doc


def cli() -> int:
    """Console entry point (f46-demo): runs main and returns exit status 0."""
    main()
    return 0


if __name__ == "__main__":
    sys.exit(cli())
