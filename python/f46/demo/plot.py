"""Loss-curve figure of a demo run (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

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


def plot_loss_curves(doc: dict, path: str, title: str = "") -> str:
    """Left: train loss (moving average) of every seed (faint) and their mean (solid), and the
    mean validation loss (dashed, markers). Right, when BF16 ran: each quantized mode's
    validation loss minus BF16's at every evaluation, per seed (faint) and the mean with its
    95% t-interval over seeds (band), and the per-seed smoothed train-loss difference (dotted
    mean). Writes a PNG at path and returns path."""
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError(
            "f46.demo needs matplotlib for loss_curves.png: pip install matplotlib"
        ) from e

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
        ax.axhline(0.0, color="k", lw=0.8)
        ax.set_xlabel("step")
        ax.set_ylabel("loss minus BF16 (nats / byte)")
        band = "band: 95% t-interval over seeds, faint: per seed" if n > 1 else "one seed"
        ax.set_title(
            f"difference to BF16, same init and batches within a seed\n({band})", fontsize=10
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
