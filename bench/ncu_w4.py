"""One plan (c) GEMM (dense 8192^3, bf16 out) and exit: the target of gpu_check.sh's `ncu` step
(Nsight Compute of w4_gemm_kernel). Usage (GPU): F46_TORCH_LIBRARY=... python3 bench/ncu_w4.py"""

from __future__ import annotations

import bench_gemm as b
import torch


def main() -> None:
    b.load_f46()
    gen = torch.Generator(device="cuda").manual_seed(0)
    qa, qb = b.rand_q((8192, 8192), gen), b.rand_q((8192, 8192), gen)
    am = torch.ones(1, device="cuda")
    for plan in ("a", "c"):  # plan (a) first: the same problem's reference kernels, warmed
        b.dense(qa, am, qb, am, plan=plan)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
