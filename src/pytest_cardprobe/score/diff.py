"""Compare two runs from their JSON reports (``--cardprobe-json``): the older one is the baseline.

Pure: documents arrive decoded; reading files is the command line's job (``cli/diff.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_cardprobe.score.aggregate import ArmScore, aggregate
from pytest_cardprobe.score.baseline import Baseline, CaseVerdict
from pytest_cardprobe.score.drafts import split_drafts
from pytest_cardprobe.score.gate import Gate, GateSettings, decide
from pytest_cardprobe.score.resultread import ReportError, read_result
from pytest_cardprobe.score.rule import label_of, sample_counts
from pytest_cardprobe.types import VERDICT_STATUSES, ProbeResult, Status

__all__ = ["ReportError", "baseline_of", "compare_runs", "results_of"]


def results_of(doc: object, source: str) -> list[ProbeResult]:
    """The probe results of a JSON report (fixture-driven tests, which have no arm, and
    unreviewed drafted cases, which no gate reads, left out); every test entry is checked
    first (``score/resultread.py``), so a field of the wrong type or a number out of bounds
    is a :class:`ReportError` naming ``source`` and the key."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("tests"), list):
        raise ReportError(f"{source}: key 'tests' is missing; is it a --cardprobe-json report?")
    results = [read_result(test, f"{source}: tests[{i}]") for i, test in enumerate(doc["tests"])]
    return split_drafts(result for result in results if result.suite)[0]


def baseline_of(results: Sequence[ProbeResult]) -> Baseline:
    """An older run's verdicts as a baseline (judged cases only)."""
    arms: dict[str, dict[str, CaseVerdict]] = {}
    for r in results:
        if r.status not in VERDICT_STATUSES:
            continue
        routed = [s.route for s in r.samples if s.route]
        passed, judged = sample_counts(r)
        arms.setdefault(r.arm_id, {})[r.case] = CaseVerdict(
            passed=r.status == Status.PASSED,
            label=label_of(r),
            calls=len(routed),
            tool_calls=routed.count("tool_calls"),
            samples_passed=passed if judged else None,
            samples=judged or None,
            at_least=r.at_least,
        )
    return Baseline(arms)


def compare_runs(
    old: Mapping[str, Any], new: Mapping[str, Any], settings: GateSettings, names: tuple[str, str]
) -> tuple[list[ArmScore], Gate]:
    """The newer run's arms and the gate between the two runs."""
    before = results_of(old, names[0])
    after = results_of(new, names[1])
    arms = aggregate(after)
    return arms, decide(arms, after, baseline_of(before), settings)
