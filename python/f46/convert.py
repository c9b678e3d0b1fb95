"""Put a model's matmuls on f46's NVFP4 GEMMs, in place, keeping its parameters.

convert_model walks the module tree and converts
- nn.Linear (and subclasses) -> F46Linear sharing the same weight and bias Parameter objects;
- Hugging Face transformers 5.x fused experts and 4.x ModuleList sparse MoE blocks, and
  torchtitan 0.3 grouped experts -> the same module with a subclass of its class that runs
  f46.grouped_mm (f46.integrations);
- older torchtitan-style experts (w1 / w2 / w3 parameters, forward(x, num_tokens_per_expert))
  -> F46GroupedExperts sharing those parameters;
and leaves in high precision, with the reason recorded in a ConversionReport: routers and gates,
the output head, embeddings, modules the caller skips and matmuls whose shapes NVFP4 cannot
take (checked here, so nothing fails at forward time).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable, List, Optional, Union

from torch import nn

from .functional import matmul_shape_problem
from .integrations import torchtitan as titan
from .integrations import transformers as hf
from .integrations._swap import is_swapped
from .modules import F46GroupedExperts, F46Linear
from .recipe import Recipe

HEAD_NAMES = ("output", "lm_head")

Skip = Union[Iterable[str], Callable[[str, nn.Module], bool]]

# Why a module was left in high precision (ConversionEntry.kind of ConversionReport.kept).
KEPT_KINDS = {
    "router": "router / gate (kept in high precision by default)",
    "head": "output head (head_names)",
    "embedding": "embedding",
    "skip": "skipped by the caller (skip)",
    "shape": "shape or dtype NVFP4 cannot take",
    "root": "the model itself is an nn.Linear (convert a module holding it)",
}
# Kept kinds that count against the share of expert and projection weights in NVFP4.
_PROJECTION_KINDS = ("skip", "shape")


@dataclasses.dataclass
class ConversionEntry:
    name: str  # dotted module name
    kind: str  # converted: what it became; kept: a key of KEPT_KINDS
    numel: int  # matmul weight elements (each Parameter counted once in a report)
    detail: str = ""


@dataclasses.dataclass
class ConversionReport:
    """What convert_model converted and what it left in high precision, and why.

    Matmul weights are the weights of linears, experts and routers, each Parameter counted
    once (tied weights once); embeddings are listed but are not matmul weights."""

    converted: List[ConversionEntry] = dataclasses.field(default_factory=list)
    kept: List[ConversionEntry] = dataclasses.field(default_factory=list)

    @property
    def nvfp4_numel(self) -> int:
        return sum(e.numel for e in self.converted)

    @property
    def matmul_numel(self) -> int:
        return self.nvfp4_numel + sum(e.numel for e in self.kept if e.kind != "embedding")

    @property
    def nvfp4_share(self) -> float:
        """Share of all matmul weights (routers and head included) now in NVFP4."""
        return self.nvfp4_numel / max(self.matmul_numel, 1)

    @property
    def projection_share(self) -> float:
        """Share of the expert and projection weights (all matmul weights except routers,
        gates and the output head) now in NVFP4."""
        rest = sum(e.numel for e in self.kept if e.kind in _PROJECTION_KINDS)
        return self.nvfp4_numel / max(self.nvfp4_numel + rest, 1)

    def __str__(self) -> str:
        lines = [
            f"f46.convert_model: {_count(self.converted, 'module')} converted, "
            f"{len(self.kept)} left in high precision",
            f"  NVFP4: {100 * self.nvfp4_share:.1f}% of matmul weights "
            f"({self.nvfp4_numel:,} of {self.matmul_numel:,}), "
            f"{100 * self.projection_share:.1f}% of expert and projection weights",
        ]
        width = max([len(e.name) for e in self.converted + self.kept] + [10])
        if self.converted:
            lines.append("  converted:")
            lines += [f"    {e.name:<{width}}  {e.kind} ({e.numel:,})" for e in self.converted]
        if self.kept:
            lines.append("  left in high precision:")
            for e in self.kept:
                why = KEPT_KINDS[e.kind] + (f": {e.detail}" if e.detail else "")
                lines.append(f"    {e.name:<{width}}  {why} ({e.numel:,})")
        return "\n".join(lines)


def _count(items, noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _skipper(skip: Skip, head_names: Iterable[str]):
    heads = set(head_names)
    if callable(skip):
        user = skip
    else:
        names = set(skip)

        def user(name, _m):
            return name in names or name.rsplit(".", 1)[-1] in names

    def is_head(name):
        return bool(name) and (name in heads or name.rsplit(".", 1)[-1] in heads)

    return user, is_head


def is_router_name(name: str, parent: Optional[nn.Module] = None) -> bool:
    """A router or gate linear: last name component "gate" / "router" or ending in "_gate" /
    "_router" (not "gate_proj"), or a child of a module whose class name has "Router"."""
    last = name.rsplit(".", 1)[-1].lower()
    if last in ("gate", "router") or last.endswith(("_gate", "_router")):
        return True
    return parent is not None and "router" in type(parent).__name__.lower()


def _is_router_module(m: nn.Module) -> bool:
    w = getattr(m, "weight", None)
    kind = type(m).__name__.lower()
    return ("router" in kind or kind.endswith("gate")) and isinstance(w, nn.Parameter)


def _is_legacy_grouped_experts(m: nn.Module) -> bool:
    """w1 (E, F, D), w2 (E, D, F), w3 (E, F, D) parameters (torchtitan before 0.3)."""
    ws = [getattr(m, n, None) for n in ("w1", "w2", "w3")]
    if not all(isinstance(w, nn.Parameter) and w.dim() == 3 for w in ws):
        return False
    w1, w2, w3 = ws
    e, f, d = w1.shape
    return tuple(w3.shape) == (e, f, d) and tuple(w2.shape) == (e, d, f)


class _Walk:
    def __init__(self, recipe: Recipe, user_skip, is_head, keep_routers: bool):
        self.recipe, self.user_skip, self.is_head = recipe, user_skip, is_head
        self.keep_routers = keep_routers
        self.report = ConversionReport()
        self.seen: set = set()

    def numel(self, params, mark: bool = True) -> int:
        n = 0
        for p in params:
            if p is not None and id(p) not in self.seen:
                if mark:
                    self.seen.add(id(p))
                n += p.numel()
        return n

    def matmul_params(self, m: nn.Module):
        if isinstance(m, nn.Embedding):
            return [m.weight]
        return [p for n, p in m.named_parameters() if not n.endswith("bias")]

    def kept(self, name, m, kind, detail=""):
        # an embedding does not claim its weight: a head tied to it is a matmul on it
        n = self.numel(self.matmul_params(m), mark=kind != "embedding")
        self.report.kept.append(ConversionEntry(name, kind, n, detail))

    def converted(self, name, params, kind):
        self.report.converted.append(ConversionEntry(name, kind, self.numel(params)))

    def visit(self, parent: nn.Module, prefix: str, exclude=()) -> None:
        for child_name, child in list(parent.named_children()):
            if child_name not in exclude:
                name = f"{prefix}.{child_name}" if prefix else child_name
                self.module(parent, child_name, child, name)

    def module(self, parent: Optional[nn.Module], child_name: str, child: nn.Module, name: str):
        """Converts `child` (parent.child_name; the model itself when parent is None) or
        records why not, or looks inside it."""
        if is_swapped(child) and isinstance(getattr(child, "experts", None), nn.ModuleList):
            self.converted(f"{name}.experts", list(child.experts.parameters()), "converted before")
            self.visit(child, name, exclude=("experts",))  # a 4.x block: router, shared expert
        elif isinstance(child, (F46Linear, F46GroupedExperts)) or is_swapped(child):
            self.converted(name, self.matmul_params(child), "converted before")
        elif self.is_head(name):
            self.kept(name, child, "head")
        elif name and self.user_skip(name, child):
            self.kept(name, child, "skip")
        elif isinstance(child, nn.Embedding):
            self.kept(name, child, "embedding")
        elif isinstance(child, nn.Linear):
            self.linear(parent, child_name, child, name)
        elif hf.is_fused_experts(child):
            kind = "transformers experts"
            self.experts(name, child, hf.fused_experts_problem, hf.convert_fused_experts, kind)
        elif titan.is_grouped_experts(child):
            problem, convert = titan.grouped_experts_problem, titan.convert_grouped_experts
            self.experts(name, child, problem, convert, "torchtitan grouped experts")
        elif hf.is_modulelist_moe(child):
            self.modulelist_moe(name, child)
        elif _is_legacy_grouped_experts(child) and parent is not None:
            self.legacy_experts(parent, child_name, child, name)
        elif self.keep_routers and _is_router_module(child):
            self.kept(name, child, "router")
        else:
            self.visit(child, name)

    def linear(self, parent, child_name, lin, name):
        if parent is None:
            self.kept(name, lin, "root")
            return
        if self.keep_routers and is_router_name(name, parent):
            self.kept(name, lin, "router")
            return
        problem = matmul_shape_problem(
            lin.out_features, lin.in_features, self.recipe, dtype=lin.weight.dtype
        )
        if problem is not None:
            self.kept(name, lin, "shape", problem)
            return
        new = F46Linear.from_linear(lin, self.recipe, share_parameters=True)
        setattr(parent, child_name, new)
        self.converted(name, [lin.weight], "F46Linear")

    def experts(self, name, m, problem_of, convert, kind):
        problem = problem_of(m, self.recipe)
        if problem is not None:
            self.kept(name, m, "shape", problem)
            return
        params = [p for n, p in m.named_parameters(recurse=False) if p.dim() == 3]
        kind = f"{kind} ({type(m).__name__})"
        convert(m, self.recipe)
        self.converted(name, params, kind)

    def modulelist_moe(self, name, m):
        problem = hf.modulelist_moe_problem(m, self.recipe)
        if problem is not None:  # not one grouped call: look inside it as any module
            self.visit(m, name)
            return
        kind = f"transformers 4.x ModuleList experts of {type(m).__name__}"
        hf.convert_modulelist_moe(m, self.recipe)
        self.converted(f"{name}.experts", list(m.experts.parameters()), kind)
        self.visit(m, name, exclude=("experts",))  # router, shared expert

    def legacy_experts(self, parent, child_name, m, name):
        problem = titan.grouped_experts_problem(m, self.recipe)
        if problem is not None:
            self.kept(name, m, "shape", problem)
            return
        new = F46GroupedExperts.from_bf16(m.w1, m.w2, m.w3, self.recipe, share_parameters=True)
        new.train(m.training)
        setattr(parent, child_name, new)
        self.converted(name, [m.w1, m.w2, m.w3], "F46GroupedExperts")


def convert_model(
    model: nn.Module,
    recipe: Optional[Recipe] = None,
    skip: Skip = (),
    head_names: Iterable[str] = HEAD_NAMES,
    *,
    keep_routers: bool = True,
    report: bool = False,
    verbose: bool = False,
):
    """Run `model`'s matmuls on NVFP4 4/6 GEMMs, in place (see this module's docstring).

    Left in high precision: the output head (modules named as in `head_names`, "output" /
    "lm_head" by default; pass () to convert it too), routers and gates (`keep_routers`,
    see is_router_name), embeddings, modules selected by `skip` (a collection of full dotted
    names or last components, or a callable (name, module) -> bool; their children are left
    untouched too) and matmuls whose shapes NVFP4 cannot take under `recipe`.

    Parameters stay the same objects (ties, requires_grad and optimizers built before the
    conversion hold), and state_dict keys are unchanged. Returns the model, or
    (model, ConversionReport) with report=True; verbose=True prints the report."""
    recipe = recipe if recipe is not None else Recipe()
    user_skip, is_head = _skipper(skip, head_names)
    walk = _Walk(recipe, user_skip, is_head, keep_routers)
    walk.module(None, "", model, "")
    if verbose:
        print(walk.report)
    return (model, walk.report) if report else model
