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
- The test of case verdicts: the same splits, each scored by how the case's verdict under its
  k-of-n rule moved (+1 pass -> fail, -1 fail -> pass, 0 kept); the p-value is P(D >= d)
  for D the sum over cases. Checked by hand and by listing every split.
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
    verdict_test,
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
    assert interval_text(12, 25) == "12/25 [30\N{EN DASH}67%]"
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


def k_of(tables: list[Stratum], k: int | None) -> list[Stratum]:
    return [Stratum(t.before_passed, t.before, t.now_passed, t.now, k, k) for t in tables]


@pytest.mark.parametrize(
    ("tables", "p"),
    [
        # 2/2 -> 1/2 under all-of-2: the split is the baseline's 2 of the 3 passes (lost, 1/2)
        # or 1 of them (then now holds 2 of 2: won, 1/2); three such cases: (1/2)^3.
        ([Stratum(2, 2, 1, 2)] * 3, 0.125),
        # 2/2 -> 0/2: lost with C(2,2) C(2,0) / C(4,2) = 1/6, won 1/6, kept 4/6; (1/6)^3.
        ([Stratum(2, 2, 0, 2)] * 3, 1 / 216),
        # Six lost cases beside 18 failing cases that gained a sample (0/2 -> 1/2): one pass
        # among four samples never makes 2 of 2, so those 18 drop out: (1/6)^6.
        ([Stratum(2, 2, 0, 2)] * 6 + [Stratum(0, 2, 1, 2)] * 18, 6.0**-6),
        # A kept 1/2 -> 1/2 case could have flipped either way (1/6 each): it widens the
        # distribution but offsets nothing. One lost 2/2 -> 0/2 beside it: P(D >= 1) =
        # 1/6 (4/6 + 1/6) + 4/6 * 1/6 = 9/36.
        ([Stratum(2, 2, 0, 2), Stratum(1, 2, 1, 2)], 9 / 36),
        # An old baseline's 1 of 1 now 0 of 2: lost with C(1,1) C(2,0) / C(3,1) = 1/3.
        ([Stratum(1, 1, 0, 2)], 1 / 3),
    ],
)
def test_verdict_test_by_hand(tables: list[Stratum], p: float) -> None:
    test = verdict_test(tables)
    assert test.method == EXACT_STRATIFIED
    assert test.p_loss == pytest.approx(p, rel=1e-12)


def test_verdict_test_reads_the_case_rule() -> None:
    # 2/2 -> 1/2 under 1 of 2 keeps its verdict on every split: nothing to test.
    assert verdict_test(k_of([Stratum(2, 2, 1, 2)] * 3, 1)).strata == 0
    # 3/3 -> 1/3 under 2 of 3: pooled 4 passes of 6; lost when the baseline holds 3 of them
    # (now 1: fails): C(4,3) C(2,0) / C(6,3) = 4/20; won when it holds 1: 4/20.
    assert verdict_test(k_of([Stratum(3, 3, 1, 3)], 2)).p_loss == pytest.approx(0.2)


def test_verdict_test_with_one_sample_a_side_is_exactly_mcnemar() -> None:
    for b, c in ((3, 0), (5, 0), (6, 1), (10, 2)):
        test = verdict_test(flips(b, c, same=7))
        assert test.method == EXACT_MCNEMAR and test.strata == b + c
        assert test.p_loss == mcnemar_exact(b, c) and test.p_gain == mcnemar_exact(c, b)
    assert verdict_test(flips(3, 0)).p_loss == 0.125
    assert verdict_test(flips(5, 0)).p_loss == 0.03125


def enumerate_verdicts(tables: list[Stratum]) -> tuple[float, float]:
    """(P(D >= d), P(D <= d)) by listing every split of every case's pooled samples and
    reading the case's verdict on each side from it (at least k of the side's samples)."""
    per_case = []
    for t in tables:
        pooled = [True] * (t.before_passed + t.now_passed)
        pooled += [False] * (t.before + t.now - len(pooled))
        k_b = t.before if t.need_before is None else min(t.need_before, t.before)
        k_n = t.now if t.need_now is None else min(t.need_now, t.now)
        moves: Counter[int] = Counter()
        for pick in itertools.combinations(range(len(pooled)), t.before):
            a = sum(pooled[i] for i in pick)
            moves[int(a >= k_b) - int(len([x for x in pooled if x]) - a >= k_n)] += 1
        total = sum(moves.values())
        per_case.append({d: n / total for d, n in moves.items()})
    observed = sum(
        int(
            t.before_passed >= (t.before if t.need_before is None else min(t.need_before, t.before))
        )
        - int(t.now_passed >= (t.now if t.need_now is None else min(t.need_now, t.now)))
        for t in tables
    )
    upper = lower = 0.0
    for combo in itertools.product(*(d.items() for d in per_case)):
        d = sum(x for x, _ in combo)
        chance = math.prod(q for _, q in combo)
        upper += chance if d >= observed else 0.0
        lower += chance if d <= observed else 0.0
    return upper, lower


def ruled_table() -> st.SearchStrategy[Stratum]:
    return st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)).flatmap(
        lambda mnk: st.builds(
            Stratum,
            st.integers(0, mnk[0]),
            st.just(mnk[0]),
            st.integers(0, mnk[1]),
            st.just(mnk[1]),
            st.sampled_from([None, mnk[2]]),
            st.sampled_from([None, mnk[2]]),
        )
    )


@settings(max_examples=150, derandomize=True, deadline=None)
@given(st.lists(ruled_table(), min_size=1, max_size=4))
def test_the_verdict_test_equals_listing_every_split(tables: list[Stratum]) -> None:
    test = verdict_test(tables)
    upper, lower = enumerate_verdicts(tables)
    assert test.p_loss == pytest.approx(min(1.0, upper), abs=1e-12)
    assert test.p_gain == pytest.approx(min(1.0, lower), abs=1e-12)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.integers(1, 6), st.data())
def test_a_kept_verdict_cannot_offset_a_lost_one(n: int, data: st.DataObject) -> None:
    # A case that kept its verdict, with the same samples and rule on both sides, is as
    # likely to have been lost as won under the null: it adds spread to D, never a gain.
    k = data.draw(st.sampled_from([None, *range(1, n + 1)]))
    before, now = data.draw(st.integers(0, n)), data.draw(st.integers(0, n))
    case = Stratum(before, n, now, n, k, k)
    lost, won = case.flip_chances()
    assert lost == won
    if case.flip == 0 and lost == 0:  # no split changes its verdict: the p-value ignores it
        tables = [Stratum(2, 2, 0, 2)] * 3
        assert verdict_test([*tables, case]) == verdict_test(tables)


def test_large_verdict_tables_use_the_normal_form_and_agree() -> None:
    tables = [Stratum(2, 2, 0, 2)] * 6 + [Stratum(1, 2, 1, 2)] * 18
    exact, approx = verdict_test(tables), verdict_test(tables, limit=0)
    assert exact.method == EXACT_STRATIFIED and approx.method == CMH
    assert approx.p_loss == pytest.approx(exact.p_loss, abs=0.005)


def test_wilson_takes_counts_of_any_size() -> None:
    # A count past 1e308 cannot become a float; the interval is still computed (and is a
    # point: the half-width shrinks with 1/sqrt(n)).
    huge = 10**400
    assert wilson(huge // 2, huge) == pytest.approx((0.5, 0.5))
    assert wilson(0, huge) == (0.0, pytest.approx(0.0)) and wilson(huge, huge)[1] == 1.0  # type: ignore[index]
    assert interval_text(huge, huge).endswith("[100\N{EN DASH}100%]")
