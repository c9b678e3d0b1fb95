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
    """Left: train (smoothed, solid) and validation (markers, dashed) loss per mode. Right:
    each quantized mode's smoothed train loss minus the BF16 one (when bf16 was run).
    Writes a PNG at path and returns path."""
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError(
            "f46.demo needs matplotlib for loss_curves.png: pip install matplotlib"
        ) from e

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ref = results.get("bf16")
    others = [m for m in results if m != "bf16"]
    two = ref is not None and bool(others)
    fig, axes = plt.subplots(1, 2 if two else 1, figsize=(13 if two else 8, 5), dpi=120)
    ax = axes[0] if two else axes
    colors = {mode: f"C{i}" for i, mode in enumerate(results)}
    window = max(1, max(len(r["train_loss"]) for r in results.values()) // 30)
    for mode, r in results.items():
        train = r["train_loss"]
        steps = range(1, len(train) + 1)
        label = f"{mode} train (moving avg {window})"
        ax.plot(steps, smooth(train, window), color=colors[mode], lw=1.5, label=label)
        if r["val_loss"]:
            vsteps, vals = zip(*r["val_loss"])
            ax.plot(
                vsteps, vals, color=colors[mode], ls="--", marker="o", ms=3, label=f"{mode} val"
            )
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats / byte)")
    ax.set_title(title or "MoE LM: BF16 vs NVFP4 vs NVFP4 Four Over Six")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if two:
        ax = axes[1]
        base = smooth(ref["train_loss"], window)
        for mode in others:
            cur = smooth(results[mode]["train_loss"], window)
            n = min(len(cur), len(base))
            ax.plot(
                range(1, n + 1),
                [c - b for c, b in zip(cur[:n], base[:n])],
                color=colors[mode],
                lw=1.5,
                label=f"{mode} - bf16",
            )
        ax.axhline(0.0, color="k", lw=0.8)
        ax.set_xlabel("step")
        ax.set_ylabel(f"train loss minus BF16 (moving avg {window})")
        ax.set_title("difference to BF16 (one seed: includes run-to-run noise)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
