"""The demo's summary over seeds, its printed report and progress bars."""

from __future__ import annotations

import dataclasses
import math
import sys
import time

from .stats import Sample, verdict


def _clean(x):
    """NaN -> None, recursively (results.json stays strict JSON)."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _sample(xs) -> dict:
    return _clean(dataclasses.asdict(Sample.of(xs)))


def _mean(xs):
    return sum(xs) / len(xs) if xs else math.nan


def _quant_error(runs: list) -> dict | None:
    """{layer: {"weight", "input"}} averaged over the runs (seeds); None for BF16."""
    if not runs or runs[0]["quant_error"] is None:
        return None
    layers = runs[0]["quant_error"]
    return {
        layer: {k: _mean([r["quant_error"][layer][k] for r in runs]) for k in ("weight", "input")}
        for layer in layers
    }


def error_record(runs: list) -> dict | None:
    """The error record of one mode's runs (seeds): {"steps": [...], kind: {quantization:
    [mean over layers and seeds at each recorded step]}} for kinds weight, activation,
    gradient and quantizations all6, 4/6 (and all6_sr for SR gradients); None without one."""
    recs = [r.get("quant_error_over_training") for r in runs]
    if not recs or any(not rec for rec in recs):
        return None
    out = {"steps": [c["step"] for c in recs[0]]}
    first = next(iter(recs[0][0]["layers"].values()))
    for kind, quants in first.items():
        out[kind] = {
            q: [
                _mean([_mean([v[kind][q] for v in rec[i]["layers"].values()]) for rec in recs])
                for i in range(len(out["steps"]))
            ]
            for q in quants
        }
    return out


def summarize(doc: dict) -> dict:
    """Per mode: final train/val loss, val - BF16, tokens/s as mean and spread over the seeds
    every mode finished; the per-layer error and the error record averaged over them; the
    verdict (stats.verdict) when all three modes ran."""
    runs = doc["runs"]
    n = min(len(rs) for rs in runs.values())
    modes = {}
    for m, rs in runs.items():
        rs = rs[:n]
        qe = _quant_error(rs)
        s = {
            "final_train": _sample([r["final_train_loss"] for r in rs]),
            "final_val": _sample([r["final_val_loss"] for r in rs]),
            "tokens_per_s": _sample([r["tokens_per_s"] for r in rs]),
            "quant_error": qe,
            "quant_error_mean": (
                None
                if qe is None
                else {k: _mean([v[k] for v in qe.values()]) for k in ("weight", "input")}
            ),
            "quant_error_over_training": error_record(rs),
        }
        if "bf16" in runs and m != "bf16":
            base = runs["bf16"][:n]
            s["val_minus_bf16"] = _sample(
                [r["final_val_loss"] - b["final_val_loss"] for r, b in zip(rs, base)]
            )
        modes[m] = s
    v = None
    if all(m in runs for m in ("bf16", "nvfp4", "nvfp4-4/6")):
        v = verdict(
            *([r["final_val_loss"] for r in runs[m][:n]] for m in ("bf16", "nvfp4", "nvfp4-4/6"))
        )
        v = _clean(dataclasses.asdict(v))
    return {"n_seeds": n, "modes": modes, "verdict": v}


def _pm(s: dict, digits: int = 4, sign: bool = False) -> str:
    """'mean +/- ci95' from a summarized Sample (just the mean for one seed)."""
    m = f"{s['mean']:{'+' if sign else ''}.{digits}f}"
    return m if s["ci"] is None else f"{m} +/- {s['ci']:.{digits}f}"


def _range(s: dict, digits: int = 4) -> str:
    return f"[{s['min']:+.{digits}f}..{s['max']:+.{digits}f}]"


def stress_text(cfg: dict) -> str:
    """The stress settings of a results.json config beyond the backward, '' when none."""
    out = ""
    if cfg.get("lr_scale", 1.0) != 1.0:
        out += f"; peak lr {cfg['lr'] * cfg['lr_scale']:.3g} (x{cfg['lr_scale']:g} the preset's)"
    if cfg.get("all_linears"):
        out += "; all linears in NVFP4"
    return out


def _error_record_lines(modes: dict) -> list:
    """The error record at its last step: all-6 / 4/6 (ratio) per mode and kind."""
    recs = {m: s["quant_error_over_training"] for m, s in modes.items()}
    recs = {m: r for m, r in recs.items() if r}
    if not recs:
        return []
    step = next(iter(recs.values()))["steps"][-1]
    lines = [
        f"error record at step {step} (relative MSE of the same tensors quantized all-6 / 4/6 "
        "(ratio), mean over layers and seeds; every step in results.json, quant_error.png):"
    ]
    hdr = f"{'mode':<9} | {'weight':<30} | {'input activation':<30} | output gradient"
    lines += [hdr, "-" * len(hdr)]
    for m, r in recs.items():
        cells = []
        for kind in ("weight", "activation", "gradient"):
            a, b = r[kind]["all6"][-1], r[kind]["4/6"][-1]
            cells.append(f"{a:.3e} / {b:.3e} ({b / a if a else math.nan:.2f})".ljust(30))
        lines.append((f"{m:<9} | " + " | ".join(cells)).rstrip())
    return lines + [""]


def format_report(doc: dict) -> str:
    """The per-layer quantization error table, then the per-mode table over seeds and the
    verdict (last, so the tail of a log shows it)."""
    summ = doc["summary"]
    if summ is None:
        return "no seed finished"
    modes = summ["modes"]
    cfg = doc["config"]
    lines = []
    quant = [m for m, s in modes.items() if s["quant_error"]]
    if quant:
        layers = list(modes[quant[0]]["quant_error"])
        width = max(len(s) for s in layers + ["layer"])
        lines += [
            "per-layer relative dequantization MSE (weight W / input activation X), one "
            f"validation batch, mean over {summ['n_seeds']} trained seed(s):"
        ]
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
        lines.append("")
    lines += _error_record_lines(modes)
    model = cfg["model"]
    lines.append(
        f"{summ['n_seeds']} seed(s) x {cfg['steps']} steps x {cfg['batch']}x{model['seq_len']} "
        f"tokens ({doc['tokens_per_run'] / 1e6:.2f} M tokens per run, "
        f"{doc['epochs_per_run']:.2g} epochs of the training split; NVFP4 backward "
        f"{cfg.get('backward', 'default')}{stress_text(cfg)}); "
        "loss in nats/byte, mean +/- 95% t-interval [min..max] over seeds"
    )
    bf16_tps = modes.get("bf16", {}).get("tokens_per_s", {}).get("mean")
    hdr = (
        f"{'mode':<9} | {'final train':>17} | {'final val':>17} | {'val - bf16':>37} | "
        f"{'tokens/s':>9} | {'x bf16':>6} | {'quant err W':>11} | {'quant err X':>11}"
    )
    lines += [hdr, "-" * len(hdr)]
    for m, s in modes.items():
        d = s.get("val_minus_bf16")
        if d is None:
            diff = "-"
        else:
            diff = _pm(d, sign=True) + ("" if d["ci"] is None else " " + _range(d))
        tps = s["tokens_per_s"]["mean"]
        ratio = f"{tps / bf16_tps:.2f}" if bf16_tps else "-"
        qe = s["quant_error_mean"]
        w = f"{qe['weight']:.3e}" if qe else "-"
        x = f"{qe['input']:.3e}" if qe else "-"
        lines.append(
            f"{m:<9} | {_pm(s['final_train']):>17} | {_pm(s['final_val']):>17} | {diff:>37} | "
            f"{tps:>9.0f} | {ratio:>6} | {w:>11} | {x:>11}"
        )
    if "bf16" in modes and len(modes) > 1:
        n = summ["n_seeds"]
        base = [r["final_val_loss"] for r in doc["runs"]["bf16"][:n]]
        per_seed = [
            f"{m} - bf16 "
            + " ".join(f"{r['final_val_loss'] - b:+.4f}" for r, b in zip(doc["runs"][m][:n], base))
            for m in modes
            if m != "bf16"
        ]
        lines.append(f"per seed {doc['seeds'][:n]}, final val: " + "; ".join(per_seed))
    if doc.get("stopped_early"):
        lines.append(doc["stopped_early"])
    if summ["verdict"]:
        lines += ["", "verdict: " + summ["verdict"]["text"]]
    return "\n".join(lines)


class _TextBar:
    """Minimal progress bar when tqdm is not installed."""

    def __init__(self, total: int, desc: str):
        self.total, self.desc, self.n, self.post, self.shown = total, desc, 0, "", 0
        self.t0 = time.time()

    def update(self, k: int = 1):
        self.n += k
        if self.n == self.total or self.n - self.shown >= max(1, self.total // 20):
            self.shown = self.n
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


def progress_bar(total: int, desc: str, enabled: bool):
    """A tqdm bar (or a text bar without tqdm) on stderr, or None when disabled."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, dynamic_ncols=True, leave=True)
    except ImportError:
        return _TextBar(total, desc)
