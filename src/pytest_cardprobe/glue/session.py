"""Controller-side session end: score arms, gate, write reports, set the exit status.

The steps are separate functions so each reads on its own: :func:`decide_gate` (baseline
I/O happens here, decisions in ``score/gate.py``), :func:`exit_status` (the one rule),
:func:`write_reports`. Rendering lives in ``score/report.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_cardprobe.files import shown, write_atomically
from pytest_cardprobe.glue.hints import no_suite_message
from pytest_cardprobe.glue.state import CardprobeState
from pytest_cardprobe.score import gate as gating
from pytest_cardprobe.score.aggregate import ArmScore, aggregate, canaries
from pytest_cardprobe.score.baseline import BaselineUpdate, write_baseline
from pytest_cardprobe.score.gate import Gate
from pytest_cardprobe.score.jsonreport import json_report
from pytest_cardprobe.score.markdown import markdown
from pytest_cardprobe.score.outcome import FAILED, FLIP
from pytest_cardprobe.types import ProbeResult
from pytest_cardprobe.wire.redact import redact_url


@dataclass(frozen=True)
class Failures:
    """What failed in the run, sorted by whether the gate may forgive it."""

    flips: int  # probe tests that passed in the baseline and fail now
    unbaselined: int  # failing probe tests with no baseline verdict
    errors: int  # stale, missing or corrupt cassettes; unknown models; infra
    others: int  # ordinary tests, setup errors, fixture-driven probes
    crashed: int  # xdist workers that died

    def forgivable(self, updating: bool) -> bool:
        """Every failure is a flip (or, while recording a baseline, any model failure)."""
        if self.errors or self.others or self.crashed:
            return False
        return not self.unbaselined or updating


def tally(state: CardprobeState) -> Failures:
    """Sort the run's failures (from results riding on reports, and reports without one)."""
    suite = [r for r in state.results if r.suite]
    return Failures(
        flips=sum(r.outcome == FLIP for r in suite),
        unbaselined=sum(r.outcome == FAILED for r in suite),
        errors=sum(r.status in ("error", "infra") for r in suite),
        others=len(state.other_failures)
        + sum(not r.suite and r.status == "failed" for r in state.results),
        crashed=len(state.crashed_workers),
    )


def exit_status(status: int, gate: Gate | None, failures: Failures, updating: bool) -> int:
    """pytest's own status with the gate added.

    A failing gate or a crashed worker turns 0 into 1. A failed run is lowered to 0 only
    when the gate passed and every failure is a flip (so within the noise floor), or a
    model failure that ``--cardprobe-update-baseline`` is recording.
    """
    if status == pytest.ExitCode.OK and ((gate is not None and gate.failed) or failures.crashed):
        return pytest.ExitCode.TESTS_FAILED
    if (
        status == pytest.ExitCode.TESTS_FAILED
        and gate is not None
        and not gate.failed
        and failures.forgivable(updating)
    ):
        return pytest.ExitCode.OK
    return status


def written(what: str, path: Path, write: Callable[[], None]) -> str | None:
    """Run ``write``; the one-line reason when it failed, else None.

    Outputs were checked before the first test, but a path can change while a long live run
    goes on; then the user gets one line, not a traceback, and the other outputs still land.
    """
    try:
        write()
    except OSError as exc:
        return f"cannot write the {what} to {path}: {exc.strerror or exc}"
    return None


def decide_gate(
    state: CardprobeState,
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    problems: list[str] | None = None,
) -> Gate | None:
    """Merge this run into the baseline (``--cardprobe-update-baseline``) or compare with the one
    loaded at start.

    A baseline that cannot be written is added to ``problems`` (when given; else raised).
    ``--prune-baseline`` also drops what the suites this run collected no longer have.
    """
    settings = state.settings
    if not arms:
        return None
    found = canaries(results)
    if settings.update_baseline:
        path = settings.baseline
        prune = state.suite_shapes if settings.prune_baseline else None
        done: list[BaselineUpdate] = []

        def write() -> None:
            done.append(write_baseline(path, arms, results, found, prune))

        if problems is None:
            write()
        else:
            failed = written("baseline", path, write)
            if failed:
                problems.append(failed)
        update = done[0] if done else BaselineUpdate(shown(path))
        update.path = shown(path)
        return gating.updated(arms, settings.gate.noise_floor, update, found)
    return gating.decide(arms, results, state.baseline, settings.gate, found)


def notes(state: CardprobeState, gate: Gate | None, failures: Failures, lowered: bool) -> list[str]:
    """Lines printed after the scoreboard: what else the reader must know about the exit."""
    lines = list(state.baseline_notes)
    lines += [
        f"ERROR: xdist worker crashed: {crash} — its tests have no verdict"
        for crash in state.crashed_workers
    ]
    lines += breaker_lines(state.results)
    lines += warmup_lines(state.results)
    if lowered and gate is not None and failures.flips:
        lines.append(
            f"{failures.flips} flip(s) {gate.tolerance}, so the run "
            "exits 0: " + ", ".join(f"{arm} {flip}" for arm, flip in gate.flips)
        )
    elif lowered:
        lines.append("probe failures recorded into the baseline, so the run exits 0")
    if failures.errors:
        lines.append(
            f"{failures.errors} probe test(s) errored (not recorded, stale, corrupt, server or "
            "infra error) — never forgiven by the gate"
        )
    return lines


