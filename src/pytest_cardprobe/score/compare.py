"""One arm against its baseline: flips, coverage, the paired test, unstable cases, and the
word each gate mode gives it.

Two modes decide whether an arm regressed (docs/design.md §4, "Noise"):

- ``floor`` (the default): the arm lost more than ``noise_floor`` cases, or a tool arm's
  adoption fell by more than ``noise_floor`` cases' worth (K / cases compared);
- ``significance``: the arm lost cases and the paired test of its case verdicts
  (``stats.verdict_test``, conditioned on the per-case sample counts) says the loss is
  significant at ``alpha``; adoption the same way over the tool-channel samples
  (``stats.stratified``).

Both words are computed for every arm, so every report shows the same figures whichever
mode is in force, and can say what the other mode would have decided.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The gate's settings record lives below the stages (run/settings.py holds it); re-exported.
from pytest_cardprobe.gatesettings import ALPHA
from pytest_cardprobe.gatesettings import FLOOR as FLOOR
from pytest_cardprobe.gatesettings import GATE_MODES as GATE_MODES
from pytest_cardprobe.gatesettings import SIGNIFICANCE as SIGNIFICANCE
from pytest_cardprobe.gatesettings import GateSettings as GateSettings
from pytest_cardprobe.score.aggregate import ArmScore
from pytest_cardprobe.score.baseline import Baseline, CaseVerdict
from pytest_cardprobe.score.stats import (
    PairedTest,
    Stratum,
    needed,
    p_text,
    stratified,
    verdict_test,
)

# How one arm fared, worst first; the scoreboard shows this word per arm.
REGRESSION, WARNING, GAIN, SAME, NEW = "regression", "warning", "gain", "same", "new"


@dataclass(frozen=True)
class Flip:
    """A case whose verdict changed between the baseline and now."""

    case: str
    before: str  # baseline label
    after: str  # label now

    def __str__(self) -> str:
        return f"{self.case} ({self.before} -> {self.after})"


@dataclass(frozen=True)
class UnstableCase:
    """A case whose samples disagreed, in the baseline or now: (passed, samples) per side;
    None where that side did not run or kept no sample counts."""

    case: str
    now: tuple[int, int] | None
    before: tuple[int, int] | None

    def __str__(self) -> str:
        sides = [
            f"{word} {side[0]}/{side[1]}"
            for word, side in (("now", self.now), ("baseline", self.before))
            if side is not None
        ]
        return f"{self.case} ({', '.join(sides)})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "case": self.case,
            "now": list(self.now) if self.now else None,
            "baseline": list(self.before) if self.before else None,
        }


def _unstable(counts: tuple[int, int] | None) -> bool:
    return counts is not None and 0 < counts[0] < counts[1]


@dataclass
class ArmComparison:
    """One arm against its baseline (``compared`` is 0 and ``word`` is ``new`` without one)."""

    arm: str
    channel: str
    word: str = NEW  # the word of the mode in force
    compared: int = 0
    passed_before: int = 0
    passed_now: int = 0
    lost: list[Flip] = field(default_factory=list)  # pass -> fail (McNemar's b)
    won: list[Flip] = field(default_factory=list)  # fail -> pass (McNemar's c)
    adoption_before: float | None = None
    adoption_now: float | None = None
    adoption_drop_allowed: float | None = None
    # Coverage: the arm's cases that ran now, the baseline's cases, and how many of those ran.
    cases_run: int = 0
    cases_in_baseline: int | None = None
    baseline_cases_run: int = 0
    unscored: int = 0  # cases of this arm left without a verdict now (infra, errors)
    # The paired tests (cases passing; adoption over tool-channel samples), the words of
    # both modes, and the cases whose samples disagreed on either side.
    test: PairedTest | None = None
    adoption_test: PairedTest | None = None
    words: dict[str, str] = field(default_factory=dict)
    unstable: list[UnstableCase] = field(default_factory=list)

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
        """Adoption fell by more than the floor allows (mode ``floor``)."""
        delta, allowed = self.adoption_delta, self.adoption_drop_allowed
        return delta is not None and allowed is not None and -delta > allowed + 1e-9

    def adoption_significant(self, alpha: float) -> bool:
        """Adoption fell and the drop is significant at ``alpha`` (mode ``significance``)."""
        delta, test = self.adoption_delta, self.adoption_test
        return delta is not None and delta < 0 and test is not None and test.p_loss < alpha

    @property
    def p(self) -> float | None:
        """The one-sided p-value of the loss of passing samples (None without a baseline)."""
        return None if self.test is None else self.test.p_loss

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        unstable = [u.to_dict() for u in self.unstable]
        if self.word == NEW:
            return {"new": True, "word": NEW, "cases_run": self.cases_run, "unstable": unstable}
        out: dict[str, Any] = {
            "word": self.word,
            "words": dict(sorted(self.words.items())),
            "cases_run": self.cases_run,
            "cases_in_baseline": self.cases_in_baseline,
            "compared": self.compared,
            "passed_before": self.passed_before,
            "passed_now": self.passed_now,
            "passed_delta": self.passed_delta,
            "flipped_to_fail": [f.case for f in self.lost],
            "flipped_to_pass": [f.case for f in self.won],
            "unstable": unstable,
        }
        if self.test is not None:
            out["test"] = _test_dict(self.test)
        if self.adoption_delta is not None:
            out["adoption_before"] = round(self.adoption_before or 0.0, 4)
            out["adoption_now"] = round(self.adoption_now or 0.0, 4)
            out["adoption_delta"] = round(self.adoption_delta, 4)
            if self.adoption_test is not None:
                out["adoption_test"] = _test_dict(self.adoption_test)
        return out


def _test_dict(test: PairedTest) -> dict[str, Any]:
    return {
        "p_loss": test.p_loss,
        "p_gain": test.p_gain,
        "method": test.method,
        "strata": test.strata,
    }


def unstable_cases(arm: ArmScore, base: dict[str, CaseVerdict] | None) -> list[UnstableCase]:
    """The arm's cases that ran now whose samples disagreed now or in the baseline."""
    out = []
    for case, info in sorted(arm.cases.items()):
        if info["status"] not in ("passed", "failed"):
            continue
        now = (int(info.get("samples_passed", 0)), int(info.get("samples", 0)))
        verdict = (base or {}).get(case)
        before = None
        if verdict is not None and verdict.samples is not None:
            before = verdict.counts
        if _unstable(now) or _unstable(before):
            out.append(UnstableCase(case, now, before))
    return out


