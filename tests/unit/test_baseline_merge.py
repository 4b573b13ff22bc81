"""Writing the baseline merges this run into the old one: it never shrinks, prunes only on
request and only what the collected suites no longer have, and writes nothing derived from
zero observations (a canary with one side, an arm with no judged case)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.score.aggregate import Canary, aggregate, canaries
from pytest_cardprobe.score.baseline import parse_baseline
from pytest_cardprobe.score.baseline_update import baseline_document
from pytest_cardprobe.types import ProbeResult, SampleRecord


def result(
    case: str, passed: bool, *, arm: str = "prose/cold", when: str | None = None
) -> ProbeResult:
    channel, condition = arm.split("/")
    label = "ok Input.Date" if passed else "prose"
    sample = SampleRecord(0, "content", passed, label, None if passed else "declined")
    return ProbeResult(
        f"cases/s.yaml::{case}[m-{channel}-{condition}]", "s", "m", channel, condition, case,
        "passed" if passed else "failed", [sample], recorded=when,
    )  # fmt: skip


def doc(results: list[ProbeResult], old: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    data, _ = baseline_document(aggregate(results), results, canaries(results), old, **kw)
    parse_baseline(data, "new")  # what is written always reads back
    return data


def test_a_slice_keeps_every_case_that_did_not_run() -> None:
    old = doc([result("a", True), result("b", False), result("c", True)])
    new, update = baseline_document(aggregate([result("b", True)]), [result("b", True)], (), old)
    verdicts = new["arms"]["s/m/prose/cold"]["verdicts"]
    assert sorted(verdicts) == ["a", "b", "c"] and verdicts["b"]["passed"] is True
    assert new["arms"]["s/m/prose/cold"]["passed"] == 3
    assert (update.updated, update.arms, update.kept) == (1, 1, 2)
    assert update.summary == "baseline : updated 1 case(s) in 1 arm(s), kept 2"


def test_arms_that_did_not_run_are_kept_whole() -> None:
    old = doc([result("a", True), result("a", False, arm="tool/cold")])
    new = doc([result("a", False)], old)
    assert new["arms"]["s/m/tool/cold"] == old["arms"]["s/m/tool/cold"]


def test_prune_drops_only_cases_and_arms_the_suite_no_longer_has() -> None:
    old = doc([result("a", True), result("gone", False), result("a", True, arm="tool/seeded")])
    old["arms"]["other/m/prose/cold"] = dict(old["arms"]["s/m/prose/cold"], suite="other")
    shapes = {"s": (frozenset({"a"}), frozenset({("prose", "cold")}))}
    new, update = baseline_document(aggregate([]), [], (), old, shapes)
    assert sorted(new["arms"]) == ["other/m/prose/cold", "s/m/prose/cold"]
    assert sorted(new["arms"]["s/m/prose/cold"]["verdicts"]) == ["a"]
    assert new["arms"]["other/m/prose/cold"]["verdicts"].keys() == {"a", "gone"}
    assert update.pruned_cases == ["s/m/prose/cold: gone"]
    assert update.pruned_arms == ["s/m/tool/seeded"]


def test_the_recording_time_is_kept_per_case() -> None:
    new = doc([result("a", True, when="2026-12-01T10:00:00Z"), result("b", True)])
    verdicts = new["arms"]["s/m/prose/cold"]["verdicts"]
    assert verdicts["a"]["recorded"] == "2026-12-01T10:00:00Z"
    assert "recorded" not in verdicts["b"]


def test_a_canary_with_one_side_is_neither_a_verdict_nor_written() -> None:
    one_side = Canary("t", "m", no_abstained=4, no_total=4)
    assert not one_side.measured and one_side.verdict == "not measured"
    assert "not measured (needs_tool 0/0)" in one_side.line()
    both = Canary("t", "m", needs_called=0, needs_total=2, no_abstained=2, no_total=2)
    assert both.measured and both.verdict == "supportedButDeclines"
    old = {"format": 1, "arms": {}, "canary": {"t/m": "supported"}}
    data, _ = baseline_document([], [], [one_side], old)
    assert data["canary"] == {"t/m": "supported"}
    data, _ = baseline_document([], [], [both], old)
    assert data["canary"] == {"t/m": "supportedButDeclines"}


def test_an_arm_with_no_judged_case_is_not_created() -> None:
    infra = ProbeResult("x", "s", "m", "prose", "cold", "a", "infra", message="HTTP 503")
    assert doc([infra])["arms"] == {}


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.dictionaries(st.sampled_from("abcdef"), st.booleans(), min_size=1),
    st.dictionaries(st.sampled_from("abcdef"), st.booleans()),
)
def test_merging_never_loses_a_case_and_this_run_wins(
    before: dict[str, bool], now: dict[str, bool]
) -> None:
    old = doc([result(c, p) for c, p in before.items()])
    new = doc([result(c, p) for c, p in now.items()], old)
    verdicts = new["arms"]["s/m/prose/cold"]["verdicts"]
    assert set(verdicts) == set(before) | set(now)
    for case, entry in verdicts.items():
        assert entry["passed"] is now.get(case, before.get(case))
