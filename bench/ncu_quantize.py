"""One quantize_experts call and exit: a target for gpu_check.sh's `ncu` step with
F46_NCU_KERNEL=quantize_tile16_quad_kernel. Default: Qwen3-like grouped gate/up weights (128
experts of 3072 x 2048) with the columnwise output, the layer's slowest 16x16 call (2.65 ms on an
H100 against 1.16 rowwise only). Argument "E N K [rowwise]" for another shape or the rowwise-only
form. Usage (GPU): F46_TORCH_LIBRARY=... python3 bench/ncu_quantize.py ["E N K [rowwise]"]"""

from __future__ import annotations

import sys

import bench_gemm as b
import torch


def main() -> None:
    b.load_f46()
    args = sys.argv[1].split() if len(sys.argv) > 1 else ["128", "3072", "2048"]
    e, n, k = (int(v) for v in args[:3])
    columnwise = len(args) < 4 or args[3] != "rowwise"
    gen = torch.Generator(device="cuda").manual_seed(0)
    w = torch.randn(e, n, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    amax = w.abs().amax(dim=(1, 2)).float()
    torch.ops.f46.quantize_experts(w, amax, "mae", 256.0, 16, columnwise)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
