"""The demo's training configurations: TrainConfig, the presets (tiny for tests, small for the
CPU; large, long, probe and stress for a GPU), the NVFP4 modes' backward choices (BACKWARDS)
and the named stress settings (STRESS_SETTINGS) that `python -m f46.demo --probe` compares.

Stress settings. The `large` preset trains with NVIDIA's NVFP4 recipe (arXiv
2509.25149: 16x16 weight blocks, stochastic rounding (SR) of the gradients, the random Hadamard
transform (RHT) of the wgrad operands, embeddings, router and head in high precision), and
NVFP4's loss gap to BF16 stayed within the seed spread (H100, 7077e62: +0.019 +/- 0.065). Each
knob below removes one protection of that recipe or raises the noise it protects against; all
three are recorded in results.json (config) and the report:

- `--lr-scale K`: the peak learning rate K times the preset's. Quantization error reaches the
  update as gradient noise (SR: unbiased, with variance) and as error in the forward's weights
  and activations; Adam normalizes the gradient, so the step size, not the gradient size, sets
  how far each step carries that noise. Larger steps also grow the weight and activation
  outliers, and Four Over Six (arXiv 2512.02010) locates NVFP4's error on the near-maximal
  values of a block (E2M1 has no value between 4 and 6): more outliers, more such values.
- `--backward nvfp4-rne | nvfp4-no-rht | nvfp4-rne-no-rht`: gradients rounded to nearest instead
  of stochastically (a biased gradient estimate: components under half a grid step vanish
  systematically, which is why NVIDIA's recipe uses SR) and/or the wgrad operands quantized
  without the RHT (which spreads a block's outliers over its 16 values, so that one outlier does
  not coarsen the rest). f46 quantizes gradients the same way in both NVFP4 modes (N4: all-6,
  bound 448), so a gap these open is one 4/6 cannot close by design: they measure NVFP4's
  sensitivity, not 4/6.
- `--all-linears`: the output head (and the router, where its N is a multiple of 16) in NVFP4
  too. NVIDIA report divergence with every linear layer in NVFP4 and keep the last layers in
  BF16; the head's error reaches the logits directly, and its input is a 1x16-block activation,
  the operand whose error 4/6 lowers most (activations 8.5e-3 -> 7.4e-3 in the `large` run;
  16x16 weight tiles gain almost nothing). This is the stress that 4/6 should help with most.

`stress` = `large`'s model and batch with lr x2 and all linears in NVFP4 (NVIDIA's backward),
3 seeds per part, error record at 5 steps. `probe` = the same model and batch, 800 fixed steps
(the `large` runs left the loss plateau by step ~400), one seed, BF16 and all-6 only, for
comparing STRESS_SETTINGS (each absolute: it names its learning-rate scale, backward and
linears, whatever the preset's) in one command.

Sizing. Assumption: the `large` run's H100 throughput (bench/RESULTS.md "Demo", 7077e62: BF16
615k, NVFP4 332k, 4/6 331k tokens/s at 32x512 tokens per step, i.e. 26.6, 49.3 and 49.5 ms a
step; launch-bound at this size, so the head in NVFP4 adds a few percent). Measured since
(bench/RESULTS.md): the probe took 289 s on an H200; a stress part (rne-no-rht, head in BF16)
with `--time-budget 370` calibrated to 760 steps and took 325 s on an H100 (BF16 604k, NVFP4
329k, 4/6 338k tokens/s).
- probe, 800 steps a run: base (BF16 + all-6) 61 s, stress 62 s (new BF16 at lr x2), lr4 61 s,
  all-linears 41 s (BF16 shared with base): ~225 s, with start-up and evaluations ~4.5 min
  under its 300 s budget, which skips and lists what would not finish (rne-no-rht, lr2: 39 s
  each; run them with `--probe rne-no-rht,lr2` if wanted).
- stress part: 3 seeds x 3 modes calibrated to 420 s from start-up (~0.13 s per step of all
  three modes -> ~850 steps, ~14 M tokens a run); two parts give 6 seeds (t(5) = 2.57 instead
  of t(2) = 4.30 for 3: the interval shrinks ~2.4x at the same spread).
Total ~25 min of device time: call 1 ~8-9 min (start 1-2 min, cmake + f46_torch build, probe
~5 min), calls 2 and 3 ~7.5 min each on a warm machine.

GPU commands: the device tool's `run` with carry [".deps", ".whl"]; F46_DEMO_ARGS goes to
`python -m f46.demo --device cuda --no-progress --out $OUT/demo` (scripts/gpu_check.sh, step
`demo`, 540 s timeout), whose files come back in $OUT/logs.tgz, the log's tail in the reply.
1. Probe:
       F46_BUILD_TARGETS=f46_torch F46_DEMO_ARGS="--probe" OUT=$OUT scripts/gpu_check.sh build demo
   Its table gives NVFP4 - BF16 per setting (one seed; the `large` run's seed sd of that
   difference was ~0.026). Choose the setting with the largest NVFP4 - BF16 among those whose
   BF16 final val is within 0.05 of base's BF16 (a rate too high for BF16 itself measures
   instability, not NVFP4), preferring forward-side settings (lr, all linears: 4/6 acts there)
   at similar gaps; without a probe, the `stress` defaults.
2. Part A (N: the report's "3 seed(s) x N steps" in the log's tail, or "calibrated:" in
   demo.log):
       F46_BUILD_TARGETS=f46_torch F46_DEMO_ARGS="--preset stress --seed 0 --seeds 3 FLAGS" \
         OUT=$OUT scripts/gpu_check.sh build demo
   FLAGS: the chosen setting, e.g. "--lr-scale 4 --no-all-linears" for lr4, "--lr-scale 1" for
   all-linears, "--lr-scale 1 --no-all-linears --backward nvfp4-rne-no-rht" for rne-no-rht,
   nothing for the stress defaults.
3. Part B: the same with "--seed 3 --seeds 3 --steps N FLAGS".
4. Here: `mkdir a b && tar xzf A/logs.tgz -C a && tar xzf B/logs.tgz -C b &&
   python -m f46.demo.merge stress_out a/demo b/demo`: results.json, loss_curves.png,
   quant_error.png and the report with the verdict over 6 seeds (merge refuses parts whose
   settings, corpus or device differ).
A part on a freshly started machine rebuilds first; if call 1's summary line "build rc=0 (B s)"
shows B > 120, give part A `--time-budget T` with T = 540 - B (part B then takes as long).
"""

