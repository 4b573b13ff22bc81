"""How pytest shows one probe test, read against the baseline (decided where the test ran).

passed -> passed; failed and failed in the baseline -> xfailed (known); passed and failed
in the baseline -> XPASS (a gain); failed and passed in the baseline -> FAILED (a flip),
unless the flip is accepted (by the acceptances a change committed for the base it is gated
against, or by the update that is writing it with a reason): then xfailed, as accepted.
A test whose arm or case has no baseline keeps the model's verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pytest_cardprobe.score.baseline import Baseline
from pytest_cardprobe.score.rule import FAILED, PASSED, label_of, settle
from pytest_cardprobe.text import escape_control
from pytest_cardprobe.types import VERDICT_STATUSES, ProbeResult

__all__ = [
    "ACCEPTED",
    "FAILED",
    "FLIP",
    "GAIN",
    "KNOWN",
    "PASSED",
    "UNREVIEWED",
    "Accepts",
    "Against",
    "Outcome",
    "draft_outcome",
    "label_of",
    "outcome_of",
    "score_result",
]
KNOWN, GAIN, FLIP, ACCEPTED = "xfailed", "xpassed", "flipped", "accepted"
#: Whether a flip (arm id, case, label before, label now) is accepted: its reason, or None.
Accepts = Callable[[str, str, str, str], str | None]
#: An unreviewed drafted case under --cardprobe-strict-review: it fails whatever its verdict.
UNREVIEWED = "unreviewed"


@dataclass(frozen=True)
class Outcome:
    """The outcome word and the reason pytest shows with it."""

    kind: str
    reason: str = ""


def outcome_of(
    result: ProbeResult,
    baseline: Baseline | None,
    runxfail: bool = False,
    fallback: Baseline | None = None,
    accepts: Accepts | None = None,
) -> Outcome | None:
    """The outcome of a judged test, or None when it was not judged (error, infra, skip).

    ``runxfail`` (pytest --runxfail) shows known failures and gains as the plain verdict.
    ``fallback`` answers for a case ``baseline`` lacks (a case new in a change gated against
    its base is read against the change's own baseline); ``accepts`` says whether a flip is
    accepted, and why.
    """
    if result.status not in VERDICT_STATUSES:
        return None
    before = baseline.verdict(result.arm_id, result.case) if baseline else None
    if before is None and fallback is not None:
        before = fallback.verdict(result.arm_id, result.case)
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
        why = (
            accepts(result.arm_id, result.case, before.label, label_of(result)) if accepts else None
        )
        if why is not None:
            return Outcome(
                ACCEPTED,
                f"accepted: passed in the baseline ({was}), fails now ({label}); "
                f"reason: {escape_control(why)}",
            )
        return Outcome(FLIP, f"flip: passed in the baseline ({was}), fails now ({label})")
    return Outcome(KNOWN, f"known: {label} (baseline: {was})")


def draft_outcome(result: ProbeResult, strict: bool) -> Outcome | None:
    """How an unreviewed drafted case (``reviewed: false``) is shown: its draft is no
    baseline, so a pass is a pass and a failure is shown as xfailed with its reason, never as
    a failure of the run; with ``strict`` (--cardprobe-strict-review) it fails either way."""
    if result.status not in VERDICT_STATUSES:
        return None
    if strict:
        return Outcome(
            UNREVIEWED,
            f"unreviewed draft: case {escape_control(result.case)!r} is marked `reviewed: "
            "false` (its expectation was drafted from recorded traffic); check it, then set "
            "`reviewed: true` (--cardprobe-strict-review fails unreviewed cases)",
        )
    if result.status == PASSED:
        return Outcome(PASSED)
    label = escape_control(label_of(result))
    return Outcome(KNOWN, f"unreviewed draft: {label} (not gated until reviewed)")


@dataclass(frozen=True)
class Against:
    """What a judged test is read against where it ran: the baseline it is gated against
    (the base's when a base ref is set), the one that answers for a case that lacks
    (``fallback``: the change's own), which flips are accepted, pytest's ``--runxfail``, and
    ``--cardprobe-strict-review`` for unreviewed drafted cases."""

    baseline: Baseline | None = None
    fallback: Baseline | None = None
    accepts: Accepts | None = None
    runxfail: bool = False
    strict_review: bool = False


def score_result(result: ProbeResult, at_least: int | None, against: Against) -> Outcome | None:
    """The one score call of a test where it ran: apply the case rule (k of n,
    ``score/rule.settle``), then read the result against the baseline (a drafted case against
    its draft's rule) and note the outcome's word on the result. Returns the outcome, whose
    reason pytest shows (None: not judged, or no baseline changes how it shows)."""
    settle(result, at_least)
    if result.draft:
        shown = draft_outcome(result, against.strict_review)
    else:
        shown = outcome_of(
            result, against.baseline, against.runxfail, against.fallback, against.accepts
        )
    if shown is not None:
        result.outcome = shown.kind
    return shown
