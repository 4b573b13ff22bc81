"""Controller-side session end: merge results, score arms, gate, write reports, set exit status."""

from __future__ import annotations

import os
from typing import Any

import pytest

from pytest_cardprobe.files import write_atomically
from pytest_cardprobe.score.aggregate import aggregate
from pytest_cardprobe.score.gate import (
    BaselineError,
    decide,
    load_baseline,
    write_baseline,
)
from pytest_cardprobe.score.report import json_report, markdown, scoreboard_lines
from pytest_cardprobe.state import CardprobeState

GATE_OWNED = ("failed", "infra")  # model behaviour and unscored calls: the gate judges these


def finish(session: pytest.Session, state: CardprobeState) -> None:
    """Decide the run: the gate owns probe failures; everything else fails as usual."""
    config = session.config
    settings = state.settings
    suite_results = [r for r in state.results if r.suite]
    arms = aggregate(suite_results)
    lines: list[str] = []
    gate: dict[str, Any] | None = None
    if arms:
        baseline_path = settings.baseline
        if settings.update_baseline:
            write_baseline(baseline_path, arms, suite_results)
            gate = {
                "decision": "updated",
                "summary": f"baseline written to {baseline_path.name} for {len(arms)} arm(s)",
                "noise_floor": settings.gate.noise_floor,
                "regressions": [],
                "warnings": [],
                "gains": [],
                "new": [],
                "unscored": sum(a.unscored for a in arms),
                "arms": {},
            }
        else:
            try:
                baseline = load_baseline(baseline_path)
            except BaselineError as exc:
                lines.append(f"ERROR: {exc}")
                baseline = None
                state.other_failures.append(str(exc))
            gate = decide(arms, suite_results, baseline, settings.gate)
        lines.extend(scoreboard_lines(arms, gate.get("arms")))
        lines.append("")
        lines.append(f"gate: {gate['decision']} — {gate['summary']}")
        for title, key in (
            ("REGRESSION", "regressions"),
            ("warning", "warnings"),
            ("gain", "gains"),
        ):
            lines.extend(f"  {title}: {item}" for item in gate.get(key) or [])
        if gate.get("new") and baseline_path.exists():
            lines.extend(f"  new: {item}" for item in gate["new"])
    for crash in state.crashed_workers:
        lines.append(f"ERROR: xdist worker crashed: {crash} — its tests have no verdict")

    errors = [r for r in state.results if r.suite and r.status == "error"]
    fixture_failures = [r for r in state.results if not r.suite and r.status == "failed"]
    gate_failed = gate is not None and gate["decision"] in ("fail", "inconclusive")
    only_gate_owned = not (
        state.other_failures or errors or fixture_failures or state.crashed_workers
    )
    if session.exitstatus == pytest.ExitCode.TESTS_FAILED and only_gate_owned and not gate_failed:
        owned = sum(1 for r in suite_results if r.status in GATE_OWNED)
        if gate is not None and owned:
            lines.append(
                f"{owned} probe test(s) failed as model behaviour; the gate decided "
                f"{gate['decision']}, so the run exits 0"
            )
            session.exitstatus = pytest.ExitCode.OK
    elif session.exitstatus == pytest.ExitCode.OK and (gate_failed or state.crashed_workers):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if errors:
        lines.append(f"{len(errors)} probe test(s) errored (not recorded, stale or server error)")
    state.summary = lines

    tests = [r.to_dict() for r in state.results]
    if settings.json_report:
        write_atomically(settings.json_report, json_report(arms, tests, gate))
    if arms and (settings.md_report or os.environ.get("GITHUB_STEP_SUMMARY")):
        text = markdown(arms, gate)
        if settings.md_report:
            write_atomically(settings.md_report, text)
        step = os.environ.get("GITHUB_STEP_SUMMARY")
        if step:
            with open(step, "a", encoding="utf-8") as handle:
                handle.write(text)
    report = {"arms": [a.to_dict() for a in arms], "gate": gate}
    state.report = report
    config.hook.pytest_cardprobe_report(report=report, config=config)
