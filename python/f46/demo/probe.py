"""Compare stress settings quickly: python -m f46.demo --probe [SETTING,...] (preset `probe`).

Every named setting of STRESS_SETTINGS (f46.demo.presets, which argues each) trains one seed
of each mode (default BF16 and all-6) for the preset's fixed steps: the same initial weights and
batches for every setting, so the settings differ only by what they change. BF16 runs once per
learning rate (the backward and the NVFP4 linears do not touch it). Each setting's line gives
its final validation loss minus BF16's (the paired difference the verdict uses), the same for
the train loss over the last 10% of steps, and the error record's last step (activation error
all-6 -> 4/6; gradient error all-6 round-to-nearest, and with SR where the backward uses it).

One seed gives no interval: the yardstick is the seed spread of the paired difference in the
`large` run (H100, 7077e62: standard deviation ~0.026 nats/byte for NVFP4 - BF16). With a time
budget a setting that would not finish in it is skipped and listed. OUT/probe.json holds every
run; OUT/probe.png the differences over training.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable

import torch

from .data import load_corpus
from .plot import plot_probe
from .presets import MODES, STRESS_SETTINGS, TrainConfig, device_name
from .report import error_record, stress_text


def _last(rec: dict | None, kind: str, q: str) -> float | None:
    if not rec or q not in rec[kind]:
        return None
    return rec[kind][q][-1]


def _diff(r: dict, base: dict | None, key: str) -> float | None:
    return None if base is None else r[key] - base[key]


def probe_row(runs: dict) -> dict:
    """One setting's numbers from its runs {mode: train_mode result}."""
    base = runs.get("bf16")
    row = {"bf16_val": None if base is None else base["final_val_loss"]}
    for mode, r in runs.items():
        if mode == "bf16":
            continue
        rec = error_record([r])
        row[mode] = {
            "val_minus_bf16": _diff(r, base, "final_val_loss"),
            "train_minus_bf16": _diff(r, base, "final_train_loss"),
            "tokens_per_s": r["tokens_per_s"],
            "activation": (_last(rec, "activation", "all6"), _last(rec, "activation", "4/6")),
            "gradient": (_last(rec, "gradient", "all6"), _last(rec, "gradient", "all6_sr")),
        }
    return row


def _estimate_s(walls: dict, modes: list, new_bf16: bool) -> float:
    """The next setting's time from the runs so far (mean wall time per mode)."""
    est = 0.0
    for m in modes:
        if m == "bf16" and not new_bf16:
            continue
        est += sum(walls.get(m, [0.0])) / max(1, len(walls.get(m, [])))
    return est


def run_probe(
    cfg: TrainConfig,
    settings: list,
    modes: list,
    device: torch.device,
    out_dir: str,
    seed: int = 0,
    corpus_path: str | None = None,
    log: Callable[[str], None] | None = print,
    time_budget_s: float | None = None,
    start_time: float | None = None,
    *,
    train_fn: Callable,
) -> dict:
    """Runs `modes` under every setting (names of STRESS_SETTINGS) for cfg.steps steps of one
    seed with train_fn (f46.demo.train.train_mode, which imports this module); rewrites
    OUT/probe.json and OUT/probe.png after each setting; returns the document."""

    unknown = [s for s in settings if s not in STRESS_SETTINGS]
    if unknown or not settings:
        raise ValueError(f"unknown probe settings {unknown}; choose from {list(STRESS_SETTINGS)}")
    if any(m not in MODES for m in modes) or not modes:
        raise ValueError(f"probe modes must be a subset of {list(MODES)}, got {modes}")
    start = time.perf_counter() if start_time is None else start_time
    log = log or (lambda s: None)
    os.makedirs(out_dir, exist_ok=True)
    corpus = load_corpus(corpus_path, cfg.corpus_bytes)
    corpus.update(train=corpus["train"].to(device), val=corpus["val"].to(device))
    doc = {
        "config": dataclasses.asdict(cfg),
        "device": str(device),
        "device_name": device_name(device),
        "torch": torch.__version__,
        "seed": seed,
        "modes": modes,
        "corpus_sha256": corpus["sha256"],
        "settings": {},
        "skipped": [],
    }
    bf16_by_lr, walls = {}, {}
    for name in settings:
        c = cfg.with_stress(name)
        new_bf16 = c.lr_scale not in bf16_by_lr
        est = _estimate_s(walls, modes, new_bf16)
        elapsed = time.perf_counter() - start
        if time_budget_s is not None and walls and elapsed + est > time_budget_s:
            doc["skipped"].append(name)
            log(f"probe: {name} skipped (~{est:.0f} s would end after {time_budget_s:.0f} s)")
            continue
        runs = {}
        for m in modes:
            if m == "bf16" and not new_bf16:
                runs[m] = bf16_by_lr[c.lr_scale]
                continue
            runs[m] = train_fn(m, c, corpus, device, seed, False, log)
            walls.setdefault(m, []).append(runs[m]["wall_time_s"])
            if m == "bf16":
                bf16_by_lr[c.lr_scale] = runs[m]
        doc["settings"][name] = {
            "overrides": STRESS_SETTINGS[name],
            "config": dataclasses.asdict(c),
            "runs": runs,
            "row": probe_row(runs),
        }
        doc["wall_time_s"] = time.perf_counter() - start
        log(f"probe: {name} done ({doc['wall_time_s']:.0f} s)")
        with open(os.path.join(out_dir, "probe.json"), "w") as f:
            json.dump(doc, f, indent=1)
        try:
            doc["plot"] = plot_probe(doc, os.path.join(out_dir, "probe.png"))
        except ImportError as e:
            log(f"no plot: {e}")
    return doc


def _f(v, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def format_probe(doc: dict) -> str:
    """The probe's table: one line per setting (the tail of a log shows it whole)."""
    cfg = doc["config"]
    quant = [m for m in doc["modes"] if m != "bf16"]
    lines = [
        f"probe, seed {doc['seed']}, {cfg['steps']} steps x {cfg['batch']}x"
        f"{cfg['model']['seq_len']} tokens; final val loss minus BF16 (nats/byte, one seed: "
        "compare with ~0.026, the large run's seed sd); errors at the last recorded step"
    ]
    hdr = (
        f"{'setting':<12} | {'bf16 val':>8} | "
        + " | ".join(f"{m + ' - bf16 val':>20} | {'train':>7}" for m in quant)
        + f" | {'act err 6 -> 4/6':>20} | {'grad err rne / sr':>20} | stress"
    )
    lines += [hdr, "-" * len(hdr)]
    for name, s in doc["settings"].items():
        row = s["row"]
        cells = [f"{name:<12}", f"{_f(row['bf16_val'], '.4f'):>8}"]
        for m in quant:
            r = row[m]
            cells += [
                f"{_f(r['val_minus_bf16'], '+.4f'):>20}",
                f"{_f(r['train_minus_bf16'], '+.4f'):>7}",
            ]
        r = row[quant[0]] if quant else {"activation": (None, None), "gradient": (None, None)}
        act = f"{_f(r['activation'][0], '.2e')} -> {_f(r['activation'][1], '.2e')}"
        grad = f"{_f(r['gradient'][0], '.2e')} / {_f(r['gradient'][1], '.2e')}"
        stress = f"backward {s['config']['backward']}" + stress_text(s["config"])
        lines.append(" | ".join(cells + [f"{act:>20}", f"{grad:>20}", stress]))
    if doc["skipped"]:
        lines.append("skipped (time budget): " + ", ".join(doc["skipped"]))
    return "\n".join(lines)
