"""Compare each arm with the baseline and decide whether the run regressed.

Each arm is compared by ``compare.py`` and gets the word of the mode in force: ``floor``
(lost more than ``noise_floor`` cases, or adoption fell by more than that many cases'
worth) or ``significance`` (the paired test says the loss is significant at ``alpha``).
Only cases that ran in both are compared, so ``-k`` runs compare what ran. A call
suite's canary (per suite x model) that changed verdict is a regression too, whichever way
it moved. Pure: the baseline arrives parsed and settings arrive built.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_cardprobe.score.acceptance import Acceptance
from pytest_cardprobe.score.aggregate import ArmScore, Canary
from pytest_cardprobe.score.baseline import Baseline
from pytest_cardprobe.score.baseline_update import BaselineUpdate, route_counts
from pytest_cardprobe.score.canary import canary_word
from pytest_cardprobe.score.compare import (
    FLOOR,
    GAIN,
    GATE_MODES,
    NEW,
    REGRESSION,
    SAME,
    SIGNIFICANCE,
    WARNING,
    ArmComparison,
    Flip,
    GateSettings,
    UnstableCase,
    compare_arm,
    messages,
    unstable_cases,
)
from pytest_cardprobe.score.stats import ALPHA, p_text
from pytest_cardprobe.types import ProbeResult

__all__ = [
    "FLOOR",
    "GAIN",
    "GATE_MODES",
    "NEW",
    "REGRESSION",
    "SAME",
    "SIGNIFICANCE",
    "WARNING",
    "ArmComparison",
    "CanaryChange",
    "Decision",
    "Flip",
    "Gate",
    "GateSettings",
    "UnstableCase",
    "decide",
    "updated",
]


class Decision(enum.StrEnum):
    """The gate's word for the run (str-valued: reports carry the plain string)."""

    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    UPDATED = "updated"  # --cardprobe-update-baseline wrote the baseline
    REFUSED = "refused"  # an update refused: regressions without --cardprobe-accept-reason
    ACCEPTED = "accepted"  # against a base: the only regressions are accepted ones


@dataclass(frozen=True)
class CanaryChange:
    """A call suite x model whose canary verdict differs from the baseline's."""

    key: str  # suite/model
    before: str
    after: str

    def __str__(self) -> str:
        # Readable words, as the canary line shows them; the JSON keeps the stored words
        # in ``canary_changes``.
        before, after = canary_word(self.before), canary_word(self.after)
        return (
            f"canary {self.key}: {before} -> {after}; accept it with "
            "--cardprobe-update-baseline if intended"
        )


