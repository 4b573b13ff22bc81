"""The statistics of the gate and the reports, in pure Python (docs/design.md §4, "Noise").

- :func:`wilson`: the 95 % Wilson score interval of a share x/n.
- :func:`mcnemar_exact`: the one-sided exact McNemar p-value over case flips,
  P(X >= b | X ~ Binomial(b + c, 1/2)).
- :func:`stratified`: the paired test over per-case sample counts. Each case is a stratum,
  a 2x2 table (baseline / now x passed / failed). Conditioned on each table's margins, the
  baseline's passes a_i are hypergeometric; the test statistic is S = sum a_i. The exact
  conditional p-value P(S >= s) convolves the strata's hypergeometric distributions; when
  that distribution is too large to enumerate cheaply, the Cochran-Mantel-Haenszel normal
  approximation with continuity correction is used instead. With one sample per case on
  both sides, every informative stratum is a flip whose a_i is 0 or 1 with chance 1/2 each,
  so the exact conditional test *is* the exact McNemar test.
- :func:`verdict_test`: the paired test of the gate's *cases*: the same conditioning on each
  case's margins, but each case is scored by how its verdict under its k-of-n rule moved
  (+1 lost, -1 won, 0 kept), D = sum d_i. A case whose verdict no split of its samples could
  change drops out, and a kept verdict counts 0, so cases that did not flip cannot offset
  cases that did (docs/design.md §4, "Noise").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from pytest_cardprobe.gatesettings import ALPHA as ALPHA

#: The 97.5 % point of the standard normal distribution: two-sided 95 % intervals.
Z95 = 1.959963984540054
#: Exact enumeration when (range of S + 1) x (sum of the strata's support sizes) is at most
#: this; beyond it the CMH approximation (the convolution's cost grows with that product).
EXACT_LIMIT = 250_000
#: :func:`verdict_test` convolves in exact fractions up to this many cases, in floats beyond.
EXACT_FRACTIONS = 64

#: Written as an escape (like gatesettings.ALPHA): the character looks like ``-``, which a
#: reader of the source must not mistake it for.
DASH = "\N{EN DASH}"

EXACT_MCNEMAR = "exact McNemar"
EXACT_STRATIFIED = "exact conditional"
CMH = "CMH"


def wilson(passed: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of ``passed``/``n`` (None when n is 0).

    centre = (p + z^2 / 2n) / (1 + z^2 / n),
    half   = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2).
    """
    if n <= 0:
        return None
    # Integer division first (1 / n, passed / n): exact for any size of count, where a
    # float over a count past 1e308 would overflow.
    p, inverse = passed / n, 1 / n
    denominator = 1 + z * z * inverse
    centre = (p + z * z * inverse / 2) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) * inverse + z * z * inverse * inverse / 4)
    # The bounds are exact at the ends (0/n starts at 0, n/n ends at 1); rounding may not be.
    low = 0.0 if passed == 0 else max(0.0, centre - half)
    high = 1.0 if passed == n else min(1.0, centre + half)
    return low, high


def mcnemar_exact(b: int, c: int) -> float:
    """One-sided exact McNemar: P(X >= b) for X ~ Binomial(b + c, 1/2).

    ``b`` pairs went pass -> fail, ``c`` fail -> pass; with no flip at all the p-value is 1.
    """
    n = b + c
    if n == 0 or b <= 0:
        return 1.0
    tail: int = sum(math.comb(n, i) for i in range(b, n + 1))
    return tail / (1 << n)


