"""Loss-curve figure of a demo run (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations


def smooth(values: list, window: int) -> list:
    """Trailing moving average (window clipped at the start)."""
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc += v
        if i >= window:
            acc -= values[i - window]
        out.append(acc / min(i + 1, window))
    return out


def plot_loss_curves(results: dict, path: str, title: str = "") -> str:
    """Train (smoothed, solid) and validation (markers, dashed) loss per mode -> PNG at path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    for i, (mode, r) in enumerate(results.items()):
        color = f"C{i}"
        train = r["train_loss"]
        window = max(1, len(train) // 30)
        ax.plot(
            range(1, len(train) + 1),
            smooth(train, window),
            color=color,
            lw=1.5,
            label=f"{mode} train (moving avg {window})",
        )
        if r["val_loss"]:
            steps, vals = zip(*r["val_loss"])
            ax.plot(steps, vals, color=color, ls="--", marker="o", ms=3, label=f"{mode} val")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats / byte)")
    ax.set_title(title or "MoE LM: BF16 vs NVFP4 vs NVFP4 Four Over Six")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