def _floor_word(c: ArmComparison, k: int) -> str:
    if -c.passed_delta > k or c.adoption_regressed:
        return REGRESSION
    if c.lost:
        return WARNING
    return GAIN if c.passed_delta > k else SAME


def _significance_word(c: ArmComparison, alpha: float) -> str:
    loss = c.passed_delta < 0 and c.test is not None and c.test.p_loss < alpha
    if loss or c.adoption_significant(alpha):
        return REGRESSION
    if c.lost:
        return WARNING
    gain = c.passed_delta > 0 and c.test is not None and c.test.p_gain < alpha
    return GAIN if gain else SAME


def compare_arm(
    arm: ArmScore,
    baseline: Baseline,
    counts: dict[tuple[str, str], tuple[int, int]],
    settings: GateSettings,
) -> ArmComparison:
    """One arm against its baseline: the cases that ran in both, flips, adoption, the paired
    tests and both modes' words."""
    out = ArmComparison(arm.id, arm.channel, cases_run=len(arm.cases), unscored=arm.unscored)
    base = baseline.arms.get(arm.id)
    out.unstable = unstable_cases(arm, base)
    if base is None:
        return out
    out.cases_in_baseline = len(base)
    out.baseline_cases_run = len(set(arm.cases) & set(base))
    now = {c: i for c, i in arm.cases.items() if i["status"] in ("passed", "failed")}
    common = sorted(set(now) & set(base))
    out.compared = len(common)
    strata = []
    for case in common:
        was, label = base[case].passed, now[case]["label"]
        is_ = now[case]["status"] == "passed"
        out.passed_before += was
        out.passed_now += is_
        if was != is_:
            (out.lost if was else out.won).append(Flip(case, base[case].label, label))
        before = _side(was, base[case].counts, base[case].at_least)
        counts_now = (int(now[case].get("samples_passed", is_)), int(now[case].get("samples", 1)))
        after = _side(is_, counts_now, now[case].get("at_least"))
        strata.append(Stratum(before[0], before[1], after[0], after[1], before[2], after[2]))
    out.test = verdict_test(strata)
    if arm.channel == "tool" and common:
        tables = [
            Stratum(base[c].tool_calls, base[c].calls, *_tool(counts, arm.id, c)) for c in common
        ]
        b_calls, n_calls = sum(t.before for t in tables), sum(t.now for t in tables)
        if b_calls and n_calls:
            out.adoption_before = sum(t.before_passed for t in tables) / b_calls
            out.adoption_now = sum(t.now_passed for t in tables) / n_calls
            out.adoption_drop_allowed = settings.noise_floor / len(common)
            out.adoption_test = stratified(tables)
    out.words = {
        FLOOR: _floor_word(out, settings.noise_floor),
        SIGNIFICANCE: _significance_word(out, settings.alpha),
    }
    out.word = out.words[settings.mode]
    return out


