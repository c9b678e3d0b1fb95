"""Training recipes: how f46.linear / f46.grouped_mm quantize their operands.

A Recipe is a frozen (hashable) dataclass, so it can be a constant under torch.compile.
Numbers follow docs/numerics.md (section numbers N1..N12).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

# ---- the allowed values of each field (the one list; f46.torchao checks against these too) ----
ERR_MODES = ("mae", "mse", "abs_max", "all6", "all4")  # N3.6
FOUR_OVER_SIX_ERR_MODES = ("mae", "mse")  # the 4/6 selection rules (torchao's err_mode)
BACKWARD_MODES = ("high_precision", "dequantized", "quantized")
BACKWARD_OVERRIDES = (None, *BACKWARD_MODES)  # None: the resolved default
GRAD_ROUNDINGS = ("rne", "stochastic")  # N5, N6
WEIGHT_BLOCKS = {"1x16": 1, "16x16": 16}  # name -> Recipe.weight_block (N1.4)
PRESET_SCALE_BOUNDS = (256, 448)  # four_over_six() and nvfp4() (torchao's e4m3_scale_bound)
GEMM_PLANS = ("auto", "a", "b", "c")  # the CUDA GEMM plan (docs/design.md, "GEMM plans on Hopper")

# Standard NVFP4 gradient arithmetic (N4): bound 448, rule all6.
GRAD_SCALE_BOUND = 448.0
GRAD_RULE = "all6"
OPERANDS = ("activation", "weight", "gradient")


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Quantization recipe for the forward and backward passes.

    err_mode: 4/6 block selection rule for activations and weights (N3): "mae" (TE/torchao
        default), "mse" (upstream default), "abs_max", or plain NVFP4 "all6" / "all4".
    scale_bound: E4M3 bound used for the global scale (N2): 256 (4/6) or 448 (NVFP4).
    weight_block: 16 for 16x16 weight tiles (N1.4), 1 for 1x16 weight blocks.
    row_scaled_activation: per-row global amax for activations (N2), 1x16 only.
    backward_override: None (resolved default), "high_precision" (BF16 GEMMs on the saved
        originals), "dequantized" (BF16 GEMMs on the dequantized forward operands) or
        "quantized" (standard NVFP4 gradient GEMMs, N4).
    grad_rounding: "rne" (N5) or "stochastic" (N6) for the quantized backward's gradients.
    wgrad_rht: random Hadamard transform (N7) of both wgrad operands (quantized backward).
    pad_token_groups: None, or an alignment: grouped forward pads every token group to a
        multiple of it (N12) before quantizing, then slices the padding away.
    seed: base seed of stochastic rounding; advanced once per backward call in eager mode.
    gemm_plan: the CUDA GEMMs' plan, speed only (every plan gives the same bits; the CPU
        ignores it): "auto" (chosen by shape), "a" (dequantize to BF16 + CUTLASS), "b" (the
        fused 4-bit kernel where it applies, else "a") or "c" (the weight read 4-bit by the
        GEMM, A dequantized to BF16, where it applies, else "a"). For benchmarks and tuning.
    """

    err_mode: str = "mae"
    scale_bound: float = 256.0
    weight_block: int = 16
    row_scaled_activation: bool = False
    backward_override: Optional[str] = None
    grad_rounding: str = "rne"
    wgrad_rht: bool = False
    pad_token_groups: Optional[int] = None
    seed: int = 0
    gemm_plan: str = "auto"

    def __post_init__(self):
        if self.err_mode not in ERR_MODES:
            raise ValueError(f"Recipe.err_mode must be one of {ERR_MODES}, got {self.err_mode!r}")
        if isinstance(self.scale_bound, bool) or not isinstance(self.scale_bound, (int, float)):
            raise ValueError(f"Recipe.scale_bound must be a number, got {self.scale_bound!r}")
        if not (0.0 < float(self.scale_bound) <= 448.0):
            raise ValueError(f"Recipe.scale_bound must be in (0, 448], got {self.scale_bound!r}")
        object.__setattr__(self, "scale_bound", float(self.scale_bound))
        if self.weight_block not in WEIGHT_BLOCKS.values() or isinstance(self.weight_block, bool):
            raise ValueError(f"Recipe.weight_block must be 1 or 16, got {self.weight_block!r}")
        if not isinstance(self.row_scaled_activation, bool):
            raise ValueError(
                f"Recipe.row_scaled_activation must be a bool, got {self.row_scaled_activation!r}"
            )
        if self.backward_override not in BACKWARD_OVERRIDES:
            raise ValueError(
                f"Recipe.backward_override must be one of {BACKWARD_OVERRIDES}, "
                f"got {self.backward_override!r}"
            )
        if self.row_scaled_activation and self.backward_override == "quantized":
            raise ValueError(
                "Recipe.backward_override='quantized' is not supported with "
                "row_scaled_activation=True (per-row scales do not transpose)"
            )
        if self.grad_rounding not in GRAD_ROUNDINGS:
            raise ValueError(
                f"Recipe.grad_rounding must be one of {GRAD_ROUNDINGS}, got {self.grad_rounding!r}"
            )
        if not isinstance(self.wgrad_rht, bool):
            raise ValueError(f"Recipe.wgrad_rht must be a bool, got {self.wgrad_rht!r}")
        p = self.pad_token_groups
        if p is not None and (isinstance(p, bool) or not isinstance(p, int) or p < 1):
            raise ValueError(f"Recipe.pad_token_groups must be None or an int >= 1, got {p!r}")
        if p is not None and p % 16 != 0:
            raise ValueError(
                f"Recipe.pad_token_groups must be a multiple of 16 (N12 quantization blocks), "
                f"got {p!r}"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"Recipe.seed must be a non-negative int, got {self.seed!r}")
        if self.gemm_plan not in GEMM_PLANS:
            raise ValueError(
                f"Recipe.gemm_plan must be one of {GEMM_PLANS}, got {self.gemm_plan!r}"
            )

    # ---- resolved defaults ---------------------------------------------------------------
    def dense_backward(self) -> str:
        """Backward mode of f46.linear: quantized for per-tensor activations, high_precision
        for row-scaled ones, unless overridden."""
        if self.backward_override is not None:
            return self.backward_override
        return "high_precision" if self.row_scaled_activation else "quantized"

    def grouped_backward(self) -> str:
        """Backward mode of f46.grouped_mm: high_precision unless overridden."""
        return self.backward_override or "high_precision"

    @property
    def stochastic(self) -> bool:
        return self.grad_rounding == "stochastic"

    def quantize_kwargs(self, operand: str, sr_offset: int = 0) -> dict:
        """The keyword arguments of ops.quantize / ops.quantize_experts that quantize `operand`
        under this recipe: "activation" (1x16 4/6, N3), "weight" (4/6 with weight_block blocks,
        N1.4) or "gradient" (N4: rule all6, bound 448, RNE (N5) or stochastic rounding (N6)
        keyed by (seed, sr_offset))."""
        if operand not in OPERANDS:
            raise ValueError(f"operand must be one of {OPERANDS}, got {operand!r}")
        if operand == "gradient":
            return dict(
                rule=GRAD_RULE,
                scale_bound=GRAD_SCALE_BOUND,
                block=1,
                gradient=True,
                stochastic=self.stochastic,
                seed=self.seed,
                offset=sr_offset,
            )
        block = self.weight_block if operand == "weight" else 1
        return dict(rule=self.err_mode, scale_bound=self.scale_bound, block=block)

    def gradient_gemm_kwargs(self) -> dict:
        """The keyword arguments of ops.gemm / ops.grouped_gemm_* for a gradient GEMM (dgrad,
        wgrad): the global-scale bounds (a_bound, b_bound) of the N4 gradient against an
        operand of this recipe, and the recipe's GEMM plan."""
        return dict(a_bound=GRAD_SCALE_BOUND, b_bound=self.scale_bound, plan=self.gemm_plan)

    def replace(self, **kw) -> "Recipe":
        return dataclasses.replace(self, **kw)

    # ---- presets -------------------------------------------------------------------------
    @classmethod
    def nvfp4(cls, **kw) -> "Recipe":
        """Plain NVFP4: every block maps to 6 (rule all6), global scale bound 448."""
        return cls(**{"err_mode": "all6", "scale_bound": 448.0, **kw})

    @classmethod
    def four_over_six(cls, **kw) -> "Recipe":
        """Four Over Six: MAE block selection, global scale bound 256."""
        return cls(**{"err_mode": "mae", "scale_bound": 256.0, **kw})
