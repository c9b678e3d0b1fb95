"""Statistics across seeds and the demo's verdict.

Within a seed every mode starts from the same weights and sees the same batches, so the
per-seed differences of final validation loss are paired:

    gap_s  = loss(NVFP4, s)     - loss(BF16, s)     NVFP4's gap to BF16
    gain_s = loss(NVFP4, s)     - loss(NVFP4 4/6, s) what 4/6 recovers of it

The rule (two-sided 95% Student-t intervals over the n seeds, n - 1 degrees of freedom):

1. n < 2: no spread, no verdict.
2. The interval of mean(gap) contains 0 or lies below it: NVFP4 has no measurable gap to close
   ("not distinguishable at this scale").
3. The interval of mean(gain) contains 0: "not distinguishable at this scale" (with the fraction
   of rule 4 and its interval, which then contains 0).
4. Otherwise 4/6 closes (gain > 0) or widens (gain < 0) the gap by
   closed = mean(gain) / mean(gap), reported with its 95% interval from the delta method
   (paired variances and covariance of gain and gap, the same t quantile).
"""

from __future__ import annotations

import dataclasses
import math

# Two-sided 95% quantiles of Student's t, t_{0.975}(dof), dof 1..30.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(dof: int) -> float:
    """t_{0.975} with `dof` degrees of freedom (table to 30, Cornish-Fisher beyond)."""
    if dof < 1:
        raise ValueError(f"dof must be >= 1, got {dof}")
    if dof <= len(_T975):
        return _T975[dof - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * dof) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * dof**2)


@dataclasses.dataclass(frozen=True)
class Sample:
    """Mean and spread of one quantity over seeds. se: standard error of the mean; ci: half
    width of the 95% t-interval of the mean (nan for one value)."""

    n: int
    mean: float
    sd: float
    se: float
    ci: float
    min: float
    max: float

    @classmethod
    def of(cls, xs) -> Sample:
        xs = [float(x) for x in xs]
        n = len(xs)
        if n == 0:
            raise ValueError("Sample.of needs at least one value")
        mean = sum(xs) / n
        if n < 2:
            return cls(n, mean, math.nan, math.nan, math.nan, mean, mean)
        sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
        se = sd / math.sqrt(n)
        return cls(n, mean, sd, se, t975(n - 1) * se, min(xs), max(xs))

    def excludes_zero(self) -> bool:
        return self.n >= 2 and abs(self.mean) > self.ci


@dataclasses.dataclass(frozen=True)
class Verdict:
    """kind: "closes", "widens", "indistinguishable", "no_gap" or "one_seed"."""

    kind: str
    text: str
    n: int
    gap: Sample | None  # NVFP4 - BF16 per seed
    gain: Sample | None  # NVFP4 - NVFP4 4/6 per seed
    closed: float  # mean(gain) / mean(gap), nan when not defined
    closed_ci: float  # 95% half width of `closed` (delta method), nan when not defined


def closed_fraction(gap: list, gain: list) -> tuple[float, float]:
    """(mean(gain) / mean(gap), 95% half width by the delta method over paired seeds)."""
    n = len(gap)
    g, a = Sample.of(gap), Sample.of(gain)
    if g.mean == 0:
        return math.nan, math.nan
    r = a.mean / g.mean
    if n < 2:
        return r, math.nan
    cov = sum((x - g.mean) * (y - a.mean) for x, y in zip(gap, gain)) / (n - 1)
    var = (a.sd**2 - 2 * r * cov + r * r * g.sd**2) / (n * g.mean**2)
    return r, t975(n - 1) * math.sqrt(max(var, 0.0))


def verdict(bf16: list, nvfp4: list, four_six: list) -> Verdict:
    """The rule of the module docstring on per-seed final losses (same seed order in each)."""
    if not (len(bf16) == len(nvfp4) == len(four_six)) or not bf16:
        raise ValueError(
            f"verdict needs one loss per seed in each mode, got {len(bf16)}, {len(nvfp4)}, "
            f"{len(four_six)}"
        )
    n = len(bf16)
    gaps = [b - a for a, b in zip(bf16, nvfp4)]
    gains = [b - c for b, c in zip(nvfp4, four_six)]
    gap, gain = Sample.of(gaps), Sample.of(gains)
    closed, closed_ci = closed_fraction(gaps, gains)
    seeds = f"{n} seed{'s' if n != 1 else ''}"
    if n < 2:
        kind = "one_seed"
        text = (
            f"not distinguishable at this scale: one seed has no spread (NVFP4 - BF16 "
            f"{gap.mean:+.4f}, 4/6 recovers {gain.mean:+.4f}); run more seeds"
        )
    elif not (gap.excludes_zero() and gap.mean > 0):
        kind = "no_gap"
        text = (
            f"not distinguishable at this scale: NVFP4's gap to BF16 is {gap.mean:+.4f} "
            f"+/- {gap.ci:.4f} ({seeds}, 95% t-interval), not clearly above 0, so there is "
            f"no gap for 4/6 to close"
        )
    elif not gain.excludes_zero():
        kind = "indistinguishable"
        text = (
            f"not distinguishable at this scale: NVFP4's gap to BF16 is {gap.mean:+.4f} "
            f"+/- {gap.ci:.4f} (above 0), 4/6 closes {100 * closed:.0f}% +/- "
            f"{100 * closed_ci:.0f}% of it (recovered {gain.mean:+.4f} +/- {gain.ci:.4f} "
            f"nats/byte; {seeds}, 95% t-interval includes 0)"
        )
    else:
        kind = "closes" if gain.mean > 0 else "widens"
        pct = 100 * abs(closed)
        what = (
            f"closes {pct:.0f}% of NVFP4's gap to BF16"
            if kind == "closes"
            else f"widens NVFP4's gap to BF16 by {pct:.0f}%"
        )
        text = (
            f"4/6 {what} ({seeds}, +/- {100 * closed_ci:.0f}%, "
            f"95% t-interval; gap {gap.mean:+.4f} +/- {gap.ci:.4f}, recovered "
            f"{gain.mean:+.4f} +/- {gain.ci:.4f} nats/byte)"
        )
    return Verdict(kind, text, n, gap, gain, closed, closed_ci)
