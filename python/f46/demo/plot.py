"""Figures of a demo run (matplotlib, Agg backend: no display needed): the loss curves, the
error record over training and the probe's differences to BF16."""

from __future__ import annotations

from .report import error_record
from .stats import Sample


def smooth(values: list, window: int) -> list:
    """Trailing moving average (window clipped at the start)."""
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc += v
        if i >= window:
            acc -= values[i - window]
        out.append(acc / min(i + 1, window))
    return out


def _mean_curve(curves: list) -> list:
    n = min(len(c) for c in curves)
    return [sum(c[i] for c in curves) / len(curves) for i in range(n)]


def _pyplot():
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError(
            "f46.demo needs matplotlib for its figures: pip install matplotlib"
        ) from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _difference_panel(ax, ylabel: str, title: str, legend_size: int) -> None:
    """A panel of differences to BF16 over training steps: the zero line, labels, grid."""
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=legend_size)


def _save(plt, fig, path: str) -> str:
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_loss_curves(doc: dict, path: str, title: str = "") -> str:
    """Left: train loss (moving average) of every seed (faint) and their mean (solid), and the
    mean validation loss (dashed, markers). Right, when BF16 ran: each quantized mode's
    validation loss minus BF16's at every evaluation, per seed (faint) and the mean with its
    95% t-interval over seeds (band), and the per-seed smoothed train-loss difference (dotted
    mean). Writes a PNG at path and returns path."""
    plt = _pyplot()
    runs = {m: rs for m, rs in doc["runs"].items() if rs}
    n = min(len(rs) for rs in runs.values())
    runs = {m: rs[:n] for m, rs in runs.items()}
    ref = runs.get("bf16")
    others = [m for m in runs if m != "bf16"]
    two = ref is not None and bool(others)
    fig, axes = plt.subplots(1, 2 if two else 1, figsize=(13 if two else 8, 5), dpi=120)
    ax = axes[0] if two else axes
    colors = {mode: f"C{i}" for i, mode in enumerate(runs)}
    window = max(1, max(len(r["train_loss"]) for rs in runs.values() for r in rs) // 30)
    for mode, rs in runs.items():
        curves = [smooth(r["train_loss"], window) for r in rs]
        for c in curves if n > 1 else []:
            ax.plot(range(1, len(c) + 1), c, color=colors[mode], lw=0.6, alpha=0.3)
        mean = _mean_curve(curves)
        ax.plot(range(1, len(mean) + 1), mean, color=colors[mode], lw=1.6, label=f"{mode} train")
        vsteps = [s for s, _ in rs[0]["val_loss"]]
        vmean = _mean_curve([[v for _, v in r["val_loss"]] for r in rs])
        ax.plot(vsteps, vmean, color=colors[mode], ls="--", marker="o", ms=3, label=f"{mode} val")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats / byte)")
    seeds = f"{n} seed{'s' if n > 1 else ''}"
    ax.set_title(
        title
        or f"BF16 vs NVFP4 vs NVFP4 4/6, {seeds}\n"
        f"train: moving avg {window}, mean of seeds (solid), per seed (faint)",
        fontsize=10,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if two:
        ax = axes[1]
        for mode in others:
            rs = runs[mode]
            vsteps = [s for s, _ in rs[0]["val_loss"]]
            diffs = [  # per seed: val(mode) - val(bf16) at every evaluation
                [v - b for (_, v), (_, b) in zip(r["val_loss"], base["val_loss"])]
                for r, base in zip(rs, ref)
            ]
            for d in diffs if n > 1 else []:
                ax.plot(vsteps, d, color=colors[mode], lw=0.6, alpha=0.3, marker=".", ms=2)
            samples = [Sample.of([d[i] for d in diffs]) for i in range(len(vsteps))]
            mean = [s.mean for s in samples]
            ax.plot(vsteps, mean, color=colors[mode], lw=1.8, marker="o", ms=3,
                    label=f"{mode} - bf16, val")  # fmt: skip
            if n > 1:
                lo = [s.mean - s.ci for s in samples]
                hi = [s.mean + s.ci for s in samples]
                ax.fill_between(vsteps, lo, hi, color=colors[mode], alpha=0.15, lw=0)
            train = [  # mean over seeds of the smoothed train-loss difference
                sum(col) / n
                for col in zip(
                    *(
                        smooth([a - b for a, b in zip(r["train_loss"], base["train_loss"])], window)
                        for r, base in zip(rs, ref)
                    )
                )
            ]
            ax.plot(range(1, len(train) + 1), train, color=colors[mode], lw=0.9, ls=":",
                    label=f"{mode} - bf16, train (moving avg {window})")  # fmt: skip
        band = "band: 95% t-interval over seeds, faint: per seed" if n > 1 else "one seed"
        _difference_panel(
            ax,
            "loss minus BF16 (nats / byte)",
            f"difference to BF16, same init and batches within a seed\n({band})",
            legend_size=8,
        )
    return _save(plt, fig, path)


def plot_quant_error(doc: dict, path: str) -> str | None:
    """The error record over training: one panel per kind (weight, input activation, output
    gradient), the relative MSE of the same tensors quantized all-6 (dashed) and 4/6 (solid),
    mean over layers and seeds, one colour per training mode. Writes a PNG at path and returns
    path; None (nothing written) when no run has a record."""
    runs = {m: rs for m, rs in doc["runs"].items() if rs}
    n = min(len(rs) for rs in runs.values()) if runs else 0
    recs = {m: error_record(rs[:n]) for m, rs in runs.items()}
    recs = {m: r for m, r in recs.items() if r}
    if not recs:
        return None
    plt = _pyplot()
    kinds = ("weight", "activation", "gradient")
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5), dpi=120)
    colors = {mode: f"C{i}" for i, mode in enumerate(runs)}
    for ax, kind in zip(axes, kinds):
        for mode, r in recs.items():
            c = colors[mode]
            ax.plot(r["steps"], r[kind]["all6"], color=c, ls="--", marker="o", ms=3,
                    label=f"{mode} run, all-6")  # fmt: skip
            ax.plot(r["steps"], r[kind]["4/6"], color=c, marker="s", ms=3,
                    label=f"{mode} run, 4/6")  # fmt: skip
        what = {"activation": "input activation", "gradient": "output gradient"}
        ax.set_title(f"{what.get(kind, kind)}", fontsize=10)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("relative MSE (mean over layers)")
    axes[0].legend(fontsize=7)
    fig.suptitle(
        f"quantization error of the same tensors under all-6 and 4/6 during training, {n} "
        "seed(s) (gradients: N4 all-6 against the 4/6 rule, round-to-nearest)",
        fontsize=10,
    )
    return _save(plt, fig, path)


def plot_probe(doc: dict, path: str) -> str:
    """The probe: each setting's validation loss minus BF16's (same learning rate, seed, init
    and batches) at every evaluation, all-6 solid, 4/6 dashed. Writes a PNG, returns path."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 5), dpi=120)
    for i, (name, s) in enumerate(doc["settings"].items()):
        base = s["runs"].get("bf16")
        if base is None:
            continue
        for mode, ls in (("nvfp4", "-"), ("nvfp4-4/6", "--")):
            r = s["runs"].get(mode)
            if r is None:
                continue
            steps = [st for st, _ in r["val_loss"]]
            diff = [v - b for (_, v), (_, b) in zip(r["val_loss"], base["val_loss"])]
            ax.plot(steps, diff, color=f"C{i}", ls=ls, marker="o", ms=3, label=f"{name} {mode}")
    _difference_panel(
        ax,
        "val loss minus BF16 (nats / byte)",
        f"probe: stress settings, seed {doc['seed']}, one run each",
        legend_size=7,
    )
    return _save(plt, fig, path)
