"""Swap a model's nn.Linear and grouped-expert modules for their f46 counterparts."""

from __future__ import annotations

from typing import Callable, Iterable, Optional, Union

from torch import nn

from .modules import F46GroupedExperts, F46Linear
from .recipe import Recipe

HEAD_NAMES = ("output", "lm_head")

Skip = Union[Iterable[str], Callable[[str, nn.Module], bool]]


def _is_grouped_experts(m: nn.Module) -> bool:
    """Duck-typed GroupedExperts: w1 (E, F, D), w2 (E, D, F), w3 (E, F, D) parameters."""
    ws = [getattr(m, n, None) for n in ("w1", "w2", "w3")]
    if not all(isinstance(w, nn.Parameter) and w.dim() == 3 for w in ws):
        return False
    w1, w2, w3 = ws
    e, f, d = w1.shape
    return tuple(w3.shape) == (e, f, d) and tuple(w2.shape) == (e, d, f)


def _skipper(skip: Skip, head_names: Iterable[str]) -> Callable[[str, nn.Module], bool]:
    heads = set(head_names)
    if callable(skip):
        user = skip
    else:
        names = set(skip)

        def user(name, _m):
            return name in names or name.rsplit(".", 1)[-1] in names

    def skipped(name, m):
        return name in heads or name.rsplit(".", 1)[-1] in heads or bool(user(name, m))

    return skipped


def convert_model(
    model: nn.Module,
    recipe: Optional[Recipe] = None,
    skip: Skip = (),
    head_names: Iterable[str] = HEAD_NAMES,
) -> nn.Module:
    """Replace, in place, every nn.Linear by F46Linear and every GroupedExperts-like module by
    F46GroupedExperts (weights copied), except the output head (modules named as in
    `head_names`, "output" / "lm_head" by default; pass () to convert it too) and modules
    selected by `skip`: a collection of names (full dotted names, or last components), or a
    callable (name, module) -> bool. Children of a skipped module are left untouched too.
    Returns the model."""
    recipe = recipe if recipe is not None else Recipe()
    skipped = _skipper(skip, head_names)

    def visit(parent: nn.Module, prefix: str) -> None:
        for child_name, child in list(parent.named_children()):
            name = f"{prefix}.{child_name}" if prefix else child_name
            if skipped(name, child) or isinstance(child, (F46Linear, F46GroupedExperts)):
                continue
            if isinstance(child, nn.Linear):
                setattr(parent, child_name, F46Linear.from_linear(child, recipe))
            elif _is_grouped_experts(child):
                new = F46GroupedExperts.from_bf16(child.w1, child.w2, child.w3, recipe)
                new.train(child.training)
                setattr(parent, child_name, new)
            else:
                visit(child, name)

    visit(model, "")
    return model
