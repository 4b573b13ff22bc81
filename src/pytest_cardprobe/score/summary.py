"""What the reports say beside the scoreboard, built as data before anything renders it.

A :class:`Block` is a title and its lines; the terminal prints it as a titled list, the
Markdown report as a heading and bullets, the HTML report as a section, the JSON report as
its data. Blocks hold no layout, so where a report puts them can change without rewriting
what they say. The blocks:

* :func:`verdict_block` — a run gated against a base leads with its verdict there: the
  regressions the change accepted (with their reasons), those it did not, what differs from
  the committed baseline, gains, the arms that moved, and the baseline's diff in words;
* :func:`update_block` — what ``--cardprobe-update-baseline`` accepted, per arm and case, or
  why it refused;
* :func:`unreplayed` — the tests that could not replay (not recorded, never recorded, stale):
  how many, which suites, what changed, and the one command that records exactly them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_cardprobe.score.gate import NEW, REGRESSION, SAME, Decision, Gate
from pytest_cardprobe.types import ProbeResult

__all__ = ["Block", "Unreplayed", "unreplayed", "update_block", "verdict_block"]

#: Groups of changes a block lists before ``… and N more``.
SHOWN_REASONS = 5
#: Lines of one kind a verdict lists before ``… and N more``.
SHOWN_LINES = 10


@dataclass(frozen=True)
class Block:
    """A titled list of lines, and the same as data for the JSON report."""

    key: str  # the JSON report's key
    title: str
    lines: tuple[str, ...]
    data: dict[str, Any] = field(default_factory=dict, hash=False)
    #: Said before the scoreboard (a verdict leads); else after it.
    lead: bool = False


@dataclass(frozen=True)
class Unreplayed:
    """Tests that could not replay for want of a fitting recording, in one block."""

    counts: dict[str, int]  # per problem: not recorded, never recorded, stale
    suites: tuple[str, ...]  # ``tools (cases/tools.yaml)``
    reasons: tuple[tuple[str, int], ...]  # what changed, and in how many tests
    mode: str  # the record mode that records exactly them: once or stale
    command: str

    @property
    def total(self) -> int:
        """Tests in the block."""
        return sum(self.counts.values())

    def block(self) -> Block:
        """The block every report renders."""
        counted = ", ".join(f"{n} {problem}" for problem, n in self.counts.items() if n)
        lines = [f"{counted} — {'suite' if len(self.suites) == 1 else 'suites'} "]
        lines[0] += ", ".join(self.suites)
        if self.counts.get("never recorded"):
            lines.append(
                "never recorded: nothing of the suite is recorded yet, so its tests are "
                "skipped (a run gating against a base ref or with --cardprobe-strict-baseline "
                "fails them)"
            )
        shown = self.reasons[:SHOWN_REASONS]
        lines += [f"{reason} ({n} test(s))" for reason, n in shown]
        if len(self.reasons) > len(shown):
            lines.append(f"… and {len(self.reasons) - len(shown)} other change(s)")
        lines.append(f"record exactly them: {self.command}")
        return Block(
            "unreplayed",
            f"{self.total} test(s) could not replay (never forgiven by the gate)"
            if self.total > self.counts.get("never recorded", 0)
            else f"{self.total} test(s) not recorded yet",
            tuple(lines),
            {
                "counts": dict(self.counts),
                "suites": list(self.suites),
                "changes": [{"change": r, "tests": n} for r, n in self.reasons],
                "record_mode": self.mode,
                "command": self.command,
            },
        )


def unreplayed(results: Sequence[ProbeResult], command: Callable[[str], str]) -> Unreplayed | None:
    """The block of the tests in ``results`` that had no fitting recording, or None.

    ``command(mode)`` is the command that records them in record mode ``mode`` (``stale``
    when some cassette is stale, since it also records missing ones, else ``once``): the
    glue knows the run's command line.
    """
    found = [r for r in results if r.problem in ("not recorded", "never recorded", "stale")]
    if not found:
        return None
    counts = {
        problem: sum(r.problem == problem for r in found)
        for problem in ("stale", "not recorded", "never recorded")
    }
    suites: dict[str, None] = {}
    for r in found:
        where = r.nodeid.partition("::")[0]
        suites[f"{r.suite} ({where})" if where and where != r.suite else r.suite] = None
    reasons = Counter("; ".join(r.changes) for r in found if r.problem == "stale" and r.changes)
    mode = "stale" if counts["stale"] else "once"
    return Unreplayed(
        {k: v for k, v in counts.items() if v},
        tuple(suites),
        tuple(reasons.most_common()),
        mode,
        command(mode),
    )


def _capped(word: str, items: Sequence[str]) -> list[str]:
    lines = [f"{word}{item}" for item in items[:SHOWN_LINES]]
    if len(items) > SHOWN_LINES:
        lines.append(f"{word}… and {len(items) - SHOWN_LINES} more")
    return lines


def verdict_block(
    gate: Gate, diff: Sequence[str] = (), unreplayed_tests: int = 0, command: str = ""
) -> Block:
    """The verdict of a run gated against a base, first in every report; ``command`` is the
    update that would accept its unaccepted regressions (with a reason to give)."""
    lines = [f"ACCEPTED: {a} — reason: {a.reason}" for a in gate.accepted]
    lines += _capped("REGRESSION (not accepted): ", gate.regressions)
    lines += _capped("not accepted: ", gate.not_accepted)
    unaccepted = gate.canary_changes or any(c.word == REGRESSION for c in gate.arms.values())
    if command and unaccepted:
        lines.append(
            "to accept them on purpose, with the reason a reviewer reads, run against the "
            f"same base and commit the baseline: {command}"
        )
    lines += _capped("not committed: ", gate.uncommitted)
    lines += _capped(
        "gain: ", [f"{arm}: {flip}" for arm, c in sorted(gate.arms.items()) for flip in c.won]
    )
    moved = [
        f"{arm}: passed {c.passed_before} -> {c.passed_now} of {c.compared}"
        + (f" ({c.word})" if c.word != SAME else "")
        for arm, c in sorted(gate.arms.items())
        if c.word not in (SAME, NEW) or c.passed_delta
    ]
    lines += _capped("arm changed: ", moved)
    if unreplayed_tests:
        lines.append(f"could not replay: {unreplayed_tests} test(s), listed below")
    lines += _capped("baseline diff: ", diff)
    if not lines:
        lines.append("no change against the base: every case reads as it does there")
    return Block(
        "verdict",
        f"verdict against {gate.against}: {gate.decision}",
        tuple(lines),
        {
            "against": gate.against,
            "decision": str(gate.decision),
            "accepted": [{**a.to_dict(), "shown": str(a)} for a in gate.accepted],
            "regressions": list(gate.regressions),
            "not_accepted": list(gate.not_accepted),
            "uncommitted": list(gate.uncommitted),
            "gains": [f"{arm}: {flip}" for arm, c in sorted(gate.arms.items()) for flip in c.won],
            "arms_changed": moved,
            "baseline_diff": list(diff),
        },
        lead=True,
    )


def update_block(gate: Gate, command: str = "") -> Block:
    """What an update accepted, per arm and case, with the reason; or why it was refused
    (and ``command``, the run again with a reason to give)."""
    where = gate.against or "the committed baseline"
    if gate.decision == Decision.REFUSED:
        lines = [f"REGRESSION: {r}" for r in gate.regressions]
        lines.append(
            "the baseline was not written: an update that accepts regressions says why; "
            f"run again with the reason: {command}"
        )
        title = f"update refused: {len(gate.regressions)} regression(s) against {where}"
    else:
        by_arm: dict[tuple[str, str], list[str]] = {}
        for a in gate.accepted:
            shown = f"{a.case} ({a.before} -> {a.after})" if a.kind == "flip" else str(a)
            by_arm.setdefault((a.where if a.kind != "canary" else "canary", a.reason), []).append(
                shown
            )
        lines = [
            f"accepted {arm}: {', '.join(items)} — reason: {why}"
            for (arm, why), items in by_arm.items()
        ]
        lines += [
            f"within the noise floor, not accepted (no reason given): {w}" for w in gate.warnings
        ]
        if not lines:
            lines.append(f"nothing to accept: no regression against {where}")
        title = f"update against {where}: {len(gate.accepted)} regression(s) accepted"
    return Block(
        "update",
        title,
        tuple(lines),
        {
            "decision": str(gate.decision),
            "against": gate.against,
            "accepted": [a.to_dict() for a in gate.accepted],
            "regressions": list(gate.regressions) if gate.decision == Decision.REFUSED else [],
        },
        lead=True,
    )
