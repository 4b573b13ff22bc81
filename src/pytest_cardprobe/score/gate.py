"""Compare each arm with the baseline and decide whether the run regressed.

A pass-rate regression is an arm that lost more than ``noise_floor`` cases; an adoption
regression is a tool-channel arm whose adoption fell by more than ``noise_floor`` cases'
worth (K / cases compared). Only cases that ran in both are compared, so ``-k`` runs
compare what ran. A call suite's canary (per suite x model) that changed verdict is a
regression too, whichever way it moved. Pure: the baseline arrives parsed and settings
arrive built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_cardprobe.score.aggregate import ArmScore, Canary
from pytest_cardprobe.score.baseline import Baseline, BaselineUpdate, route_counts
from pytest_cardprobe.types import ProbeResult

# How one arm fared, worst first; the scoreboard shows this word per arm.
REGRESSION, WARNING, GAIN, SAME, NEW = "regression", "warning", "gain", "same", "new"


@dataclass
class GateSettings:
    """How strict the gate is."""

    noise_floor: int = 1
    strict_baseline: bool = False
    max_unscored: float = 0.2


@dataclass(frozen=True)
class Flip:
    """A case whose verdict changed between the baseline and now."""

    case: str
    before: str  # baseline label
    after: str  # label now

    def __str__(self) -> str:
        return f"{self.case} ({self.before} -> {self.after})"


@dataclass(frozen=True)
class CanaryChange:
    """A call suite x model whose canary verdict differs from the baseline's."""

    key: str  # suite/model
    before: str
    after: str

    def __str__(self) -> str:
        return (
            f"canary {self.key}: {self.before} -> {self.after}; accept it with "
            "--cardprobe-update-baseline if intended"
        )


@dataclass
class ArmComparison:
    """One arm against its baseline (``compared`` is 0 and ``word`` is ``new`` without one)."""

    arm: str
    channel: str
    word: str = NEW
    compared: int = 0
    passed_before: int = 0
    passed_now: int = 0
    lost: list[Flip] = field(default_factory=list)  # pass -> fail
    won: list[Flip] = field(default_factory=list)  # fail -> pass
    adoption_before: float | None = None
    adoption_now: float | None = None
    adoption_drop_allowed: float | None = None
    # Coverage: the arm's cases that ran now, the baseline's cases, and how many of those ran.
    cases_run: int = 0
    cases_in_baseline: int | None = None
    baseline_cases_run: int = 0
    unscored: int = 0  # cases of this arm left without a verdict now (infra, errors)

    @property
    def partial(self) -> bool:
        """Some of the baseline's cases of this arm did not run (a ``-k`` slice, say)."""
        return (
            self.cases_in_baseline is not None and self.baseline_cases_run < self.cases_in_baseline
        )

    @property
    def passed_delta(self) -> int:
        """Cases passing now minus cases passing in the baseline (compared cases only)."""
        return self.passed_now - self.passed_before

    @property
    def adoption_delta(self) -> float | None:
        """Change of adoption (a share), when both runs made calls on the tool channel."""
        if self.adoption_before is None or self.adoption_now is None:
            return None
        return self.adoption_now - self.adoption_before

    @property
    def adoption_regressed(self) -> bool:
        """Adoption fell by more than the floor allows."""
        delta, allowed = self.adoption_delta, self.adoption_drop_allowed
        return delta is not None and allowed is not None and -delta > allowed + 1e-9

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        if self.word == NEW:
            return {"new": True, "word": NEW, "cases_run": self.cases_run}
        out: dict[str, Any] = {
            "word": self.word,
            "cases_run": self.cases_run,
            "cases_in_baseline": self.cases_in_baseline,
            "compared": self.compared,
            "passed_before": self.passed_before,
            "passed_now": self.passed_now,
            "passed_delta": self.passed_delta,
            "flipped_to_fail": [f.case for f in self.lost],
            "flipped_to_pass": [f.case for f in self.won],
        }
        if self.adoption_delta is not None:
            out["adoption_before"] = round(self.adoption_before or 0.0, 4)
            out["adoption_now"] = round(self.adoption_now or 0.0, 4)
            out["adoption_delta"] = round(self.adoption_delta, 4)
        return out


