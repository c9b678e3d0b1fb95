"""Routed experts on f46's grouped GEMMs (f46.grouped_mm).

gate_up_pair  grouped_mm_pair: the gate and up projections of one A as one autograd Function (A
              quantized once), bitwise two f46.grouped_mm calls
swiglu        swiglu_experts: the SwiGLU experts, down(silu(gate(x)) * up(x)), with the pair and
              (CUDA) the SwiGLU fused with its amaxes, bitwise the composition
routing       group_by_expert and routed_mlp: tokens grouped by expert, and the two-GEMM expert
              MLP of the transformers adapters

f46.F46GroupedExperts (f46.modules) is the nn.Module over swiglu_experts; f46.integrations puts
these under transformers' and torchtitan's expert modules.
"""

from .gate_up_pair import grouped_mm_pair
from .routing import group_by_expert, routed_mlp
from .swiglu import swiglu_experts

__all__ = ["grouped_mm_pair", "swiglu_experts", "group_by_expert", "routed_mlp"]
