"""f46 training demo: a small MoE transformer LM trained in BF16, NVFP4 and NVFP4 4/6.

    python -m f46.demo --help

Modules: data (corpus + batches), model (plain-PyTorch MoE LM), presets (TrainConfig, the
presets, BACKWARDS, the stress settings and their GPU commands), train (loop, command
line), quant_error (per-layer error, the error record over training), probe (compare stress
settings: python -m f46.demo --probe), stats (the verdict rule), report, plot (loss curves,
error record, probe), merge (one result from runs of other seeds: python -m f46.demo.merge
OUT DIR...).
"""

from .train import MODES, PRESETS, cli, main, run  # noqa: F401
