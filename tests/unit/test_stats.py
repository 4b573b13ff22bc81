"""The gate's statistics against values computed another way: by hand from the formula,
from published tables, by brute-force enumeration, or with the standard library.

- Wilson score interval: the roots in pi of (p - pi)^2 = z^2 pi (1 - pi) / n, where p = x/n
  (Wilson 1927); checked against Newcombe (1998), Table I, "method 3", and against those
  roots found with the quadratic formula.
- One-sided exact McNemar: P(X >= b) for X ~ Binomial(b + c, 1/2),
  = sum over i >= b of C(b + c, i) / 2^(b + c).
- The stratified exact conditional test: given each case's margins, the baseline's passes
  are hypergeometric, P(a) = C(t, a) C(N - t, m - a) / C(N, m); the p-value is P(S >= s)
  for S the sum over cases. Checked by listing every way the samples could have been split
  between the baseline and now.
- CMH with continuity correction: Z = (sum a - sum E - 1/2) / sqrt(sum V); with one sample
  per side it is McNemar's continuity-corrected z, (b - c - 1) / sqrt(b + c).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from statistics import NormalDist

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.score.stats import (
    CMH,
    EXACT_MCNEMAR,
    EXACT_STRATIFIED,
    Stratum,
    bounds_text,
    cmh,
    interval_text,
    mcnemar_exact,
    p_text,
    stratified,
    wilson,
)

Z = NormalDist().inv_cdf(0.975)


def quadratic_wilson(x: int, n: int) -> tuple[float, float]:
    """The Wilson bounds as the roots of (1 + z²/n) pi² - (2p + z²/n) pi + p² = 0."""
    p, k = x / n, Z * Z / n
    a, b, c = 1 + k, -(2 * p + k), p * p
    root = math.sqrt(b * b - 4 * a * c)
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


@pytest.mark.parametrize(
    ("x", "n", "low", "high"),
    [
        (81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718),
    ],
)  # fmt: skip
def test_wilson_matches_newcombes_table(x: int, n: int, low: float, high: float) -> None:
    found = wilson(x, n)
    assert found is not None
    assert found[0] == pytest.approx(low, abs=5e-5) and found[1] == pytest.approx(high, abs=5e-5)


def test_wilson_of_nothing_is_no_interval_and_the_text_says_it() -> None:
    assert wilson(0, 0) is None
    assert interval_text(0, 0) == "0/0" and bounds_text(0, 0) == ""
    # 12/25: 0.3000-0.6650 by the formula, shown rounded outwards so it holds the bounds.
    assert interval_text(12, 25) == "12/25 [30\N{EN DASH}67 %]"
    assert wilson(12, 25) == pytest.approx(quadratic_wilson(12, 25))


@settings(max_examples=300, derandomize=True)
@given(st.integers(1, 2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_is_the_quadratics_roots_and_holds_the_estimate(pair: tuple[int, int]) -> None:
    x, n = pair
    found = wilson(x, n)
    assert found is not None
    low, high = found
    assert 0.0 <= low <= x / n <= high <= 1.0
    assert (low, high) == pytest.approx(quadratic_wilson(x, n), abs=1e-9)
    if x < n:  # one more success moves both bounds up, never down
        more = wilson(x + 1, n)
        assert more is not None and more[0] >= low and more[1] >= high


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (3, 0, 0.125),  # 1/2^3
        (5, 0, 0.03125),  # 1/2^5
        (6, 0, 0.015625),  # 1/2^6
        (6, 1, 0.0625),  # (C(7,6) + C(7,7)) / 2^7 = 8/128
        (10, 2, 79 / 4096),  # (C(12,10) + C(12,11) + C(12,12)) / 2^12 = (66 + 12 + 1) / 4096
        (1, 1, 0.75),  # (C(2,1) + C(2,2)) / 4
        (0, 4, 1.0),  # nothing was lost
        (0, 0, 1.0),  # no flip at all
    ],
)
def test_exact_mcnemar_by_hand(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p, rel=1e-12)


@settings(max_examples=200, derandomize=True)
@given(st.integers(0, 60), st.integers(0, 60))
def test_exact_mcnemar_is_a_probability_falling_with_losses(b: int, c: int) -> None:
    p = mcnemar_exact(b, c)
    assert 0.0 < p <= 1.0
    assert mcnemar_exact(b + 1, c) <= p + 1e-12  # one more loss: never less significant
    assert mcnemar_exact(b, c + 1) >= p - 1e-12  # one more gain: never more significant


def flips(b: int, c: int, same: int = 0) -> list[Stratum]:
    """One sample per case per side: b pass -> fail, c fail -> pass, ``same`` unchanged."""
    return [Stratum(1, 1, 0, 1)] * b + [Stratum(0, 1, 1, 1)] * c + [Stratum(1, 1, 1, 1)] * same


def test_one_sample_per_case_is_exactly_mcnemar() -> None:
    for b, c in ((3, 0), (5, 0), (6, 1), (10, 2)):
        test = stratified(flips(b, c, same=7))
        assert test.method == EXACT_MCNEMAR and test.strata == b + c
        assert test.p_loss == pytest.approx(mcnemar_exact(b, c), rel=1e-12)
        assert test.p_gain == pytest.approx(mcnemar_exact(c, b), rel=1e-12)
    assert stratified(flips(3, 0)).p_loss == 0.125
    assert stratified(flips(5, 0)).p_loss == 0.03125


@pytest.mark.parametrize(
    ("tables", "p"),
    [
        # Three cases 2/2 -> 1/2: each baseline holds both of the 3 passes with
        # C(3,2) C(1,0) / C(4,2) = 3/6 = 1/2, so p = (1/2)^3.
        ([Stratum(2, 2, 1, 2)] * 3, 0.125),
        ([Stratum(2, 2, 1, 2)] * 6, 0.015625),
        # Three cases 2/2 -> 0/2: C(2,2) C(2,0) / C(4,2) = 1/6 each, p = 1/216.
        ([Stratum(2, 2, 0, 2)] * 3, 1 / 216),
        # One of each: P(a1 = 2) P(a2 = 2) = 1/6 * 1/2.
        ([Stratum(2, 2, 0, 2), Stratum(2, 2, 1, 2)], 1 / 12),
        # An old baseline's case read as 1 of 1, now 0 of 2: C(1,1) C(2,0) / C(3,1) = 1/3.
        ([Stratum(1, 1, 0, 2)], 1 / 3),
        # Stable cases say nothing: all-pass and all-fail tables drop out.
        ([Stratum(2, 2, 2, 2), Stratum(0, 2, 0, 2), Stratum(2, 2, 1, 2)], 0.5),
    ],
)
def test_stratified_exact_by_hand(tables: list[Stratum], p: float) -> None:
    test = stratified(tables)
    assert test.method == EXACT_STRATIFIED
    assert test.p_loss == pytest.approx(p, rel=1e-12)


def enumerate_split(tables: list[Stratum]) -> tuple[float, float]:
    """(P(S >= s), P(S <= s)) by listing, per case, every way to pick which of its pooled
    samples were the baseline's: each pick is equally likely under the null hypothesis."""
    per_case = []
    for t in tables:
        pooled = [True] * (t.before_passed + t.now_passed)
        pooled += [False] * (t.before + t.now - len(pooled))
        picks = itertools.combinations(range(len(pooled)), t.before)
        counts = Counter(sum(pooled[i] for i in pick) for pick in picks)
        total = sum(counts.values())
        per_case.append({a: k / total for a, k in counts.items()})
    observed = sum(t.before_passed for t in tables)
    upper = lower = 0.0
    for combo in itertools.product(*(d.items() for d in per_case)):
        s = sum(a for a, _ in combo)
        chance = math.prod(q for _, q in combo)
        upper += chance if s >= observed else 0.0
        lower += chance if s <= observed else 0.0
    return upper, lower