def run_info(state: CardprobeState) -> dict[str, object]:
    """The run's settings as shown in reports (no paths of this machine)."""
    s = state.settings
    return {
        "models": list(s.models),
        "mode": "live" if s.live else "replay",
        "api": s.api,
        "servers": [redact_url(u) for u in s.servers] if s.live else [],
        "samples": s.samples,
        "channels": list(s.channels),
        "conditions": list(s.conditions),
        "noise_floor": s.gate.noise_floor,
        "gate_mode": s.gate.mode,
        "alpha": s.gate.alpha,
        "request options": ", ".join(f"{k}={v}" for k, v in s.base_options().items()),
        "baseline": s.baseline.name,
    }


def write_reports(state: CardprobeState, arms: Sequence[ArmScore], gate: Gate | None) -> list[str]:
    """The JSON, Markdown and HTML files asked for, written atomically.

    Each on its own: one that cannot be written is one line in the returned list, and the
    others are still written (the run may have taken many minutes of live calls). The
    ``$GITHUB_STEP_SUMMARY`` file is CI's, not the user's, so a failure there is a warning
    in the summary, not a problem.
    """
    settings = state.settings
    problems: list[str | None] = []
    json_path, html_path, md_path = settings.json_report, settings.html_report, settings.md_report
    if json_path:
        tests = [r.to_dict() for r in state.results]
        data = json_report(arms, tests, gate, run_info(state))
        problems.append(
            written("JSON report", json_path, lambda: write_atomically(json_path, data))
        )
    if html_path:
        from pytest_cardprobe.score.html import html_report

        results = [r for r in state.results if r.suite]
        page = html_report(arms, results, gate, run_info(state))
        problems.append(
            written("HTML report", html_path, lambda: write_atomically(html_path, page))
        )
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if arms and (md_path or step):
        text = markdown(arms, gate)
        if md_path:
            problems.append(
                written("Markdown report", md_path, lambda: write_atomically(md_path, text))
            )
        if step:
            failed = written("$GITHUB_STEP_SUMMARY", Path(step), lambda: _append(step, text))
            if failed:
                state.summary.append(f"warning: {failed}")
    return [p for p in problems if p]


def _append(path: str, text: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


def finish(session: pytest.Session, state: CardprobeState) -> None:
    """Decide the run: score, gate, set the exit status, write reports, call the hook."""
    if (
        session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
        and state.settings.models
        and not state.suites_found
    ):
        state.notice = no_suite_message()
    results = [r for r in state.results if r.suite]
    arms = aggregate(results)
    problems: list[str] = []
    gate = decide_gate(state, arms, results, problems)
    failures = tally(state)
    before = session.exitstatus
    session.exitstatus = exit_status(before, gate, failures, state.settings.update_baseline)
    lowered = before != session.exitstatus == pytest.ExitCode.OK
    state.arms, state.gate = arms, gate
    state.summary = notes(state, gate, failures, lowered)
    problems += write_reports(state, arms, gate)
    for problem in problems:
        state.summary.append(f"ERROR: {problem}")
    if problems and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    report = {"arms": [a.to_dict() for a in arms], "gate": gate.to_dict() if gate else None}
    state.report = report
    session.config.hook.pytest_cardprobe_report(report=report, config=session.config)


BREAKER_PREFIX = "circuit breaker open"


def breaker_lines(results: list[ProbeResult]) -> list[str]:
    """One line per server whose breaker opened, with how many tests it spared."""
    spared: dict[str, int] = {}
    why: dict[str, str] = {}
    for result in results:
        message = result.message or ""
        if result.status == "infra" and message.startswith(BREAKER_PREFIX) and not result.samples:
            server = message.split(" on ", 1)[1].split(" ", 1)[0]
            spared[server] = spared.get(server, 0) + 1
            why.setdefault(server, message)
    return [
        f"circuit breaker opened on {server}: {count} test(s) failed as infra and were not "
        f"asked — {why[server]}"
        for server, count in spared.items()
    ]


def warmup_lines(results: list[ProbeResult]) -> list[str]:
    """The warm-up requests of a live run, apart from the tests they preceded."""
    lines = []
    for result in results:
        warm = result.warmup
        if not warm:
            continue
        outcome = f"failed: {warm['error']}" if warm.get("error") else "ok"
        lines.append(
            f"warm-up (unrecorded, unscored): {warm['model']} on {warm['server']}: "
            f"{warm.get('seconds', 0):.2f} s, {outcome}"
        )
    return lines
