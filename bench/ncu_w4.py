"""One plan (c) GEMM and exit: the target of gpu_check.sh's `ncu` step (Nsight Compute of
w4_gemm_kernel). Default: dense 8192^3, bf16 out. With an argument "E M K N", the M-grouped GEMM
of E groups (bench_gemm.group_offs) over M rows, e.g. "16 32768 7168 8192" (DSv3's forward
gate/up, where plan (c) measured slowest against plan (a)).
Usage (GPU): F46_TORCH_LIBRARY=... python3 bench/ncu_w4.py ["E M K N"]"""

from __future__ import annotations

import sys

import bench_gemm as b
import torch


def main() -> None:
    b.load_f46()
    gen = torch.Generator(device="cuda").manual_seed(0)
    if len(sys.argv) > 1:
        e, m, k, n = (int(v) for v in sys.argv[1].split())
        qa, qb = b.rand_q((m, k), gen), b.rand_q((e, n, k), gen)
        offs = b.group_offs(e, m)
        am = torch.ones(e, device="cuda")
        for plan in ("a", "c"):  # plan (a) first: the same problem's reference kernels, warmed
            b.grouped_m(qa, am, qb, am, offs, plan)
    else:
        qa, qb = b.rand_q((8192, 8192), gen), b.rand_q((8192, 8192), gen)
        am = torch.ones(1, device="cuda")
        for plan in ("a", "c"):
            b.dense(qa, am, qb, am, plan=plan)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
