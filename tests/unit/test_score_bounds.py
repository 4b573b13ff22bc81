"""The bounds of what the gate reads (``score/bounds.py``): baseline counts past a billion
are baseline errors, a baseline at the bound is gated in time, server figures no reply has
are left out of the timing.

Each test here pins an example a fuzz test (tests/fuzz) found; each failed before the fix
its docstring names."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from probing import (
    tool_results,
)


def test_a_baseline_count_of_400_digits_is_a_baseline_error() -> None:
    """Found while pinning the two above (the baseline fuzz test reads the same counts): a
    baseline's ``tool_calls`` of 400 digits was an ``integer >= 0``, so ``parse_baseline``
    took it, and the gate's adoption (``tool_calls / calls``) raised OverflowError at the
    session end, after every test ran. Fixed: counts are integers from 0 to a billion
    (``score/bounds.py``), and ``tool_calls`` at most ``calls``."""
    from pytest_cardprobe.score.aggregate import aggregate
    from pytest_cardprobe.score.baseline import BaselineError, parse_baseline
    from pytest_cardprobe.score.gate import GateSettings, decide

    results = tool_results()
    arm = results[0].arm_id
    document = {
        "format": 1,
        "arms": {arm: {"verdicts": {"date": {"passed": False, "calls": 1, "tool_calls": 10**400}}}},
    }
    try:
        baseline = parse_baseline(document, "baseline b.json")
    except BaselineError as exc:
        assert f"baseline b.json: key arms.{arm}.verdicts.date.tool_calls must be" in str(exc)
        return
    decide(aggregate(results), results, baseline, GateSettings())
    raise AssertionError("a count no float can hold was taken, and the gate did not mind")


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"calls": 10**9 + 1},
         "verdicts.date.calls must be an integer >= 0 (at most 1,000,000,000)"),
        ({"calls": 1, "tool_calls": 2},
         "verdicts.date.tool_calls must be an integer from 0 to calls (1)"),
        ({"samples_passed": 1, "samples": 10**400},
         "verdicts.date.samples must be an integer >= 1 (at most 1,000,000,000)"),
        ({"at_least": 10**400},
         "verdicts.date.at_least must be an integer from 1 to the sample count (1,000,000,000)"),
    ],
)  # fmt: skip
def test_a_baseline_count_out_of_bounds_is_a_baseline_error(entry: Any, said: str) -> None:
    """The bound is a billion (``score/bounds.py``); ``tool_calls`` above ``calls`` made an
    adoption above 100 % and a paired test whose p-value was 0."""
    from pytest_cardprobe.score.baseline import BaselineError, parse_baseline

    document = {"format": 1, "arms": {"a": {"verdicts": {"date": {"passed": True, **entry}}}}}
    with pytest.raises(BaselineError) as caught:
        parse_baseline(document, "baseline b.json")
    assert said in str(caught.value)


def test_a_baseline_at_the_bound_is_gated_in_time() -> None:
    """A case of a billion samples in the baseline (the bound) against two samples now: the
    paired test's binomials have the run's two samples as their small side, so the gate
    decides without enumerating a billion terms (the test would not end otherwise)."""
    from pytest_cardprobe.score.aggregate import aggregate
    from pytest_cardprobe.score.baseline import parse_baseline
    from pytest_cardprobe.score.gate import GateSettings, decide

    results = tool_results()
    first = results[0].samples[0]
    results[0].samples.append(dataclasses.replace(first, index=1, passed=not first.passed))
    big = 10**9
    entry = {"passed": True, "calls": big, "tool_calls": big // 2, "samples_passed": big // 2}
    document = {
        "format": 1,
        "arms": {results[0].arm_id: {"verdicts": {"date": {**entry, "samples": big}}}},
    }
    gate = decide(aggregate(results), results, parse_baseline(document, "b"), GateSettings())
    compared = gate.arms[results[0].arm_id]
    assert compared.compared == 1 and compared.test is not None
    assert 0 <= compared.test.p_loss <= 1


def test_server_figures_a_float_holds_but_no_reply_has_do_not_crash_the_session_end() -> None:
    """Found while fixing the above: two samples whose ``eval_count`` is 1.7e308 (finite, so
    the wire keeps it) summed to infinity, and ``int(inf)`` in the arm's timing raised
    OverflowError after every test ran; a subnormal ``eval_duration`` made the token rate
    infinite, which no JSON report can hold. Figures outside 0..1e12 are left out of the
    arm's timing (``score/bounds.figure``)."""
    from pytest_cardprobe.score.aggregate import aggregate
    from pytest_cardprobe.score.gate import GateSettings, decide
    from pytest_cardprobe.score.jsonreport import json_report

    results = tool_results()
    sample = results[0].samples[0]
    results[0].samples = [sample, sample]
    sample.figures = {
        "prompt_tokens": 1.7e308,
        "total_s": 1.7e308,
        "generated_tokens": 10,
        "generate_s": 5e-324,
    }
    arms = aggregate(results)
    report = json.loads(
        json_report(
            arms, [r.to_dict() for r in results], decide(arms, results, None, GateSettings())
        )
    )
    timing = report["arms"][0]["timing"]
    assert timing["prompt_tokens"] == 0 and timing["latency_median_s"] is None, timing
    assert timing["generated_tokens"] == 20, timing
    assert timing["tokens_per_s"] is None, timing
