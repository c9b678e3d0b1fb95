"""Per-layer quantization error: the demo's deterministic signal.

quantization_errors: after training, for every f46 module, the relative MSE of its weight and
of the activation that reaches it, each quantized with the module's recipe (N3) and dequantized
(N8), measured on one validation batch.

ErrorRecorder: during a training step (the error record at TrainConfig.error_steps), the
weight, input activation and output gradient of every tracked layer, each quantized both ways
the demo compares, plain NVFP4 (all-6, bound 448) and Four Over Six (MAE rule, bound 256), so
both numbers come from the same tensors whichever mode is training. Gradients go through the
quantized backward's own gradient quantization for all-6 (N4, 1x16 blocks along the output
features, per-tensor amax or per-group for the experts), round-to-nearest; "4/6" is what the
4/6 rule would make of the same gradient (f46 trains gradients with N4 in both modes), and
"all6_sr" the N4 quantization with stochastic rounding where the mode's backward uses it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .. import F46GroupedExperts, F46Linear, Recipe, ops, quantize_weight
from ..quantized import dequantized_activation, quantize_gradient
from ..recipe import GRAD_SCALE_BOUND
from .model import GroupedExperts, MoELM

# The two quantizations the record compares, by the names results.json uses.
COMPARED = {"all6": Recipe.nvfp4(), "4/6": Recipe.four_over_six()}
KINDS = ("weight", "activation", "gradient")


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


def gradient_error(dy: torch.Tensor, recipe: Recipe, offsets: torch.Tensor | None = None):
    """Relative MSE of the output gradient dy (R, N) through the quantized backward's gradient
    quantization (N4: all-6, bound 448, 1x16 blocks along N; per-tensor amax, or per-group over
    `offsets`), rounded as `recipe` rounds gradients (N5, or N6 at offset 0), dequantized."""
    dy = dy.detach().contiguous()
    scope = "group" if offsets is not None else "tensor"
    amax = ops.amax(dy, scope=scope, offsets=offsets)  # (1) | (E)
    c, s, _, _ = quantize_gradient(dy, amax, recipe, 0, scope=scope, offsets=offsets)
    deq = ops.dequantize(
        c, s, amax, offsets=offsets, scope=scope, scale_bound=GRAD_SCALE_BOUND, dtype=torch.float32
    )
    return _rel_mse(dy, deq)


def expert_intermediates(x, counts, w1, w2, w3, dy=None) -> dict:
    """FP32 recomputation of the routed SwiGLU experts' internals from their input x (T, D),
    sorted by expert with counts (E): h (T, F), the input of w2, and with the output gradient
    dy (T, D) also dh1, dh3 (T, F), the gradients reaching the w1 and w3 GEMMs."""
    hs, dh1s, dh3s = [], [], []
    sizes = counts.tolist()
    dys = torch.split(dy.float(), sizes) if dy is not None else [None] * len(sizes)
    for e, (xe, dye) in enumerate(zip(torch.split(x.float(), sizes), dys)):
        h1, h3 = xe @ w1[e].float().t(), xe @ w3[e].float().t()  # (T_e, F)
        hs.append(F.silu(h1) * h3)
        if dye is not None:
            dh = dye @ w2[e].float()  # (T_e, F)
            sig = torch.sigmoid(h1)
            dh1s.append(dh * h3 * sig * (1 + h1 * (1 - sig)))  # d silu(h1) = sig (1 + h1 (1 - sig))
            dh3s.append(dh * F.silu(h1))
    out = {"h": torch.cat(hs)}
    if dy is not None:
        out.update(dh1=torch.cat(dh1s), dh3=torch.cat(dh3s))
    return out


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
        h = expert_intermediates(x, counts, m.w1, m.w2, m.w3)["h"]  # (T, F) fp32, w2's input
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


# ---- the error record over training ------------------------------------------------------
_EXPERTS = (F46GroupedExperts, GroupedExperts)


def tracked_layers(model: nn.Module, skip=()) -> list:
    """[(name, module)]: the f46 modules of a converted model; in a model without any, the
    layers an NVFP4 mode would convert (the experts and the nn.Linears not named in `skip` as
    a full name or last component, with in/out features multiples of 16), so that a BF16 run
    records the same layers."""
    f46 = [
        (n, m) for n, m in model.named_modules() if isinstance(m, (F46Linear, F46GroupedExperts))
    ]
    if f46:
        return f46
    out = []
    for n, m in model.named_modules():
        if isinstance(m, GroupedExperts):
            out.append((n, m))
        elif isinstance(m, nn.Linear) and n not in skip and n.rsplit(".", 1)[-1] not in skip:
            if m.in_features % 16 == 0 and m.out_features % 16 == 0:
                out.append((n, m))
    return out


def _both(fn, t, *args) -> dict:
    return {k: fn(t, r, *args) for k, r in COMPARED.items()}


class ErrorRecorder:
    """Within `with ErrorRecorder(model, skip):` around one training step, keeps each tracked
    layer's input (forward pre-hook), a copy of its weights at the forward, and the gradient of
    its output (a hook on the output tensor); nothing the step computes changes. measure()
    returns {layer: {kind: {"all6": rel MSE, "4/6": rel MSE[, "all6_sr": rel MSE]}}} for kinds
    weight, activation, gradient; the experts as name.w1, name.w2, name.w3."""

    def __init__(self, model: nn.Module, skip=()):
        self.layers = tracked_layers(model, skip)
        self.inputs, self.weights, self.grads = {}, {}, {}
        self._hooks = []

    def __enter__(self) -> ErrorRecorder:
        for name, m in self.layers:
            self._hooks.append(m.register_forward_pre_hook(self._pre_hook(name)))
            self._hooks.append(m.register_forward_hook(self._post_hook(name)))
        return self

    def __exit__(self, *exc):
        for h in self._hooks:
            h.remove()
        self._hooks = []

    def _pre_hook(self, name):
        def hook(mod, args):
            self.inputs[name] = tuple(a.detach() for a in args)
            names = ("w1", "w2", "w3") if isinstance(mod, _EXPERTS) else ("weight",)
            self.weights[name] = {w: getattr(mod, w).detach().clone() for w in names}

        return hook

    def _post_hook(self, name):
        def hook(mod, args, out):
            if out.requires_grad:
                out.register_hook(lambda g: self.grads.__setitem__(name, g.detach()))

        return hook

    @torch.no_grad()
    def measure(self, recipe: Recipe | None = None) -> dict:
        """The errors of the captured tensors; `recipe`: the training mode's (None for BF16),
        whose stochastic gradient rounding, if any, adds the "all6_sr" gradient entry."""
        sr = recipe if recipe is not None and recipe.stochastic else None
        out = {}
        for name, m in self.layers:
            if name not in self.grads:  # a layer the step did not reach
                continue
            x, w, dy = self.inputs[name][0], self.weights[name], self.grads[name]
            if not isinstance(m, _EXPERTS):
                x2, g2 = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
                out[name] = self._entry(w["weight"], x2, g2, None, sr)
                continue
            counts = self.inputs[name][1]
            offs = torch.cumsum(counts.to(x.device), 0).to(torch.int32)  # (E)
            mid = expert_intermediates(x, counts, w["w1"], w["w2"], w["w3"], dy)
            out[f"{name}.w1"] = self._entry(w["w1"], x, mid["dh1"], offs, sr)
            out[f"{name}.w2"] = self._entry(w["w2"], mid["h"], dy, offs, sr)
            out[f"{name}.w3"] = self._entry(w["w3"], x, mid["dh3"], offs, sr)
        return out

    @staticmethod
    def _entry(w, x, dy, offs, sr) -> dict:
        grad = {"all6": gradient_error(dy, COMPARED["all6"], offs)}
        grad["4/6"] = activation_error(dy, COMPARED["4/6"], offs)  # 1x16 4/6, as activations
        if sr is not None:
            grad["all6_sr"] = gradient_error(dy, sr, offs)
        return {
            "weight": _both(weight_error, w),
            "activation": _both(activation_error, x, offs),
            "gradient": grad,
        }