@dataclass(frozen=True)
class Stratum:
    """One case: samples passed of samples judged, in the baseline and now, and the case
    rule of each side (k of its samples must pass; None: every one)."""

    before_passed: int
    before: int
    now_passed: int
    now: int
    need_before: int | None = None
    need_now: int | None = None

    def flip_chances(self) -> tuple[Fraction, Fraction]:
        """Given the margins: the chance the case passes in the baseline and fails now, and
        the chance of the reverse (its verdict read from a split of the pooled samples);
        exact fractions, so that the p-values built from them are correctly rounded."""
        if not self.informative:
            return Fraction(0), Fraction(0)
        m, total, big = self.before, self.before_passed + self.now_passed, self.before + self.now
        need_b, need_n = needed(self.need_before, m), needed(self.need_now, self.now)
        lost = won = 0
        for a in range(max(0, total - self.now), min(m, total) + 1):
            ways = math.comb(total, a) * math.comb(big - total, m - a)
            was, now = a >= need_b, total - a >= need_n
            lost += ways if was and not now else 0
            won += ways if now and not was else 0
        whole = math.comb(big, m)
        return Fraction(lost, whole), Fraction(won, whole)

    @property
    def flip(self) -> int:
        """How the verdict moved: +1 pass -> fail, -1 fail -> pass, 0 kept."""
        was = self.before_passed >= needed(self.need_before, self.before)
        now = self.now_passed >= needed(self.need_now, self.now)
        return int(was) - int(now)

    @property
    def informative(self) -> bool:
        """A table that can say anything: both sides have samples and the margins allow
        more than one value of the baseline's passes (not all passed, not all failed)."""
        total = self.before_passed + self.now_passed
        return self.before > 0 and self.now > 0 and 0 < total < self.before + self.now

    def support(self) -> tuple[int, list[float]]:
        """The lowest possible a (the baseline's passes) and P(a) from there, given the margins."""
        m, total, big = self.before, self.before_passed + self.now_passed, self.before + self.now
        low, high = max(0, total - self.now), min(m, total)
        whole = math.comb(big, m)
        return low, [
            math.comb(total, a) * math.comb(big - total, m - a) / whole
            for a in range(low, high + 1)
        ]


@dataclass(frozen=True)
class PairedTest:
    """The paired comparison of one arm with its baseline."""

    p_loss: float  # one-sided: the baseline passed more often than the margins explain
    p_gain: float  # the other side: now passes more often
    method: str  # EXACT_MCNEMAR, EXACT_STRATIFIED or CMH
    strata: int  # informative strata (cases whose tables could vary)


def _convolve(strata: Sequence[Stratum]) -> tuple[int, list[float]]:
    """The distribution of S = sum a_i: its lowest value and P(S = low + j)."""
    low, dist = 0, [1.0]
    for stratum in strata:
        first, probs = stratum.support()
        out = [0.0] * (len(dist) + len(probs) - 1)
        for i, p in enumerate(dist):
            if p:
                for j, q in enumerate(probs):
                    out[i + j] += p * q
        low, dist = low + first, out
    return low, dist


