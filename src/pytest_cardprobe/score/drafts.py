"""Unreviewed drafted cases (``reviewed: false``): scored apart from everything the gate reads.

``python -m pytest_cardprobe draft`` writes a suite whose expectations are what a model
happened to do in captured traffic; until a person marks a case reviewed, it is asked and
judged like any other, but :func:`split_drafts` keeps it out of the arms the gate compares
and the baseline records, so a model's accident never becomes the truth unnoticed. The
scoreboard counts them per arm (:func:`draft_lines`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pytest_cardprobe.types import VERDICT_STATUSES, ProbeResult

#: The label prefix of a drafted case that has no expectation yet (judge/call.not_expected).
NO_EXPECTATION = "no expectation yet"


def split_drafts(results: Iterable[ProbeResult]) -> tuple[list[ProbeResult], list[ProbeResult]]:
    """(reviewed results, unreviewed drafts), each in the order given."""
    reviewed: list[ProbeResult] = []
    drafts: list[ProbeResult] = []
    for result in results:
        (drafts if result.draft else reviewed).append(result)
    return reviewed, drafts


def draft_counts(drafts: Sequence[ProbeResult]) -> dict[str, dict[str, int]]:
    """Per arm: cases, and how many passed their draft, failed it, have no expectation yet,
    or were not judged (an error or infra)."""
    counts: dict[str, dict[str, int]] = {}
    for result in drafts:
        arm = counts.setdefault(
            result.arm_id,
            {"cases": 0, "passed": 0, "failed": 0, "no_expectation": 0, "unjudged": 0},
        )
        arm["cases"] += 1
        if result.status not in VERDICT_STATUSES:
            arm["unjudged"] += 1
        elif any(s.label.startswith(NO_EXPECTATION) for s in result.samples):
            arm["no_expectation"] += 1
        else:
            arm[result.status] += 1
    return counts


def draft_lines(drafts: Sequence[ProbeResult]) -> list[str]:
    """The scoreboard's lines about unreviewed drafts; none when there are none."""
    if not drafts:
        return []
    lines = [
        f"unreviewed drafts: {len(drafts)} test(s) of cases marked `reviewed: false` — not "
        "gated and not written to the baseline until a person reviews each expectation and "
        "sets `reviewed: true`"
    ]
    for arm, n in sorted(draft_counts(drafts).items()):
        parts = [f"{n['passed']} pass their drafted expectation"]
        if n["failed"]:
            parts.append(f"{n['failed']} fail it")
        if n["no_expectation"]:
            parts.append(f"{n['no_expectation']} have none yet")
        if n["unjudged"]:
            parts.append(f"{n['unjudged']} not judged")
        lines.append(f"  {arm}: {n['cases']} case(s): {', '.join(parts)}")
    return lines