@dataclass
class Gate:
    """The gate decision: per-arm comparisons and what they add up to."""

    decision: str  # a Decision
    noise_floor: int
    arms: dict[str, ArmComparison] = field(default_factory=dict)
    regressions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    gains: list[str] = field(default_factory=list)
    unscored: int = 0
    total: int = 0
    max_unscored: float = GateSettings.max_unscored  # one default, in GateSettings
    had_baseline: bool = True
    # --cardprobe-update-baseline: what the merge wrote, kept and pruned.
    update: BaselineUpdate | None = None
    # Arms of the baseline that did not run at all in this session.
    not_run: list[str] = field(default_factory=list)
    # Call suites: this run's canaries, and those whose verdict left the baseline's (each
    # of these is also one of ``regressions``).
    canaries: list[Canary] = field(default_factory=list)
    canary_changes: list[CanaryChange] = field(default_factory=list)
    # The mode in force and its level; what the other mode would have decided, and why.
    mode: str = GateSettings.mode
    alpha: float = GateSettings.alpha
    other_decision: str | None = None
    other_regressions: list[str] = field(default_factory=list)
    # Gated against a base (--cardprobe-baseline-ref): ``ref (commit)``; the regressions the
    # change accepted for that base; why other acceptances did not apply; and where this
    # run's verdicts differ from the committed baseline (replay is deterministic: each is a
    # recording or a baseline that was not committed). With --cardprobe-update-baseline:
    # the acceptances written, and what the regressions were compared against.
    against: str | None = None
    accepted: list[Acceptance] = field(default_factory=list)
    not_accepted: list[str] = field(default_factory=list)
    uncommitted: list[str] = field(default_factory=list)

    @property
    def settings(self) -> GateSettings:
        """The settings this gate was decided with (the parts a renderer needs)."""
        return GateSettings(self.noise_floor, mode=self.mode, alpha=self.alpha)

    @property
    def failed(self) -> bool:
        """The gate fails the run (a regression, too much unscored, a strict miss, a
        difference from the committed baseline, or an update refused for want of a reason)."""
        return self.decision in (Decision.FAIL, Decision.INCONCLUSIVE, Decision.REFUSED)

    @property
    def new(self) -> list[str]:
        """Arms with no baseline."""
        return [a for a, c in self.arms.items() if c.word == NEW]

    @property
    def flips(self) -> list[tuple[str, Flip]]:
        """Every pass -> fail case, with its arm."""
        return [(a, f) for a, c in self.arms.items() for f in c.lost]

    @property
    def tolerance(self) -> str:
        """Why losses that did not fail the gate were let through, in the mode's words."""
        if self.mode == SIGNIFICANCE:
            return f"not significant at {ALPHA} = {self.alpha:g}"
        return f"within the ±{self.noise_floor} noise floor"

    @property
    def summary(self) -> str:
        """One sentence after the decision word; it names the mode."""
        if self.decision in (Decision.UPDATED, Decision.REFUSED):
            return self._update_summary()
        if not self.had_baseline and self.decision == Decision.PASS:
            return "no baseline yet: every arm is new; write one with --cardprobe-update-baseline"
        within = "not significant" if self.mode == SIGNIFICANCE else f"within ±{self.noise_floor}"
        accepted = f"{len(self.accepted)} accepted regression(s), " if self.accepted else ""
        uncommitted = (
            f"{len(self.uncommitted)} difference(s) from the committed baseline, "
            if self.uncommitted
            else ""
        )
        text = (
            f"{accepted}{uncommitted}{len(self.regressions)} regression(s), "
            f"{len(self.warnings)} warning(s) {within}, "
            f"{len(self.gains)} gain(s), {len(self.new)} new arm(s), "
            f"{self.unscored} of {self.total} case(s) unscored (mode {self.settings.describe()})"
        )
        if self.decision == Decision.INCONCLUSIVE:
            text += f" — more than {self.max_unscored:.0%} unscored (infra or errors): inconclusive"
        return text + (f"; against {self.against}" if self.against else "")

    def _update_summary(self) -> str:
        """What an update did, or why it was refused."""
        where = f" against {self.against}" if self.against else ""
        if self.decision == Decision.REFUSED:
            return (
                f"baseline not written: {len(self.regressions)} regression(s){where}; say why "
                'they are accepted: --cardprobe-accept-reason "…" (see below)'
            )
        text = self.update.summary if self.update else "baseline written"
        if self.accepted:
            text += f"; accepted {len(self.accepted)} regression(s){where}"
        return text

    @property
    def other_mode_line(self) -> str | None:
        """What the mode not in force would have decided on the same figures."""
        if (
            self.other_decision is None
            or self.decision == Decision.UPDATED
            or not self.had_baseline
        ):
            return None
        settings = self.settings
        text = f"mode {settings.describe(settings.other_mode)} would {self.other_decision}"
        if self.other_regressions:
            text += ": " + "; ".join(self.other_regressions)
        return text

    @property
    def suggestions(self) -> list[str]:
        """Floor mode: each arm the floor failed for lost cases where more of those cases were
        unstable (their samples disagreed, now or in the baseline) than the floor absorbs,
        and the paired test does not find the loss significant. Cases that broke on every
        sample, or a significant collapse, get no floor suggested: that is not noise."""
        if self.mode != FLOOR or self.decision == Decision.UPDATED:
            return []
        k, out = self.noise_floor, []
        for arm, c in sorted(self.arms.items()):
            unstable = {u.case for u in c.unstable}
            shaky = [f.case for f in c.lost if f.case in unstable]
            if c.word == NEW or -c.passed_delta <= k or len(shaky) <= k:
                continue
            if c.words.get(SIGNIFICANCE) == REGRESSION or c.test is None:
                continue
            out.append(
                f"{arm}: {len(shaky)} of the {len(c.lost)} lost case(s) are unstable (samples "
                f"disagreed) and the loss is not significant (p = {p_text(c.test.p_loss)}); "
                f"--cardprobe-noise-floor {len(shaky)} would absorb them"
            )
        return out

    @property
    def coverage(self) -> str | None:
        """A line on what of the baseline this run did not cover, or None when it all ran."""
        partial = [c for c in self.arms.values() if c.partial]
        if self.decision == Decision.UPDATED or not (partial or self.not_run):
            return None
        known = [c for c in self.arms.values() if c.cases_in_baseline]
        ran = sum(c.baseline_cases_run for c in known)
        total = sum(c.cases_in_baseline or 0 for c in known)
        text = (
            f"coverage: partial run — {ran} of {total} baseline case(s) ran in the "
            f"{len(known)} arm(s) that ran"
        )
        if self.not_run:
            text += f"; {len(self.not_run)} baseline arm(s) did not run"
        return text + "; what did not run counts neither as a regression nor as a gain"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (stable ordering)."""
        return {
            "against": self.against,
            "accepted": [a.to_dict() for a in self.accepted],
            "not_accepted": list(self.not_accepted),
            "uncommitted": list(self.uncommitted),
            "decision": str(self.decision),  # a plain string for the report hook
            "summary": self.summary,
            "mode": self.mode,
            "alpha": self.alpha,
            "other_mode": None
            if self.other_decision is None
            else {"mode": self.settings.other_mode, "decision": self.other_decision},
            "coverage": self.coverage,
            "arms_not_run": list(self.not_run),
            "noise_floor": self.noise_floor,
            "regressions": list(self.regressions),
            "warnings": list(self.warnings),
            "gains": list(self.gains),
            "suggestions": self.suggestions,
            "new": self.new,
            "unscored": self.unscored,
            "arms": {k: self.arms[k].to_dict() for k in sorted(self.arms)},
            **self._canary_dict(),
        }

    def _canary_dict(self) -> dict[str, Any]:
        """The canary keys, present only when a call suite ran canary cases."""
        if not self.canaries and not self.canary_changes:
            return {}
        return {
            "canary": {c.key: c.verdict for c in self.canaries},
            # Each canary's readings: offered needs_tool and no_tool, forced, evidence.
            "canary_readings": {c.key: c.to_dict() for c in self.canaries},
            "canary_changes": [
                {"key": c.key, "before": c.before, "after": c.after} for c in self.canary_changes
            ],
        }


def _why(c: ArmComparison, settings: GateSettings) -> str:
    """An arm the other mode would fail, with the figures that decide it there: the cases
    lost, the adoption drop, or both."""
    if c.test is None:
        return c.arm
    figures = []
    cases = f"{c.passed_delta:+d} case(s), p = {p_text(c.test.p_loss)}"
    adoption = f"adoption {c.adoption_before or 0:.0%} -> {c.adoption_now or 0:.0%}"
    if settings.other_mode == FLOOR:
        if -c.passed_delta > settings.noise_floor:
            figures.append(cases)
        if c.adoption_regressed:
            figures.append(f"{adoption}, allowed drop {c.adoption_drop_allowed or 0:.0%}")
    else:
        if c.passed_delta < 0 and c.test.p_loss < settings.alpha:
            figures.append(cases)
        if c.adoption_significant(settings.alpha) and c.adoption_test is not None:
            figures.append(f"{adoption}, p = {p_text(c.adoption_test.p_loss)}")
    return f"{c.arm} ({'; '.join(figures)})" if figures else c.arm


def decide(
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    baseline: Baseline | None,
    settings: GateSettings,
    canaries: Sequence[Canary] = (),
) -> Gate:
    """Compare every arm with ``baseline`` and decide pass, fail or inconclusive.

    A canary verdict that differs from the baseline's is a regression whichever way it
    moved: the capability a team relies on changed, and accepting it is a decision
    (``--cardprobe-update-baseline``), not noise. The other mode is decided on the same figures.
    """
    counts = route_counts(results)
    gate = Gate(
        decision=Decision.PASS,
        noise_floor=settings.noise_floor,
        unscored=sum(a.unscored for a in arms),
        total=sum(a.unscored + a.scored for a in arms),
        max_unscored=settings.max_unscored,
        had_baseline=baseline is not None,
        canaries=sorted(canaries, key=lambda c: c.key),
        mode=settings.mode,
        alpha=settings.alpha,
    )
    for arm in arms:
        comparison = compare_arm(arm, baseline or Baseline(), counts, settings)
        gate.arms[arm.id] = comparison
        regressions, warnings, gains = messages(comparison, settings)
        gate.regressions += regressions
        gate.warnings += warnings
        gate.gains += gains
    other = settings.other_mode
    gate.other_regressions = [
        _why(c, settings) for c in gate.arms.values() if c.words.get(other) == REGRESSION
    ]
    remembered = baseline.canary if baseline else {}
    for canary in gate.canaries:
        was = remembered.get(canary.key)
        # Nothing is compared from zero observations: a canary one side of which did not
        # run has no verdict to hold against the baseline's.
        if was is not None and canary.measured and was != canary.verdict:
            change = CanaryChange(canary.key, was, canary.verdict)
            gate.canary_changes.append(change)
            gate.regressions.append(str(change))
            gate.other_regressions.append(f"canary {change.key}")
    if baseline is not None:
        gate.not_run = sorted(set(baseline.arms) - set(gate.arms))
    if settings.strict_baseline:
        strict = [f"{a}: no baseline — --cardprobe-strict-baseline wants one" for a in gate.new]
        gate.regressions += strict
        gate.other_regressions += [a for a in gate.new]
    too_many = bool(gate.total and gate.unscored / gate.total > settings.max_unscored)
    if gate.regressions:
        gate.decision = Decision.FAIL
    elif too_many:
        gate.decision = Decision.INCONCLUSIVE
    gate.other_decision = (
        "fail" if gate.other_regressions else "be inconclusive" if too_many else "pass"
    )
    return gate


def updated(
    arms: Sequence[ArmScore],
    noise_floor: int,
    update: BaselineUpdate,
    canaries: Sequence[Canary] = (),
) -> Gate:
    """The gate of a run that wrote the baseline instead of comparing with it."""
    return Gate(
        decision=Decision.UPDATED,
        noise_floor=noise_floor,
        arms={
            a.id: ArmComparison(
                a.id, a.channel, word=SAME, cases_run=len(a.cases), unstable=unstable_cases(a, None)
            )
            for a in arms
        },
        unscored=sum(a.unscored for a in arms),
        total=sum(a.unscored + a.scored for a in arms),
        update=update,
        canaries=sorted(canaries, key=lambda c: c.key),
    )
