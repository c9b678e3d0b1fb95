"""Points torchao's four-over-six module paths at f46.torchao, as a user switching libraries
would, so torchao's own test files run against f46 unchanged (scripts/torchao_tests.sh).

torchao itself (a release from PyPI, which predates the four-over-six PR) stays installed for
everything that is not four-over-six: compute_error, the mx_formats helpers, quantize_ for
other configs, the default-recipe NVFP4Linear. install() then
  - maps ...nvfp4_training.four_over_six and ...four_over_six_grouped to f46's modules;
  - puts f46's NVFP4TrainingConfig into ...nvfp4_training.nvfp4_training and f46's
    NVFP4FourOverSixTrainingOpConfig into torchao.prototype.moe_training.config;
  - routes torchao.quantization.quantize_ and moe_training.utils._quantize_then_scaled_grouped_mm
    to f46 for f46's configs (everything else goes to torchao's originals).
With cpu=True it also reports SM100 as present (f46 runs the NVFP4 GEMMs without it; the test
files are rewritten to put their tensors on the CPU by scripts/torchao_tests.sh).
"""

from __future__ import annotations

import sys
import types

PKG = "torchao.prototype.moe_training.nvfp4_training"


def install(cpu: bool = False) -> None:
    import f46.torchao as f46_torchao
    import torchao  # noqa: F401  (the PyPI release)
    import torchao.prototype.moe_training.config as ao_config
    import torchao.prototype.moe_training.nvfp4_training as ao_nvfp4
    import torchao.prototype.moe_training.nvfp4_training.nvfp4_training as ao_training
    import torchao.prototype.moe_training.utils as ao_utils
    import torchao.quantization as ao_quant
    import torchao.utils as ao_torchao_utils
    from f46.torchao import four_over_six, four_over_six_grouped

    for name, mod in (
        ("four_over_six", four_over_six),
        ("four_over_six_grouped", four_over_six_grouped),
    ):
        sys.modules[f"{PKG}.{name}"] = mod
        setattr(ao_nvfp4, name, mod)
    try:
        import torchao.prototype.moe_training.nvfp4_training.hadamard_cutedsl_utils  # noqa: F401
    except ImportError:  # older torchao: no CuTe DSL NVFP4 kernels at all
        stub = types.ModuleType(f"{PKG}.hadamard_cutedsl_utils")
        stub.cutedsl_nvfp4_kernels_available = lambda: False
        sys.modules[stub.__name__] = stub
        ao_nvfp4.hadamard_cutedsl_utils = stub

    ao_training.NVFP4TrainingConfig = f46_torchao.NVFP4TrainingConfig
    ao_config.NVFP4FourOverSixTrainingOpConfig = f46_torchao.NVFP4FourOverSixTrainingOpConfig

    torchao_quantize_ = ao_quant.quantize_

    def quantize_(model, config, *args, **kwargs):
        if isinstance(config, f46_torchao.NVFP4TrainingConfig):
            return f46_torchao.quantize_(model, config, *args, **kwargs)
        return torchao_quantize_(model, config, *args, **kwargs)

    ao_quant.quantize_ = quantize_
    torchao_dispatch = ao_utils._quantize_then_scaled_grouped_mm

    def _quantize_then_scaled_grouped_mm(A, B_t, config, offs=None, bias=None):
        if isinstance(config, f46_torchao.NVFP4FourOverSixTrainingOpConfig):
            return f46_torchao._quantize_then_scaled_grouped_mm(A, B_t, config, offs, bias)
        return torchao_dispatch(A, B_t, config, offs, bias)

    ao_utils._quantize_then_scaled_grouped_mm = _quantize_then_scaled_grouped_mm
    if cpu:
        ao_torchao_utils.is_sm_at_least_100 = lambda: True