@dataclass
class Gate:
    """The gate decision: per-arm comparisons and what they add up to."""

    decision: str  # pass | fail | inconclusive | updated
    noise_floor: int
    arms: dict[str, ArmComparison] = field(default_factory=dict)
    regressions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    gains: list[str] = field(default_factory=list)
    unscored: int = 0
    total: int = 0
    max_unscored: float = GateSettings.max_unscored  # one default, in GateSettings
    had_baseline: bool = True
    # --update-baseline: what the merge wrote, kept and pruned.
    update: BaselineUpdate | None = None
    # Arms of the baseline that did not run at all in this session.
    not_run: list[str] = field(default_factory=list)
    # Call suites: this run's canaries, and those whose verdict left the baseline's (each
    # of these is also one of ``regressions``).
    canaries: list[Canary] = field(default_factory=list)
    canary_changes: list[CanaryChange] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """The gate fails the run (a regression, too much unscored, or a strict miss)."""
        return self.decision in ("fail", "inconclusive")

    @property
    def new(self) -> list[str]:
        """Arms with no baseline."""
        return [a for a, c in self.arms.items() if c.word == NEW]

    @property
    def flips(self) -> list[tuple[str, Flip]]:
        """Every pass -> fail case, with its arm."""
        return [(a, f) for a, c in self.arms.items() for f in c.lost]

    @property
    def summary(self) -> str:
        """One sentence after the decision word."""
        if self.decision == "updated":
            return self.update.summary if self.update else "baseline written"
        if not self.had_baseline and self.decision == "pass":
            return "no baseline yet: every arm is new; write one with --cardprobe-update-baseline"
        k = self.noise_floor
        text = (
            f"{len(self.regressions)} regression(s), {len(self.warnings)} warning(s) within "
            f"±{k}, {len(self.gains)} gain(s), {len(self.new)} new arm(s), "
            f"{self.unscored} of {self.total} case(s) unscored"
        )
        if self.decision == "inconclusive":
            text += f" — more than {self.max_unscored:.0%} unscored (infra or errors): inconclusive"
        return text

    @property
    def coverage(self) -> str | None:
        """A line on what of the baseline this run did not cover, or None when it all ran."""
        partial = [c for c in self.arms.values() if c.partial]
        if self.decision == "updated" or not (partial or self.not_run):
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
            "decision": self.decision,
            "summary": self.summary,
            "coverage": self.coverage,
            "arms_not_run": list(self.not_run),
            "noise_floor": self.noise_floor,
            "regressions": list(self.regressions),
            "warnings": list(self.warnings),
            "gains": list(self.gains),
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
            "canary_changes": [
                {"key": c.key, "before": c.before, "after": c.after} for c in self.canary_changes
            ],
        }


def compare_arm(
    arm: ArmScore,
    baseline: Baseline,
    counts: dict[tuple[str, str], tuple[int, int]],
    noise_floor: int,
) -> ArmComparison:
    """One arm against its baseline: the cases that ran in both, flips, adoption."""
    out = ArmComparison(arm.id, arm.channel, cases_run=len(arm.cases), unscored=arm.unscored)
    base = baseline.arms.get(arm.id)
    if base is None:
        return out
    out.cases_in_baseline = len(base)
    out.baseline_cases_run = len(set(arm.cases) & set(base))
    now = {c: i for c, i in arm.cases.items() if i["status"] in ("passed", "failed")}
    common = sorted(set(now) & set(base))
    out.compared = len(common)
    for case in common:
        was, label = base[case].passed, now[case]["label"]
        is_ = now[case]["status"] == "passed"
        out.passed_before += was
        out.passed_now += is_
        if was != is_:
            (out.lost if was else out.won).append(Flip(case, base[case].label, label))
    if arm.channel == "tool" and common:
        b_calls = sum(base[c].calls for c in common)
        b_tool = sum(base[c].tool_calls for c in common)
        n_calls = sum(counts.get((arm.id, c), (0, 0))[0] for c in common)
        n_tool = sum(counts.get((arm.id, c), (0, 0))[1] for c in common)
        if b_calls and n_calls:
            out.adoption_before, out.adoption_now = b_tool / b_calls, n_tool / n_calls
            out.adoption_drop_allowed = noise_floor / len(common)
    if -out.passed_delta > noise_floor or out.adoption_regressed:
        out.word = REGRESSION
    elif out.lost:
        out.word = WARNING
    elif out.passed_delta > noise_floor:
        out.word = GAIN
    else:
        out.word = SAME
    return out