def _side(verdict: bool, counts: tuple[int, int], at_least: object) -> tuple[int, int, int | None]:
    """(passed, samples, k) of one side of a case for the paired test. A record whose counts
    do not give its verdict under its rule (no counts, made by hand, say) is its verdict as
    one sample, so the test never reads a flip the gate did not count."""
    passed, samples = counts
    k = at_least if type(at_least) is int and at_least > 0 else None
    if samples <= 0 or not 0 <= passed <= samples or (passed >= needed(k, samples)) != verdict:
        return int(verdict), 1, None
    return passed, samples, k


def _tool(counts: dict[tuple[str, str], tuple[int, int]], arm: str, case: str) -> tuple[int, int]:
    """(tool_calls, calls) of one case now, in Stratum order."""
    calls, tool = counts.get((arm, case), (0, 0))
    return tool, calls


def messages(c: ArmComparison, settings: GateSettings) -> tuple[list[str], list[str], list[str]]:
    """Regression, warning and gain lines of one arm, in the words of the mode in force."""
    if settings.mode == SIGNIFICANCE:
        return _significance_messages(c, settings.alpha)
    k = settings.noise_floor
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


def _significance_messages(
    c: ArmComparison, alpha: float
) -> tuple[list[str], list[str], list[str]]:
    regressions, warnings, gains = [], [], []
    flips = ", ".join(map(str, c.lost))
    test = c.test
    at = f"{ALPHA} = {alpha:g}"
    if test is not None and c.passed_delta < 0 and test.p_loss < alpha:
        regressions.append(
            f"{c.arm}: passed {c.passed_before} -> {c.passed_now} of {c.compared}, "
            f"significant at {at} (p = {p_text(test.p_loss)}, {test.method}); "
            f"pass -> fail: {flips}"
        )
    elif c.lost:
        p = p_text(test.p_loss if test else None)
        warnings.append(f"{c.arm}: pass -> fail, not significant at {at} (p = {p}): {flips}")
    if c.adoption_significant(alpha) and c.adoption_test is not None:
        regressions.append(
            f"{c.arm}: adoption {c.adoption_before:.0%} -> {c.adoption_now:.0%}, significant at "
            f"{at} (p = {p_text(c.adoption_test.p_loss)}, {c.adoption_test.method} over "
            "tool-channel samples)"
        )
    if test is not None and c.words.get(SIGNIFICANCE) == GAIN:
        gains.append(
            f"{c.arm}: passed {c.passed_before} -> {c.passed_now} (p = {p_text(test.p_gain)}); "
            "accept with --cardprobe-update-baseline "
            f"(fail -> pass: {', '.join(f.case for f in c.won)})"
        )
    return regressions, warnings, gains
