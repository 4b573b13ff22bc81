"""k of n: the case rule, the counts the baseline keeps, old baselines, and both gate modes
on hand-built results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe.glue.failure import headline
from pytest_cardprobe.score.aggregate import aggregate
from pytest_cardprobe.score.baseline import BaselineError, parse_baseline
from pytest_cardprobe.score.baseline_update import baseline_document
from pytest_cardprobe.score.gate import GateSettings, decide
from pytest_cardprobe.score.report import scoreboard_lines
from pytest_cardprobe.score.rule import effective_at_least, label_of, settle
from pytest_cardprobe.suite.loader import SuiteError, load_suite
from pytest_cardprobe.types import ProbeResult, SampleRecord


def result(case: str, passes: list[bool], at_least: int | None = None) -> ProbeResult:
    samples = [
        SampleRecord(
            i, "content", ok, "ok Input.Date" if ok else "prose", None if ok else "declined"
        )
        for i, ok in enumerate(passes)
    ]
    out = ProbeResult(
        f"s::{case}[m-prose-cold]", "s", "m", "prose", "cold", case, "passed", samples
    )
    out.status = "passed" if all(passes) else "failed"  # what the runtime decides
    return settle(out, at_least)


@pytest.mark.parametrize(
    ("passes", "k", "status"),
    [
        ([True, False, True], 2, "passed"),
        ([True, False, False], 2, "failed"),
        ([True, False, True], None, "failed"),  # no rule: every sample must pass
        ([True, True, True], None, "passed"),
        ([False, False, True], 1, "passed"),
        ([False, False, False], 1, "failed"),
    ],
)
def test_a_case_passes_when_k_of_its_n_samples_pass(
    passes: list[bool], k: int | None, status: str
) -> None:
    assert result("date", passes, k).status == status


def test_the_rule_is_capped_at_the_samples_asked_and_leaves_infra_alone() -> None:
    assert effective_at_least(2, 3) == 2
    assert effective_at_least(3, 3) is None and effective_at_least(5, 1) is None
    assert effective_at_least(None, 4) is None
    infra = ProbeResult("s::x", "s", "m", "prose", "cold", "x", "infra", [])
    assert settle(infra, 1).status == "infra"


def test_the_headline_says_a_status_once() -> None:
    """An infra result's message is its sample's label, which already says ``infra:``."""
    infra = ProbeResult(
        "s::x", "s", "m", "prose", "cold", "x", "infra", [], message="infra: timed out"
    )
    assert headline(infra) == "infra: timed out"
    error = ProbeResult(
        "s::x", "s", "m", "prose", "cold", "x", "error", [], message="model 'm' not found"
    )
    assert headline(error) == "error: model 'm' not found"


def test_a_passing_k_of_n_case_is_known_by_a_passing_label() -> None:
    found = result("date", [False, True, True], 2)
    assert found.status == "passed" and label_of(found) == "ok Input.Date"
    failed = result("date", [True, False, False], 2)
    assert label_of(failed) == "prose"
    assert "2 of 3 samples failed (at least 2 of 3 must pass)" in headline(failed)


def test_pass_k_and_intervals_of_an_arm_with_a_rule() -> None:
    results = [
        result("a", [True, True, True], 2),
        result("b", [True, False, True], 2),
        result("c", [False, False, True], 2),
    ]
    (arm,) = aggregate(results)
    assert (arm.passed, arm.all_passed, arm.samples_passed, arm.samples_judged) == (2, 1, 6, 9)
    shares = arm.to_dict()["intervals"]
    assert shares["cases"] == {"count": 2, "of": 3, "rate": 0.6667, "low": 0.2077, "high": 0.9385}
    assert shares["pass_all"]["count"] == 1 and shares["samples"]["of"] == 9
    header = scoreboard_lines([arm], None)[0].split()
    assert header[4:7] == ["passed", "samples", "pass^k"]
    # The rule is written with the counts, only where it asks less than every sample.
    doc, _ = baseline_document([arm], results)
    verdicts = doc["arms"]["s/m/prose/cold"]["verdicts"]
    assert verdicts["b"] == {
        "passed": True, "label": "ok Input.Date", "calls": 3, "tool_calls": 0,
        "samples_passed": 2, "samples": 3, "at_least": 2,
    }  # fmt: skip
    parsed = parse_baseline(doc, "new").arms["s/m/prose/cold"]
    assert parsed["b"].counts == (2, 3) and parsed["b"].unstable and parsed["b"].at_least == 2


OLD = {
    "format": 1,
    "arms": {
        "s/m/prose/cold": {
            "suite": "s", "model": "m", "channel": "prose", "condition": "cold",
            "verdicts": {
                c: {"passed": True, "label": "ok Input.Date"} for c in ("a", "b", "c", "d")
            },
        }
    },
}  # fmt: skip


def test_an_old_baseline_reads_as_one_sample_per_case_that_must_pass() -> None:
    base = parse_baseline(OLD, "old")
    verdict = base.arms["s/m/prose/cold"]["a"]
    assert (verdict.samples_passed, verdict.samples, verdict.at_least) == (None, None, None)
    assert verdict.counts == (1, 1) and not verdict.unstable
    # Three of its passing cases fail twice now: per case C(1,1) C(2,0) / C(3,1) = 1/3.
    now = [result(c, [False, False]) for c in ("a", "b", "c")] + [result("d", [True, True])]
    gate = decide(aggregate(now), now, base, GateSettings(mode="significance"))
    comparison = gate.arms["s/m/prose/cold"]
    assert comparison.test is not None
    assert comparison.test.p_loss == pytest.approx(1 / 27)
    assert comparison.unstable == []  # unknown in the old file, and stable now
    assert gate.decision == "fail"


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"samples_passed": 3, "samples": 2},
         "verdicts.a.samples_passed must be an integer from 0 to samples (2)"),
        ({"samples_passed": 1}, "verdicts.a.samples_passed must be given together with samples"),
        ({"samples_passed": 0, "samples": 0}, "verdicts.a.samples must be an integer >= 1"),
        ({"samples_passed": True, "samples": 2}, "verdicts.a.samples_passed must be an integer"),
        ({"samples_passed": 1, "samples": 2, "at_least": 3},
         "verdicts.a.at_least must be an integer from 1 to samples (2)"),
        ({"at_least": "two"}, "verdicts.a.at_least must be an integer from 1 to the sample count"),
    ],
)  # fmt: skip
def test_bad_sample_counts_name_the_key(entry: dict[str, Any], said: str) -> None:
    data = json.loads(json.dumps(OLD))
    data["arms"]["s/m/prose/cold"]["verdicts"]["a"].update(entry)
    with pytest.raises(BaselineError) as info:
        parse_baseline(data, "baseline b.json")
    assert said in str(info.value) and "b.json: key arms.s/m/prose/cold" in str(info.value)


def unstable_drop() -> tuple[list[ProbeResult], list[ProbeResult]]:
    before = [result(c, [True, True]) for c in "abcdef"] + [result("g", [False, False])]
    after = [result(c, [True, False]) for c in "abc"] + before[3:]
    return before, after


def test_both_modes_read_the_same_figures() -> None:
    before, after = unstable_drop()
    doc, _ = baseline_document(aggregate(before), before)
    base = parse_baseline(doc, "b")
    arms = aggregate(after)
    floor = decide(arms, after, base, GateSettings())
    sig = decide(arms, after, base, GateSettings(mode="significance"))
    assert floor.decision == "fail" and sig.decision == "pass"
    for gate in (floor, sig):
        c = gate.arms["s/m/prose/cold"]
        assert c.test is not None and c.test.p_loss == pytest.approx(0.125)
        assert c.words == {"floor": "regression", "significance": "warning"}
        assert [u.case for u in c.unstable] == ["a", "b", "c"]
    assert floor.other_decision == "pass" and sig.other_decision == "fail"
    assert floor.suggestions == [
        "s/m/prose/cold: 3 of the 3 lost case(s) are unstable (samples disagreed) and the loss "
        "is not significant (p = 0.125); --cardprobe-noise-floor 3 would absorb them"
    ]
    assert sig.suggestions == []  # the floor is not what decides there
    assert floor.to_dict()["arms"]["s/m/prose/cold"]["unstable"][0] == {
        "case": "a", "now": [1, 2], "baseline": [2, 2],
    }  # fmt: skip
    # A floor that absorbs them says nothing more; a significance gain needs its p.
    assert decide(arms, after, base, GateSettings(noise_floor=3)).suggestions == []
    back = parse_baseline(baseline_document(arms, after)[0], "b")
    gained = decide(aggregate(before), before, back, GateSettings(mode="significance"))
    assert gained.arms["s/m/prose/cold"].word == "same"  # 3 cases back, p_gain = 0.125


def test_significant_adoption_drop_is_a_regression() -> None:
    def tool(case: str, routes: list[str]) -> ProbeResult:
        samples = [SampleRecord(i, r, True, "ok Input.Date", None) for i, r in enumerate(routes)]
        return ProbeResult(f"s::{case}", "s", "m", "tool", "cold", case, "passed", samples)

    before = [tool(c, ["tool_calls"] * 4) for c in "abcdef"]
    after = [tool(c, ["content"] * 4) for c in "abc"] + before[3:]
    doc, _ = baseline_document(aggregate(before), before)
    base = parse_baseline(doc, "b")
    arms = aggregate(after)
    sig = decide(arms, after, base, GateSettings(mode="significance"))
    c = sig.arms["s/m/tool/cold"]
    assert c.passed_delta == 0 and c.adoption_test is not None
    assert c.adoption_test.p_loss == pytest.approx((1 / 70) ** 3)  # C(4,4) C(4,0) / C(8,4)
    assert sig.decision == "fail"
    assert any("adoption 100% -> 50%, significant" in r for r in sig.regressions)
    # The floor allows 3 of 6 cases' worth (50 points): exactly the drop, so it passes.
    floor = decide(arms, after, base, GateSettings(noise_floor=3))
    assert floor.decision == "pass" and floor.other_decision == "fail"


CALL_SUITE = """\
cardprobe: 1
judge: call
samples: 3
at_least: 2
conditions: [cold]
tools:
  - type: function
    function:
      name: read_file
      description: Read a file.
      parameters:
        type: object
        properties: {path: {type: string, description: The path.}}
