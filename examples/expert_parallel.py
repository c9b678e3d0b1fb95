"""Train an expert-parallel f46 MoE block with torchrun.

    torchrun --nproc_per_node 2 examples/expert_parallel.py                 # CPU, gloo
    torchrun --nproc_per_node 8 examples/expert_parallel.py --backend nccl  # GPUs, NCCL

Each rank holds num_experts / world experts (f46.F46GroupedExperts on NVFP4 4/6 grouped GEMMs),
tokens travel by all-to-all, the router is sharded with FSDP2. Prints the loss per step.
"""

import argparse
import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import f46  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from f46.parallel import ExpertParallelMoE, shard_dense_parameters  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--experts", type=int, default=8)
    p.add_argument("--top-k", type=int, default=2)
    p.add_argument("--tokens", type=int, default=512, help="tokens per rank")
    p.add_argument("--steps", type=int, default=10)
    args = p.parse_args()

    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = (
        torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        if args.backend == "nccl"
        else torch.device("cpu")
    )
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.manual_seed(0)  # same init on every rank; each keeps its own experts
    recipe = f46.Recipe.four_over_six()
    el = args.experts // world
    experts = f46.F46GroupedExperts(
        args.dim, args.hidden, el, recipe, device=device, dtype=torch.bfloat16
    )
    block = ExpertParallelMoE(
        args.dim, args.experts, args.top_k, experts, group=dist.group.WORLD
    ).to(device)
    shard_dense_parameters(block)
    opt = torch.optim.AdamW(block.parameters(), lr=1e-3)
    torch.manual_seed(100 + rank)  # each rank's own data
    target = torch.randn(args.dim, args.dim, device=device) / args.dim**0.5
    for step in range(args.steps):
        x = torch.randn(args.tokens, args.dim, device=device, dtype=torch.bfloat16)
        y = block(x)
        loss = (y.float() - x.float() @ target).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        if rank == 0:
            print(f"step {step:3d}  loss {total.item() / world:.5f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
