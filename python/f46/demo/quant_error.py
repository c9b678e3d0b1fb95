"""Per-layer quantization error of a trained model: the demo's deterministic signal.

For every f46 module, the relative MSE of its weight and of the activation that reaches it,
each quantized with the module's recipe (N3) and dequantized (N8), measured on one batch.
"""

from __future__ import annotations

import torch

from .. import F46GroupedExperts, F46Linear, Recipe, quantize_weight
from ..quantized import dequantized_activation
from .model import MoELM


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
    return _rel_mse(x, dequantized_activation(x, recipe, offsets))


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
