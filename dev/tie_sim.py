# Run: .venv/bin/python dev/tie_sim.py. How often a 1x16 block's two 4/6 candidates have exactly
# equal errors (err4 == err6 with s4 != s6): the blocks the lean kernel's approximate errors
# cannot decide, which take its exact out-of-line path (quantize_lean.cuh, lean_exact_four).
# Per block and per warp step of 32 blocks, for the bench's data (uniform [-2, 2) as bf16, amax
# given as 3) and for data with its true amax. float64 stands in for the FP32 reference (bf16
# inputs and E4M3 scales keep these sums exact; bench/RESULTS.md 2026-12-05 evening).
import numpy as np

E4 = np.array(sorted({(m / 8) * 2.0**-6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
                      for e in range(16) for m in range(8)} - {1.875 * 2**8}))
MIDS = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
GRID = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])


def e4m3(v):  # round to nearest, ties to the even code
    v = np.minimum(v, 448.0)
    i = np.clip(np.searchsorted(E4, v), 1, len(E4) - 1)
    lo, hi = E4[i - 1], E4[i]
    even_lo = (i - 1) % 2 == 0
    return np.where(v - lo < hi - v, lo, np.where(v - lo > hi - v, hi, np.where(even_lo, lo, hi)))


def e2m1(v):  # grid value, ties to the even code
    v = np.minimum(v, 6.0)
    i = np.searchsorted(MIDS, v, side="left")
    tie = np.isin(v, MIDS)
    return GRID[np.where(tie & (i % 2 == 1), i + 1, i)]


def bf16(a):
    u = a.astype(np.float32).view(np.uint32)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return u.view(np.float32).astype(np.float64)


def ties(x, amax, bound):
    b = x.reshape(-1, 16)
    senc = bound * 6 / amax
    base = np.abs(b).max(1) / 6 * senc
    errs = []
    for s in (e4m3(base), e4m3(base * 1.5)):
        val = e2m1(np.abs(b) * (senc / s)[:, None]) * (s * amax / (6 * bound))[:, None]
        errs.append((s, np.abs(val - np.abs(b)).sum(1)))
    (s6, e6), (s4, e4) = errs
    tie = (e4 == e6) & (s4 != s6)
    return tie.mean(), 1 - (1 - tie.mean()) ** 32


def main():
    rng = np.random.default_rng(2)
    n = 1 << 24
    u24 = rng.integers(0, 1 << 24, n).astype(np.float64)  # the bench's fill_bf16: 24 random bits
    cases = [("bench: uniform [-2, 2), amax 3", bf16((u24 * 5.96e-8 - 0.5) * 4.0), 3.0)]
    for name, x in [("gaussian", bf16(rng.standard_normal(n))),
                    ("student-t(3)", bf16(rng.standard_t(3, n))),
                    ("uniform [-2, 2)", bf16(rng.uniform(-2, 2, n)))]:
        cases.append((name + ", true amax", x, np.abs(x).max()))
    for name, x, amax in cases:
        for bound in (256.0, 448.0):
            p, w = ties(x, amax, bound)
            print(f"{name:32s} bound {bound:3.0f}: tie blocks {100 * p:.3f} %, "
                  f"warp steps holding one {100 * w:.1f} %")


if __name__ == "__main__":
    main()
