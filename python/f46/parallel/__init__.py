"""Expert parallelism for f46 MoE layers on torch.distributed (all-to-all token exchange)."""

from .moe import ExpertParallelMoE, TopKRouter, shard_dense_parameters

__all__ = ["ExpertParallelMoE", "TopKRouter", "shard_dense_parameters"]