def table() -> st.SearchStrategy[Stratum]:
    return st.tuples(st.integers(1, 4), st.integers(1, 4)).flatmap(
        lambda mn: st.builds(
            Stratum, st.integers(0, mn[0]), st.just(mn[0]), st.integers(0, mn[1]), st.just(mn[1])
        )
    )


@settings(max_examples=120, derandomize=True, deadline=None)
@given(st.lists(table(), min_size=1, max_size=4))
def test_the_exact_test_equals_listing_every_split(tables: list[Stratum]) -> None:
    test = stratified(tables)
    upper, lower = enumerate_split(tables)
    assert test.p_loss == pytest.approx(min(1.0, upper), abs=1e-12)
    assert test.p_gain == pytest.approx(min(1.0, lower), abs=1e-12)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.lists(table(), min_size=1, max_size=8), st.data())
def test_stratified_p_values_are_bounded_and_monotone(
    tables: list[Stratum], data: st.DataObject
) -> None:
    test = stratified(tables)
    assert 0.0 <= test.p_loss <= 1.0 and 0.0 <= test.p_gain <= 1.0
    # P(S >= s) + P(S <= s) = 1 + P(S = s): the two sides cover everything at least once.
    assert test.p_loss + test.p_gain >= 1.0 - 1e-9
    # One more failure now, in any case that had a pass, never makes a loss less significant.
    index = data.draw(st.integers(0, len(tables) - 1))
    t = tables[index]
    if t.now_passed:
        worse = [
            *tables[:index],
            Stratum(t.before_passed, t.before, t.now_passed - 1, t.now),
            *tables[index + 1 :],
        ]
        assert stratified(worse).p_loss <= test.p_loss + 1e-9


