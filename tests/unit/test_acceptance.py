"""Acceptances (score/acceptance.py, score/accepting.py) and the rest of a gate against a
base: what is recorded, what applies for which base, what differs from the committed
baseline (score/accepting.uncommitted) and the baseline's diff in words (score/basediff.py)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_cardprobe.score.acceptance import Acceptance, parse_acceptances
from pytest_cardprobe.score.accepting import applied, carried, pending, uncommitted
from pytest_cardprobe.score.aggregate import aggregate, canaries
from pytest_cardprobe.score.basediff import baseline_diff
from pytest_cardprobe.score.baseline import Baseline, BaselineError, parse_baseline
from pytest_cardprobe.score.baseline_update import baseline_document, route_counts
from pytest_cardprobe.score.compare import GateSettings
from pytest_cardprobe.score.gate import decide
from pytest_cardprobe.types import ProbeResult, SampleRecord

ARM = "s/m/prose/cold"
A, B = "a" * 40, "b" * 40


def result(case: str, passed: bool, label: str | None = None) -> ProbeResult:
    label = label or ("ok Input.Date" if passed else "prose")
    samples = [
        SampleRecord(i, "content", passed, label, None if passed else "declined") for i in (0, 1)
    ]
    return ProbeResult(
        f"cases/s.yaml::{case}[m-prose-cold]", "s", "m", "prose", "cold", case,
        "passed" if passed else "failed", samples,
    )  # fmt: skip


def baseline(results: list[ProbeResult], **extra: Any) -> Baseline:
    data, _ = baseline_document(aggregate(results), results, canaries(results))
    return parse_baseline({**data, **extra}, "b")


MAIN = [result("a", True), result("b", True), result("c", True), result("d", False)]
NOW = [result("a", False), result("b", False), result("c", True), result("d", False)]


def gate_of(results: list[ProbeResult], base: Baseline) -> Any:
    return decide(aggregate(results), results, base, GateSettings(), canaries(results))


def test_an_acceptance_round_trips_through_the_baseline_file() -> None:
    made = Acceptance(
        "flip", ARM, "a", "ok Input.Date", "prose", "a shorter prompt", A, "origin/main"
    )
    entry = made.to_dict()
    assert entry == {
        "kind": "flip", "arm": ARM, "case": "a", "before": "ok Input.Date", "after": "prose",
        "reason": "a shorter prompt", "base": A, "base_ref": "origin/main",
    }  # fmt: skip
    assert parse_acceptances([entry]) == [made]
    assert str(made) == f"{ARM}: a (ok Input.Date -> prose)"
    assert baseline(MAIN, accepted=[entry]).accepted == [made]


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ("x", "accepted[0] must be a mapping"),
        ({"kind": "vibes"}, "accepted[0].kind must be one of flip, canary, adoption"),
        ({"kind": "flip", "arm": ARM, "case": "a", "before": "x", "after": "y", "reason": ""},
         "accepted[0].reason must be a non-empty string"),
        ({"kind": "flip", "arm": ARM, "case": "a", "before": "x", "after": "y", "reason": "r",
          "base": "main"}, "accepted[0].base must be a full commit hash or null"),
        ({"kind": "canary", "canary": "s/m", "before": "x", "after": "y", "reason": "r" * 1001},
         "accepted[0].reason must be a non-empty string (at most 1,000 characters)"),
        ({"kind": "flip", "arm": ARM, "case": "a", "before": "x", "after": "y",
          "reason": "fine \u202eenif"}, "accepted[0].reason must be one line of printable text"),
        ({"kind": "flip", "arm": ARM, "case": "a", "before": "x", "after": "y", "reason": "r",
          "base_ref": "origin/main\x1b[2J"}, "accepted[0].base_ref must be one line of printable"),
    ],
)  # fmt: skip
def test_a_hostile_acceptance_is_a_usage_error_naming_the_key(entry: Any, words: str) -> None:
    with pytest.raises(BaselineError) as raised:
        baseline(MAIN, accepted=[entry])
    assert f"b: key {words}" in str(raised.value)
    with pytest.raises(BaselineError, match="key accepted must be a list"):
        baseline(MAIN, accepted={"a": 1})


def test_pending_lists_every_regression_keyed_exactly() -> None:
    gate = gate_of(NOW, baseline(MAIN))
    assert [str(a) for a in pending(gate)] == [
        f"{ARM}: a (ok Input.Date -> prose)",
        f"{ARM}: b (ok Input.Date -> prose)",
    ]
    assert gate.decision == "fail"


def test_acceptances_for_this_base_apply_and_others_say_why_not() -> None:
    base = baseline(MAIN)
    gate = gate_of(NOW, base)
    arms = aggregate(NOW)
    mine = [Acceptance(**{**vars(a), "reason": "r", "base": A}) for a in pending(gate)]
    adjusted, used, notes = applied(gate, base, mine, A, arms, route_counts(NOW))
    assert used == mine and notes == []
    again = decide(arms, NOW, adjusted, GateSettings(), ())
    assert again.decision == "pass" and again.regressions == []
    # The same acceptances against another base apply to nothing, and say so.
    _, used, notes = applied(gate, base, mine, B, arms, route_counts(NOW))
    assert used == []
    assert notes[0] == (
        f"{ARM}: a (ok Input.Date -> prose): accepted against base aaaaaaaaaaaa, not against "
        "base bbbbbbbbbbbb; an acceptance holds for the base it was made against: accept it "
        "again against this one"
    )
    # Other labels are another regression: the old acceptance does not cover it.
    other = [Acceptance(**{**vars(mine[0]), "after": "broken: invalid JSON"})]
    _, used, notes = applied(gate, base, other, A, arms, route_counts(NOW))
    assert used == [] and "the acceptance says ok Input.Date -> broken: invalid JSON" in notes[0]


def test_an_update_carries_the_acceptances_it_does_not_remake() -> None:
    flip_a = Acceptance("flip", ARM, "a", "ok Input.Date", "prose", "r", A, "origin/main")
    flip_c = Acceptance("flip", ARM, "c", "ok Input.Date", "prose", "r", A, "origin/main")
    elsewhere = Acceptance("flip", "s/m/tool/cold", "a", "ok Input.Date", "prose", "r", A)
    earlier = [flip_a, flip_c, elsewhere]
    arms = aggregate(NOW)  # a fails with "prose" still; c passes again
    # Without a base ref: kept while the run still shows the regression or did not judge it.
    assert carried(earlier, [], arms, (), gated=False) == [flip_a, elsewhere]
    # A partial run (only b ran) keeps every acceptance about what it did not judge.
    assert carried(earlier, [], aggregate(NOW[1:2]), (), gated=False) == earlier
    assert carried(earlier, [], aggregate(NOW[1:2]), (), gated=True) == earlier
    # Against a base, what it judged and did not re-make no longer holds; the re-made stay.
    assert carried(earlier, [], arms, (), gated=True) == [elsewhere]
    assert carried(earlier, [flip_a], arms, (), gated=True) == [elsewhere]


def test_uncommitted_names_every_difference_from_the_committed_baseline() -> None:
    arms = aggregate(NOW)
    assert uncommitted(arms, baseline(NOW)) == []
    said = uncommitted(arms, baseline(MAIN[:3]))
    assert said[0] == (
        f"{ARM}: a: the committed baseline says passed 2/2 (ok Input.Date), this replay failed "
        "0/2 (prose); run --cardprobe-update-baseline and commit the baseline with the recordings"
    )
    assert said[-1].startswith(f"{ARM}: d is not in the committed baseline (now failed 0/2")
    assert uncommitted(arms, None) == [
        "there is no committed baseline; run --cardprobe-update-baseline and commit the "
        "baseline with the recordings"
    ]


def test_the_baseline_diff_reads_in_words() -> None:
    base = baseline(MAIN)
    own = baseline(
        [*NOW[:3], result("d", True, "ok Input.Number"), result("e", False)],
        accepted=[
            Acceptance("flip", ARM, "a", "ok Input.Date", "prose", "r", A).to_dict(),
            Acceptance("flip", ARM, "b", "ok Input.Date", "prose", "r", A).to_dict(),
        ],
    )
    assert baseline_diff(base, own) == [
        f"{ARM}: passed -> failed: a (ok Input.Date -> prose), b (ok Input.Date -> prose); "
        "failed -> passed: d (prose -> ok Input.Number); 1 case(s) added (e)",
        "accepts 2 regression(s) against base aaaaaaaaaaaa",
    ]
    assert baseline_diff(base, base) == []