def _messages(c: ArmComparison, k: int) -> tuple[list[str], list[str], list[str]]:
    """Regression, warning and gain lines of one arm."""
    regressions, warnings, gains = [], [], []
    flips = ", ".join(map(str, c.lost))
    if -c.passed_delta > k:
        regressions.append(
            f"{c.arm}: passed {c.passed_before} -> {c.passed_now} of {c.compared} "
            f"(floor ±{k}); pass -> fail: {flips}"
        )
    elif c.lost:
        warnings.append(f"{c.arm}: pass -> fail within the ±{k} noise floor: {flips}")
    if c.adoption_regressed:
        regressions.append(
            f"{c.arm}: adoption {c.adoption_before:.0%} -> {c.adoption_now:.0%} "
            f"(allowed drop {c.adoption_drop_allowed:.0%} = {k} of {c.compared} cases)"
        )
    if c.passed_delta > k:
        gains.append(
            f"{c.arm}: passed {c.passed_before} -> {c.passed_now}; accept with "
            f"--cardprobe-update-baseline (fail -> pass: {', '.join(f.case for f in c.won)})"
        )
    return regressions, warnings, gains


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
    (``--cardprobe-update-baseline``), not noise.
    """
    k = settings.noise_floor
    counts = route_counts(results)
    gate = Gate(
        decision="pass",
        noise_floor=k,
        unscored=sum(a.unscored for a in arms),
        total=sum(a.unscored + a.scored for a in arms),
        max_unscored=settings.max_unscored,
        had_baseline=baseline is not None,
        canaries=sorted(canaries, key=lambda c: c.key),
    )
    for arm in arms:
        comparison = compare_arm(arm, baseline or Baseline(), counts, k)
        gate.arms[arm.id] = comparison
        regressions, warnings, gains = _messages(comparison, k)
        gate.regressions += regressions
        gate.warnings += warnings
        gate.gains += gains
    remembered = baseline.canary if baseline else {}
    for canary in gate.canaries:
        was = remembered.get(canary.key)
        # Nothing is compared from zero observations: a canary one side of which did not
        # run has no verdict to hold against the baseline's.
        if was is not None and canary.measured and was != canary.verdict:
            change = CanaryChange(canary.key, was, canary.verdict)
            gate.canary_changes.append(change)
            gate.regressions.append(str(change))
    if baseline is not None:
        gate.not_run = sorted(set(baseline.arms) - set(gate.arms))
    if settings.strict_baseline:
        gate.regressions += [
            f"{a}: no baseline — --cardprobe-strict-baseline wants one" for a in gate.new
        ]
    if gate.regressions:
        gate.decision = "fail"
    elif gate.total and gate.unscored / gate.total > settings.max_unscored:
        gate.decision = "inconclusive"
    return gate


def updated(
    arms: Sequence[ArmScore],
    noise_floor: int,
    update: BaselineUpdate,
    canaries: Sequence[Canary] = (),
) -> Gate:
    """The gate of a run that wrote the baseline instead of comparing with it."""
    return Gate(
        decision="updated",
        noise_floor=noise_floor,
        arms={
            a.id: ArmComparison(a.id, a.channel, word=SAME, cases_run=len(a.cases)) for a in arms
        },
        unscored=sum(a.unscored for a in arms),
        total=sum(a.unscored + a.scored for a in arms),
        update=update,
        canaries=sorted(canaries, key=lambda c: c.key),
    )
