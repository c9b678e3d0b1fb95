"""Nsight Compute target: quantize_experts on Qwen3-like grouped weights (E 128, N 1536, K 2048)
with and without the columnwise output, then one 65536x2048 tensor row+col (the single-tensor
form at the same element count / 3), each launched twice (ncu -s 1 skips the first).
    ncu ... python3 dev/ncu_experts.py        (F46_TORCH_LIBRARY set, as in gpu_check.sh)"""

import torch
from f46 import ops

w = (torch.randn(128, 1536, 2048, device="cuda") * 0.02).to(torch.bfloat16)
amax = w.view(128, -1).abs().amax(1).float()
for columnwise in (True, False):
    for _ in range(2):
        ops.quantize_experts(
            w, amax, rule="mae", scale_bound=256.0, block=16, columnwise=columnwise
        )
x = w.view(-1, 2048)[:65536]
a1 = x.abs().amax().float().reshape(1)
for _ in range(2):
    ops.quantize(x, a1, scope="tensor", rule="mae", scale_bound=256.0, block=16, columnwise=True)
torch.cuda.synchronize()
