"""The JSON report (``--cardprobe-json``): the run's settings, arms, tests and the gate."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pytest_cardprobe.score.aggregate import ArmScore
from pytest_cardprobe.score.forced import pairs
from pytest_cardprobe.score.gate import ArmComparison, Gate
from pytest_cardprobe.score.summary import Block


def coverage_of(c: ArmComparison | None, arm: ArmScore) -> dict[str, Any]:
    """An arm's coverage for the JSON report: cases that ran, cases its baseline has."""
    return {
        "cases_run": len(arm.cases),
        "cases_in_baseline": None if c is None else c.cases_in_baseline,
    }


def json_report(
    arms: Sequence[ArmScore],
    tests: Sequence[dict[str, Any]],
    gate: Gate | None,
    run: dict[str, Any] | None = None,
    blocks: Sequence[Block] = (),
) -> str:
    """The JSON report: the run's settings, arms, every test with every sample, the gate,
    and the summary blocks (``summary``: each block's data under its key)."""
    found = gate.arms if gate else {}
    data = {
        "summary": {b.key: b.data for b in blocks},
        "run": run or {},
        "arms": [{**a.to_dict(), **coverage_of(found.get(a.id), a)} for a in arms],
        "tests": sorted(tests, key=lambda t: t["nodeid"]),
        # Call suites run under the required condition: offered against forced, per model.
        "offered_vs_forced": [p.to_dict() for p in pairs(arms)],
        "gate": None if gate is None else gate.to_dict(),
    }
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
