"""How pytest shows one probe test, read against the baseline (decided where the test ran).

passed -> passed; failed and failed in the baseline -> xfailed (known); passed and failed
in the baseline -> XPASS (a gain); failed and passed in the baseline -> FAILED (a flip).
A test whose arm or case has no baseline keeps the model's verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_cardprobe.score.baseline import Baseline
from pytest_cardprobe.score.rule import label_of
from pytest_cardprobe.types import ProbeResult, escape_control

PASSED, FAILED = "passed", "failed"

__all__ = ["FAILED", "FLIP", "GAIN", "KNOWN", "PASSED", "Outcome", "label_of", "outcome_of"]
KNOWN, GAIN, FLIP = "xfailed", "xpassed", "flipped"


@dataclass(frozen=True)
class Outcome:
    """The outcome word and the reason pytest shows with it."""

    kind: str
    reason: str = ""


def outcome_of(
    result: ProbeResult, baseline: Baseline | None, runxfail: bool = False
) -> Outcome | None:
    """The outcome of a judged test, or None when it was not judged (error, infra, skip).

    ``runxfail`` (pytest --runxfail) shows known failures and gains as the plain verdict.
    """
    if result.status not in (PASSED, FAILED):
        return None
    before = baseline.verdict(result.arm_id, result.case) if baseline else None
    passed, label = result.status == PASSED, label_of(result)
    if before is None or (runxfail and not before.passed):
        return Outcome(result.status)
    # Reasons reach the terminal (-rxX, the failure header); labels may quote model text.
    label, was = escape_control(label), escape_control(before.label)
    if passed and before.passed:
        return Outcome(PASSED)
    if passed:
        return Outcome(GAIN, f"gain: {label} (baseline: {was})")
    if before.passed:
        return Outcome(FLIP, f"flip: passed in the baseline ({was}), fails now ({label})")
    return Outcome(KNOWN, f"known: {label} (baseline: {was})")