def test_cmh_with_one_sample_per_side_is_mcnemars_corrected_z() -> None:
    # b = 10, c = 2: z = (10 - 2 - 1) / sqrt(12).
    loss, gain = cmh(flips(10, 2))
    assert loss == pytest.approx(1 - NormalDist().cdf(7 / math.sqrt(12)), rel=1e-9)
    assert gain == pytest.approx(1 - NormalDist().cdf(-9 / math.sqrt(12)), rel=1e-9)
    assert cmh([Stratum(2, 2, 2, 2)]) == (1.0, 1.0)  # no variance: nothing to test


def test_cmh_by_hand_on_two_sample_cases() -> None:
    # Each 2/2 -> 1/2 table: t = 3, N = 4, E = 2 * 3 / 4 = 1.5, V = 2*2*3*1 / (16 * 3) = 0.25.
    # Six of them: sum a - sum E = 6 * 0.5 = 3, sum V = 1.5, z = (3 - 0.5) / sqrt(1.5).
    loss, _ = cmh([Stratum(2, 2, 1, 2)] * 6)
    assert loss == pytest.approx(1 - NormalDist().cdf(2.5 / math.sqrt(1.5)), rel=1e-9)


def test_large_tables_use_cmh_and_agree_with_the_exact_test() -> None:
    tables = [Stratum(8, 10, 6, 10)] * 10 + [Stratum(5, 10, 5, 10)] * 15
    exact = stratified(tables)
    approx = stratified(tables, limit=0)
    assert exact.method == EXACT_STRATIFIED and approx.method == CMH
    assert approx.p_loss == pytest.approx(exact.p_loss, abs=0.01)
    # 100 samples a side in 25 cases is past the exact limit: the approximation is used.
    assert stratified([Stratum(60, 100, 50, 100)] * 25).method == CMH


def test_p_values_print_short() -> None:
    assert [p_text(p) for p in (1.0, 0.125, 0.03125, 0.75, 1 / 216, 1e-7, None)] == [
        "1", "0.125", "0.0312", "0.75", "0.0046", "<0.0001", "-",
    ]  # fmt: skip