def _normal_upper(z: float) -> float:
    """P(Z >= z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2))


def cmh(strata: Sequence[Stratum]) -> tuple[float, float]:
    """One-sided CMH p-values (loss, gain) with continuity correction.

    E_i = m_i t_i / N_i and V_i = m_i n_i t_i (N_i - t_i) / (N_i^2 (N_i - 1)) for the
    baseline's passes a_i of table i (m_i baseline samples, n_i samples now, t_i passes,
    N_i = m_i + n_i); Z = (|sum a_i - sum E_i| - 1/2) / sqrt(sum V_i) in the tested direction.
    """
    a = e = v = 0.0
    for s in strata:
        m, n = s.before, s.now
        t, big = s.before_passed + s.now_passed, m + n
        a += s.before_passed
        e += m * t / big
        v += m * n * t * (big - t) / (big * big * (big - 1))
    if v <= 0:
        return 1.0, 1.0
    root = math.sqrt(v)
    loss = min(1.0, _normal_upper((a - e - 0.5) / root))
    gain = min(1.0, _normal_upper((e - a - 0.5) / root))
    return loss, gain


def stratified(tables: Iterable[Stratum], limit: int = EXACT_LIMIT) -> PairedTest:
    """The paired test over per-case sample counts (see the module docstring)."""
    strata = [s for s in tables if s.informative]
    if not strata:
        return PairedTest(1.0, 1.0, EXACT_MCNEMAR, 0)
    if all(s.before == s.now == 1 for s in strata):
        b = sum(s.before_passed for s in strata)
        c = len(strata) - b
        return PairedTest(mcnemar_exact(b, c), mcnemar_exact(c, b), EXACT_MCNEMAR, len(strata))
    sizes = [len(s.support()[1]) for s in strata]
    span = sum(size - 1 for size in sizes) + 1
    if span * sum(sizes) > limit:
        loss, gain = cmh(strata)
        return PairedTest(loss, gain, CMH, len(strata))
    low, dist = _convolve(strata)
    observed = sum(s.before_passed for s in strata) - low
    loss = min(1.0, math.fsum(dist[observed:]))
    gain = min(1.0, math.fsum(dist[: observed + 1]))
    return PairedTest(loss, gain, EXACT_STRATIFIED, len(strata))


def needed(at_least: int | None, samples: int) -> int:
    """The passes a side of ``samples`` samples needs (k capped at n, as the rule does)."""
    return samples if at_least is None else min(at_least, samples)


def verdict_test(tables: Iterable[Stratum], limit: int = EXACT_LIMIT) -> PairedTest:
    """The paired test of case verdicts (see the module docstring): P(D >= observed) for a
    loss, P(D <= observed) for a gain, D exact by convolution, or its normal approximation
    (continuity corrected) when the convolution would cost more than ``limit``."""
    chances: list[tuple[Fraction, Fraction]] = []
    observed = 0
    single = True
    for s in tables:
        lost, won = s.flip_chances()
        if not (lost or won):
            continue  # no split of this case's samples changes its verdict
        chances.append((lost, won))
        observed += s.flip
        single = single and s.before == s.now == 1
    if not chances:
        return PairedTest(1.0, 1.0, EXACT_MCNEMAR, 0)
    count = len(chances)
    if single:  # one sample a side: every case left is a flip, lost or won with chance 1/2
        b = (observed + count) // 2
        c = count - b
        return PairedTest(mcnemar_exact(b, c), mcnemar_exact(c, b), EXACT_MCNEMAR, count)
    if (2 * count + 1) * 3 * count > limit:
        mean = math.fsum(float(lost - won) for lost, won in chances)
        var = math.fsum(float(lost + won - (lost - won) ** 2) for lost, won in chances)
        root = math.sqrt(var)
        loss = min(1.0, _normal_upper((observed - mean - 0.5) / root))
        gain = min(1.0, _normal_upper((mean - observed - 0.5) / root))
        return PairedTest(loss, gain, CMH, count)
    # The distribution of D by convolution, index j meaning D = j - count; in fractions while
    # that is cheap (the p-values are then correctly rounded), in floats beyond.
    exact = count <= EXACT_FRACTIONS
    dist: list[Fraction | float] = [Fraction(1) if exact else 1.0]
    for lost, won in chances:
        chance = (lost, won) if exact else (float(lost), float(won))
        kept = 1 - chance[0] - chance[1]
        out: list[Fraction | float] = [0] * (len(dist) + 2)
        for j, p in enumerate(dist):
            out[j] += p * chance[1]
            out[j + 1] += p * kept
            out[j + 2] += p * chance[0]
        dist = out
    at = observed + count
    loss = min(1.0, float(sum(dist[at:])))
    gain = min(1.0, float(sum(dist[: at + 1])))
    return PairedTest(loss, gain, EXACT_STRATIFIED, count)


def share(count: int, n: int) -> dict[str, float | int | None]:
    """A share for the JSON report: count, of, rate and its 95 % Wilson bounds (4 places)."""
    bounds = wilson(count, n)
    return {
        "count": count,
        "of": n,
        "rate": round(count / n, 4) if n else None,
        "low": round(bounds[0], 4) if bounds else None,
        "high": round(bounds[1], 4) if bounds else None,
    }


def p_text(p: float | None) -> str:
    """A p-value for a table cell: ``0.125``, ``0.0312``, ``<0.0001``, ``1``; ``-`` for none."""
    if p is None:
        return "-"
    if p >= 0.99995:
        return "1"
    if p < 0.0001:
        return "<0.0001"
    return f"{p:.4f}".rstrip("0").rstrip(".")


def bounds_text(count: int, n: int) -> str:
    """``[0-8%]`` (with an en dash): the 95 % Wilson interval of ``count``/``n`` in whole
    percent, rounded outwards so the shown interval holds the computed one; ``""`` for n 0.
    Written like every other percentage of the reports (``8%``, no space)."""
    bounds = wilson(count, n)
    if bounds is None:
        return ""
    return f"[{math.floor(bounds[0] * 100):d}{DASH}{math.ceil(bounds[1] * 100):d}%]"


def interval_text(count: int, n: int) -> str:
    """``12/25 [30-67%]``: the share and its interval (:func:`bounds_text`)."""
    return f"{count}/{n} {bounds_text(count, n)}".rstrip()
