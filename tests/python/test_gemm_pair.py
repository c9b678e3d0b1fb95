"""f46.ops.grouped_gemm_m_pair / grouped_gemm_k_pair: each output bitwise the single op's on the
same operands (CPU always, CUDA when present, every CUDA plan that makes an operand copy), and the
pair's own arguments named in its errors."""

import pytest
import torch
from f46 import ops

PLANS = ["auto", "a", "b", "c"]


def _q(*shape, seed):
    """Random codes and finite E4M3 scale bytes of an operand (..., rows, k)."""
    g = torch.Generator().manual_seed(seed)
    *lead, rows, k = shape
    codes = torch.randint(0, 256, (*lead, rows, k // 2), generator=g, dtype=torch.uint8)
    scales = torch.randint(0x30, 0x58, (*lead, rows, k // 16), generator=g, dtype=torch.uint8)
    return codes, scales


def _amax(e, seed):
    return torch.rand(e, generator=torch.Generator().manual_seed(seed)) * 4 + 0.5


@pytest.mark.parametrize("plan", PLANS)
def test_m_pair_equals_two_single_gemms(device, plan):
    m, n, k, e = 330, 272, 256, 5
    offs = torch.tensor([150, 151, 151, 260, 260], dtype=torch.int32, device=device)
    a, b1, b2 = _q(m, k, seed=1), _q(e, n, k, seed=2), _q(e, n, k, seed=3)
    am, bm1, bm2 = _amax(e, 4), _amax(e, 5), _amax(e, 6)
    a, b1, b2 = ([t.to(device) for t in x] for x in (a, b1, b2))
    am, bm1, bm2 = am.to(device), bm1.to(device), bm2.to(device)
    kw = dict(a_scope="group", b_scope="group", b_bound=448.0, plan=plan)
    y1, y2 = ops.grouped_gemm_m_pair(*a, am, *b1, bm1, *b2, bm2, offs, **kw)
    s1 = ops.grouped_gemm_m(*a, am, *b1, bm1, offs, **kw)
    s2 = ops.grouped_gemm_m(*a, am, *b2, bm2, offs, **kw)
    assert torch.equal(y1.view(torch.int16), s1.view(torch.int16))
    assert torch.equal(y2.view(torch.int16), s2.view(torch.int16))
    assert not torch.equal(y1, y2)


def test_k_pair_equals_two_single_gemms(device):
    n, k, t, e = 96, 128, 256, 4
    offs = torch.tensor([64, 64, 192, 240], dtype=torch.int32, device=device)
    a1, a2, b = _q(n, t, seed=7), _q(n, t, seed=8), _q(k, t, seed=9)
    am1, am2, bm = _amax(e, 10), _amax(e, 11), _amax(e, 12)
    a1, a2, b = ([x.to(device) for x in op] for op in (a1, a2, b))
    am1, am2, bm = am1.to(device), am2.to(device), bm.to(device)
    kw = dict(a_scope="group", b_scope="group", a_bound=448.0, out_dtype=torch.float32)
    y1, y2 = ops.grouped_gemm_k_pair(*a1, am1, *a2, am2, *b, bm, offs, **kw)
    s1 = ops.grouped_gemm_k(*a1, am1, *b, bm, offs, **kw)
    s2 = ops.grouped_gemm_k(*a2, am2, *b, bm, offs, **kw)
    assert torch.equal(y1.view(torch.int32), s1.view(torch.int32))
    assert torch.equal(y2.view(torch.int32), s2.view(torch.int32))


def test_pair_errors_name_the_second_operand():
    m, n, k, e = 64, 32, 64, 2
    offs = torch.tensor([32, 64], dtype=torch.int32)
    a, b1 = _q(m, k, seed=1), _q(e, n, k, seed=2)
    b2 = _q(e, n + 16, k, seed=3)
    am = _amax(e, 4)
    with pytest.raises(RuntimeError, match="b1.codes.*b2.codes.*one shape"):
        ops.grouped_gemm_m_pair(*a, am, *b1, am, *b2, am, offs, a_scope="group", b_scope="group")
    a2 = _q(n, 2 * m, seed=5)
    with pytest.raises(RuntimeError, match="grouped_gemm_k_pair.*a2.codes"):
        ops.grouped_gemm_k_pair(
            *_q(n, m, seed=6),
            am,
            *a2,
            am,
            *_q(k, m, seed=7),
            am,
            offs,
            a_scope="group",
            b_scope="group",
        )