cases:
  - id: readme
    prompt: Show me README.md.
    expect: {call: read_file}
  - id: strict
    prompt: Show me setup.py.
    expect: {call: read_file}
    at_least: AT
"""


def test_call_suites_read_the_rule_for_the_suite_and_each_case(tmp_path: Path) -> None:
    path = tmp_path / "tools.yaml"
    path.write_text(CALL_SUITE.replace("AT", "3"))
    suite = load_suite(path)
    assert suite.at_least == 2 and [c.at_least for c in suite.cases] == [None, 3]
    path.write_text(CALL_SUITE.replace("AT", "4"))
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert str(info.value).startswith(f"{path}:21: cases[1].at_least: case 'strict': at_least 4")


def test_a_small_p_without_a_net_loss_is_not_a_regression() -> None:
    # The baseline asked two samples (both must pass) and 20 cases passed one: they failed.
    # This run asks one sample and it fails. Pooled, each case has 1 pass in 3 samples; the
    # baseline's two hold it with chance C(1,1) C(2,1) / C(3,2) = 2/3, else the run's one
    # sample passes and the case is won. None was won: every verdict held, yet "no case
    # won" is unlikely under the easier rule, P(D >= 0) = (2/3)^20.
    before = [result(f"c{i}", [True, False]) for i in range(20)]
    after = [result(f"c{i}", [False]) for i in range(20)]
    base = parse_baseline(baseline_document(aggregate(before), before)[0], "b")
    gate = decide(aggregate(after), after, base, GateSettings(mode="significance"))
    c = gate.arms["s/m/prose/cold"]
    assert c.passed_delta == 0 and not c.lost
    assert c.test is not None and c.test.p_loss == pytest.approx((2 / 3) ** 20)
    assert c.test.p_loss < 0.05
    # Significance needs a net loss as well as a small p: nothing was lost, so nothing failed.
    assert c.words == {"floor": "same", "significance": "same"}
    assert gate.decision == "pass" and gate.regressions == []


def test_no_floor_is_suggested_where_nothing_unstable_was_lost() -> None:
    # Three cases a coin flip on both sides (1/2 -> 1/2), nothing lost: the gate passes and
    # has nothing for a floor to absorb.
    same = [result(c, [True, False]) for c in "abc"] + [result("d", [True, True])]
    base = parse_baseline(baseline_document(aggregate(same), same)[0], "b")
    gate = decide(aggregate(same), same, base, GateSettings())
    assert len(gate.arms["s/m/prose/cold"].unstable) == 3
    assert gate.decision == "pass" and gate.suggestions == []
    # Two stable cases and one unstable one lost, floor 1: only one of the losses is noise,
    # which the floor already absorbs.
    before = [result(c, [True, True]) for c in "abc"] + [result("d", [True, True])]
    after = [result("a", [False, False]), result("b", [False, False]), result("c", [True, False])]
    base = parse_baseline(baseline_document(aggregate(before), before)[0], "b")
    gate = decide(aggregate(after), after, base, GateSettings())
    assert gate.decision == "fail" and gate.suggestions == []