from __future__ import annotations

import dataclasses
import math
import platform
from collections.abc import Callable

import torch

from ..recipe import Recipe
from .data import DEFAULT_MAX_BYTES
from .model import ModelConfig

# The modes a run trains: BF16, NVFP4 all-6 and NVFP4 4/6 (their recipes).
MODES: dict[str, Callable[[], Recipe] | None] = {
    "bf16": None,
    "nvfp4": Recipe.nvfp4,  # all-6, bound 448
    "nvfp4-4/6": Recipe.four_over_six,  # MAE 4/6 selection, bound 256
}


def device_name(device: torch.device) -> str:
    """The GPU's name, or the CPU's."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return platform.processor() or platform.machine()


# The backward of the NVFP4 modes. "default": the recipes' defaults (the attention projections'
# gradient GEMMs in NVFP4 with round-to-nearest, N4; the experts' backward in BF16 on the saved
# inputs). "nvfp4": every gradient GEMM in NVFP4, the experts' included, gradients with
# stochastic rounding (N6) and the wgrad operands through the random Hadamard transform (N7):
# NVIDIA's NVFP4 training recipe, which the Four Over Six paper trains with.
# The stress variants of "nvfp4" (module docstring): the same quantized gradient GEMMs with
# round-to-nearest gradients (N5) and/or without the RHT of the wgrad operands.
BACKWARDS = {
    "default": {},
    "nvfp4": {"backward_override": "quantized", "grad_rounding": "stochastic", "wgrad_rht": True},
    "nvfp4-rne": {"backward_override": "quantized", "grad_rounding": "rne", "wgrad_rht": True},
    "nvfp4-no-rht": {
        "backward_override": "quantized",
        "grad_rounding": "stochastic",
        "wgrad_rht": False,
    },
    "nvfp4-rne-no-rht": {
        "backward_override": "quantized",
        "grad_rounding": "rne",
        "wgrad_rht": False,
    },
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
    backward: str = "default"  # a key of BACKWARDS
    lr_scale: float = 1.0  # the peak learning rate is lr * lr_scale (a stress setting)
    all_linears: bool = False  # the head (and router, shape permitting) in NVFP4 too
    error_checkpoints: int = 0  # training steps with the per-layer error record (0: none)

    def __post_init__(self):
        if self.backward not in BACKWARDS:
            raise ValueError(f"backward must be one of {sorted(BACKWARDS)}, got {self.backward!r}")
        if not (isinstance(self.lr_scale, (int, float)) and 0 < self.lr_scale < math.inf):
            raise ValueError(f"lr_scale must be a positive number, got {self.lr_scale!r}")
        if self.error_checkpoints < 0:
            raise ValueError(f"error_checkpoints must be >= 0, got {self.error_checkpoints}")
        if not 1 <= self.eval_batches <= self.final_eval_batches:
            raise ValueError(
                f"need 1 <= eval_batches ({self.eval_batches}) <= final_eval_batches "
                f"({self.final_eval_batches})"
            )

    @property
    def peak_lr(self) -> float:
        return self.lr * self.lr_scale

    @property
    def error_steps(self) -> list:
        """The 0-based steps whose tensors the error record measures: error_checkpoints steps
        evenly spaced from the first to the last (fewer when the run is shorter)."""
        n = min(self.error_checkpoints, self.steps)
        if n <= 1:
            return [0] if n == 1 else []
        return sorted({round(i * (self.steps - 1) / (n - 1)) for i in range(n)})

    def with_stress(self, setting: str) -> TrainConfig:
        """This config under a named stress setting of STRESS_SETTINGS."""
        if setting not in STRESS_SETTINGS:
            raise ValueError(
                f"unknown stress setting {setting!r}; choose from {list(STRESS_SETTINGS)}"
            )
        return dataclasses.replace(self, **STRESS_SETTINGS[setting])

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
    # as long at 8k as at 16k tokens, so the larger batch goes further in the same time. The
    # error record at 5 steps (f46.demo.quant_error.ErrorRecorder): its time is measured by the
    # calibration (record_s), budgeted, and left out of tokens/s.
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
        error_checkpoints=5,
    ),
}
# GPU, in parts (docs/demo.md, "Presets"): a run long enough to leave the loss drop behind
# does not fit one device command for every seed, so each part runs one seed of every mode
# (`--preset long --seed k --seeds 1`), the first calibrating the steps to its budget, the
# others repeating them (`--steps N`); `python -m f46.demo.merge` joins them.
PRESETS["long"] = dataclasses.replace(
    PRESETS["large"], batch=64, evals=10, eval_batches=4, seeds=1, time_budget_s=440.0
)

# The settings the probe compares, each absolute over the three stress knobs (module docstring),
# in the order the probe runs them (the most informative first: a short budget skips the last).
_NVIDIA = {"lr_scale": 1.0, "backward": "nvfp4", "all_linears": False}
STRESS_SETTINGS = {
    "base": _NVIDIA,  # the `large` preset's recipe
    "stress": {**_NVIDIA, "lr_scale": 2.0, "all_linears": True},  # the `stress` preset's
    "lr4": {**_NVIDIA, "lr_scale": 4.0},
    "all-linears": {**_NVIDIA, "all_linears": True},
    "rne-no-rht": {**_NVIDIA, "backward": "nvfp4-rne-no-rht"},
    "lr2": {**_NVIDIA, "lr_scale": 2.0},
}

# GPU, stress (module docstring): `large`'s model and batch, lr x2, all linears in NVFP4, every
# backward GEMM in NVFP4 with SR and RHT wgrad; a part is 3 seeds of every mode calibrated to
# 420 s from start-up (the first part calibrates, the others repeat its steps: --steps N).
PRESETS["stress"] = dataclasses.replace(
    PRESETS["large"], time_budget_s=420.0, **STRESS_SETTINGS["stress"]
)
# GPU, probe: 800 fixed steps of one seed per setting (no calibration: the settings compare at
# the same steps; the `large` runs left the loss plateau by step ~400 of 990); the 300 s budget
# only skips settings that would not finish.
PRESETS["probe"] = dataclasses.replace(
    PRESETS["large"],
    steps=800,
    warmup=80,
    evals=8,
    eval_batches=4,
    final_eval_batches=16,
    seeds=1,
    time_budget_s=300.0,
    corpus_bytes=64 << 20,
    error_checkpoints=3,
)
