"""Tokens/s of an expert-parallel DSv3-like MoE layer (forward + backward) on NCCL.

    torchrun --nproc_per_node N bench/bench_ep.py      # N = 1 (single GPU), 2, 4, 8

Prints one line per mode (bf16 experts on torch._grouped_mm, f46 NVFP4 4/6 experts): world |
mode | tokens/s per GPU | total tokens/s. Run N=1 and N>1 in the same session for ratios.
"""

import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import f46  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from f46.parallel import ExpertParallelMoE, shard_dense_parameters  # noqa: E402
from torch import nn  # noqa: E402

DIM, HIDDEN, EXPERTS, TOP_K, TOKENS = 7168, 2048, 32, 8, 8192  # DSv3-like, per rank


class BF16Experts(nn.Module):
    """The BF16 baseline: SwiGLU experts on torch._grouped_mm."""

    def __init__(self, e, f, d, device):
        super().__init__()
        mk = lambda *s: nn.Parameter(torch.randn(*s, device=device, dtype=torch.bfloat16) * 0.02)
        self.w1, self.w3, self.w2 = mk(e, f, d), mk(e, f, d), mk(e, d, f)

    def forward(self, x, counts):
        offs = torch.cumsum(counts, 0).to(torch.int32)
        h = F.silu(torch._grouped_mm(x, self.w1.transpose(-2, -1), offs)) * torch._grouped_mm(
            x, self.w3.transpose(-2, -1), offs
        )
        return torch._grouped_mm(h, self.w2.transpose(-2, -1), offs)


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    torch.cuda.set_device(dev)
    el = EXPERTS // world
    for mode in ("bf16", "nvfp4-4/6"):
        torch.manual_seed(0)
        experts = (
            BF16Experts(el, HIDDEN, DIM, dev)
            if mode == "bf16"
            else f46.F46GroupedExperts(
                DIM, HIDDEN, el, f46.Recipe.four_over_six(), device=dev, dtype=torch.bfloat16
            )
        )
        block = ExpertParallelMoE(
            DIM, EXPERTS, TOP_K, experts, group=dist.group.WORLD if world > 1 else None
        ).to(dev)
        if world > 1:
            shard_dense_parameters(block)
        x = torch.randn(TOKENS, DIM, device=dev, dtype=torch.bfloat16, requires_grad=True)
        for _ in range(3):
            block(x).float().sum().backward()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        iters = 10
        start.record()
        for _ in range(iters):
            block(x).float().sum().backward()
        end.record()
        torch.cuda.synchronize()
        tps = TOKENS * iters / (start.elapsed_time(end) / 1e3)
        if rank == 0:
            print(
                f"world {world} | {mode:10s} | {tps:12.0f} tokens/s/GPU | "
                f"{tps * world:12.0f} tokens/s"
            )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
