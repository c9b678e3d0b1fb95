"""f46 training demo: a small MoE transformer LM trained in BF16, NVFP4 and NVFP4 4/6.

    python -m f46.demo --help

Modules: data (corpus + batches), model (plain-PyTorch MoE LM), train (loop, quantization
error, report), plot (loss curves).
"""

from .train import MODES, PRESETS, cli, main, run  # noqa: F401
