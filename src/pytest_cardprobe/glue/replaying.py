"""Tests that cannot replay (no cassette, a stale one): their one-line reason where they ran,
and, on the controller, their place in the terminal: one block instead of one paragraph
each.

A stale cassette says what changed in words (``suite/declarations.request_changes`` over
the recorded request and the one asked now); a missing one says so. pytest would print a
paragraph per test under FAILURES and then a line per test in its short summary;
``glue.transport.QuietReplayFailures`` keeps them out of FAILURES, so each such test gets its
one line (``FAILED <id> - stale: read_file: description changed``) and the run one block,
which names the command that records exactly them (``score/summary.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pytest_cardprobe.wire.errors import CassetteProblem, NotRecorded, StaleCassette

if TYPE_CHECKING:
    from pytest_cardprobe.glue.state import CardprobeState
    from pytest_cardprobe.suite.matrix import Probe

#: Changes named in a test's one line; the JSON report keeps every one.
SHOWN_CHANGES = 3


def problem_of(exc: CassetteProblem) -> tuple[str, list[str] | None]:
    """The kind of replay problem (:data:`types.PROBLEMS`) and, for a stale cassette, what
    changed in words (an empty list when nothing more than the message can be said)."""
    if isinstance(exc, NotRecorded):
        return "not recorded", None
    if not isinstance(exc, StaleCassette):
        return "corrupt", None
    from pytest_cardprobe.suite.declarations import request_changes

    changes = list(exc.said) or request_changes(exc.recorded, exc.asked)
    if not changes:
        changes = [f"{part} changed" for part in exc.parts]
    if not changes:  # more samples than recorded, no fingerprint, ...: the message's words
        said = str(exc).partition("; re-record with:")[0]
        changes = [said.partition(": ")[2] if said.startswith("stale cassette ") else said]
    return "stale", changes


def short_reason(problem: str, changes: list[str] | None, message: str) -> str:
    """A replay problem on one line: ``stale: read_file: description changed`` or
    ``not recorded (no cassette …)``; a corrupt cassette keeps its whole message."""
    if problem == "stale" and changes:
        more = len(changes) - SHOWN_CHANGES
        shown = "; ".join(changes[:SHOWN_CHANGES]) + (f"; and {more} more" if more > 0 else "")
        return f"stale: {shown}"
    if problem in ("not recorded", "never recorded"):
        cassette = message.rpartition("(no cassette ")[2].rstrip(")")
        return f"{problem} (no cassette {cassette})" if "(no cassette " in message else problem
    return message


def never_recorded(state: CardprobeState, probe: Probe, cassette: Path) -> bool:
    """Nothing of ``probe``'s suite was ever recorded: no cassette in its folder and no arm of
    it in the baseline. Such a suite is not set up yet, so outside a gating run (a base ref,
    ``--cardprobe-strict-baseline``) its tests are skipped rather than failed."""
    settings = state.settings
    if settings.gate.strict_baseline or settings.baseline_ref:
        return False
    name = probe.suite.name
    if name not in state.recorded_suites:
        folder = cassette.parents[1]
        has_cassette = folder.is_dir() and any(True for _ in folder.rglob("*.yaml"))
        baseline = state.baseline
        in_baseline = baseline is not None and any(
            arm.split("/", 1)[0] == name for arm in baseline.arms
        )
        state.recorded_suites[name] = has_cassette or in_baseline
    return not state.recorded_suites[name]
