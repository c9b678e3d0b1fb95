"""f46 training demo: a small MoE transformer LM trained in BF16, NVFP4 and NVFP4 4/6.

    python -m f46.demo --help

Modules: data (corpus + batches), model (plain-PyTorch MoE LM), presets (TrainConfig, the
presets, BACKWARDS), train (loop, command line), quant_error, stats (the verdict rule),
report, plot (loss curves), merge (one result from runs of other seeds: python -m
f46.demo.merge OUT DIR...).
"""

from .train import MODES, PRESETS, cli, main, run  # noqa: F401
