"""The demo's training configurations: TrainConfig, the presets (tiny for tests, small for the
CPU, large and long for a GPU) and the NVFP4 modes' backward choices (BACKWARDS)."""

from __future__ import annotations

import dataclasses
import math

from .data import DEFAULT_MAX_BYTES
from .model import ModelConfig

# The backward of the NVFP4 modes. "default": the recipes' defaults (the attention projections'
# gradient GEMMs in NVFP4 with round-to-nearest, N4; the experts' backward in BF16 on the saved
# inputs). "nvfp4": every gradient GEMM in NVFP4, the experts' included, gradients with
# stochastic rounding (N6) and the wgrad operands through the random Hadamard transform (N7):
# NVIDIA's NVFP4 training recipe, which the Four Over Six paper trains with.
BACKWARDS = {
    "default": {},
    "nvfp4": {"backward_override": "quantized", "grad_rounding": "stochastic", "wgrad_rht": True},
}


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    model: ModelConfig
    batch: int
    steps: int  # per run; with time_budget_s, the most the calibration may choose
    lr: float
    evals: int  # validation evaluations per run (the last at the final step)
    eval_batches: int  # batches of each evaluation during training
    final_eval_batches: int  # batches of the final evaluation (the verdict's loss)
    warmup: int  # learning-rate warmup steps
    seeds: int = 3
    time_budget_s: float | None = None  # whole run from start-up, calibrates `steps`
    corpus_bytes: int = DEFAULT_MAX_BYTES
    timing_skip: int = 10  # first steps of a run left out of tokens/s
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    backward: str = "default"  # "default" or "nvfp4": see BACKWARDS

    def __post_init__(self):
        if self.backward not in BACKWARDS:
            raise ValueError(f"backward must be one of {sorted(BACKWARDS)}, got {self.backward!r}")
        if not 1 <= self.eval_batches <= self.final_eval_batches:
            raise ValueError(
                f"need 1 <= eval_batches ({self.eval_batches}) <= final_eval_batches "
                f"({self.final_eval_batches})"
            )

    @property
    def eval_every(self) -> int:
        return max(1, math.ceil(self.steps / self.evals))

    def with_steps(self, steps: int) -> TrainConfig:
        """The same schedule shape over `steps` steps (warmup scaled with it)."""
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        warmup = max(1, round(self.warmup * steps / self.steps))
        return dataclasses.replace(self, steps=steps, warmup=min(warmup, steps))


PRESETS = {
    # For tests: seconds per run.
    "tiny": TrainConfig(
        ModelConfig(
            seq_len=32, dim=64, num_layers=1, num_heads=2, num_experts=4, top_k=2, ffn_dim=64
        ),
        batch=4,
        steps=16,
        lr=4e-3,
        evals=2,
        eval_batches=2,
        final_eval_batches=2,
        warmup=2,
        seeds=2,
        corpus_bytes=1 << 20,
        timing_skip=2,
    ),
    # CPU default: 3 modes x 4 seeds in a few minutes on 2 cores (the f46 CPU reference
    # quantizer and BF16 matmuls without native CPU support set the size).
    "small": TrainConfig(
        ModelConfig(
            seq_len=64, dim=64, num_layers=2, num_heads=2, num_experts=4, top_k=2, ffn_dim=128
        ),
        batch=8,
        steps=120,
        lr=8e-3,
        evals=4,
        eval_batches=2,
        final_eval_batches=16,
        warmup=12,
        seeds=4,
    ),
    # GPU default: 3 seeds x 3 modes, steps calibrated to fit the budget on the device
    # (start-up included) under scripts/gpu_check.sh's 540 s timeout; every backward GEMM in
    # NVFP4 (the recipe the Four Over Six paper trains with). At this size a step takes about
    # as long at 8k as at 16k tokens, so the larger batch goes further in the same time.
    "large": TrainConfig(
        ModelConfig(
            seq_len=512, dim=512, num_layers=6, num_heads=8, num_experts=8, top_k=2, ffn_dim=1024
        ),
        batch=32,
        steps=3000,
        lr=1.5e-3,
        evals=8,
        eval_batches=8,
        final_eval_batches=32,
        warmup=300,
        seeds=3,
        time_budget_s=450.0,
        corpus_bytes=160 << 20,
        timing_skip=20,
        backward="nvfp4",
    ),
}
# GPU, in parts (docs/demo.md, "Presets"): a run long enough to leave the loss drop behind
# does not fit one device command for every seed, so each part runs one seed of every mode
# (`--preset long --seed k --seeds 1`), the first calibrating the steps to its budget, the
# others repeating them (`--steps N`); `python -m f46.demo.merge` joins them.
PRESETS["long"] = dataclasses.replace(
    PRESETS["large"], batch=64, evals=10, eval_batches=4, seeds=1, time_budget_s=440.0
)
