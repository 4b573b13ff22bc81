"""Offered against forced: per call suite and model, the cold arm (tools offered, the model
free to answer in prose) beside the ``required`` arm (the call forced), over the cases both
ran.

The two answer different questions. Offered: does the model call when it should? Forced:
when it must call, does it pick the right tool with the right arguments? A drop in the
offered arm with the forced one steady says the model lost its willingness (the prompt);
a drop in the forced arm says the tool descriptions got worse. Adoption means nothing for
the forced arm: the way of forcing decides the route (Ollama's ``format`` gives a call as
text, ``tool_choice`` a structured one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_cardprobe.score.aggregate import ADOPTION_FORCED, ArmScore
from pytest_cardprobe.score.stats import share

#: The offered arm a forced arm is read against: the same question asked cold.
OFFERED_CONDITION = "cold"
#: Failure classes counted as argument failures (the schema broken, or a matcher missed).
ARGUMENT_CLASSES: tuple[str, ...] = ("bad_arguments", "wrong_arguments")


@dataclass(frozen=True)
class Side:
    """One arm's figures over the cases of a pair."""

    passed: int
    scored: int
    samples_passed: int
    samples: int
    failures: dict[str, int]

    @property
    def wrong_tool(self) -> int:
        """Samples that called a tool in place of the expected one."""
        return self.failures.get("wrong_tool", 0)

    @property
    def arguments(self) -> int:
        """Samples with the right tool and arguments that break its schema or a matcher."""
        return sum(self.failures.get(c, 0) for c in ARGUMENT_CLASSES)

    @property
    def no_call(self) -> int:
        """Samples without a call where one was expected: declined, or forcing ignored."""
        return self.failures.get("declined", 0) + self.failures.get("unforced", 0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, with the cases' and samples' shares and intervals."""
        return {
            "cases": share(self.passed, self.scored),
            "samples": share(self.samples_passed, self.samples),
            "wrong_tool": self.wrong_tool,
            "arguments": self.arguments,
            "no_call": self.no_call,
            "failures": dict(sorted(self.failures.items())),
        }


def side(arm: ArmScore, cases: Sequence[str]) -> Side:
    """``arm``'s figures over ``cases`` (each a judged case of the arm)."""
    failures: dict[str, int] = {}
    passed = samples_passed = samples = 0
    for case in cases:
        info = arm.cases[case]
        passed += info["status"] == "passed"
        samples_passed += int(info.get("samples_passed", 0))
        samples += int(info.get("samples", 0))
        for name, count in arm.case_failures.get(case, {}).items():
            failures[name] = failures.get(name, 0) + count
    return Side(passed, len(cases), samples_passed, samples, failures)


@dataclass(frozen=True)
class Pair:
    """A forced arm and the offered arm of the same suite and model, over shared cases."""

    suite: str
    model: str
    forced: ArmScore
    offered: ArmScore | None
    cases: tuple[str, ...]

    @property
    def forced_side(self) -> Side:
        return side(self.forced, self.cases)

    @property
    def offered_side(self) -> Side | None:
        return None if self.offered is None else side(self.offered, self.cases)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (the JSON report's ``offered_vs_forced``)."""
        offered = self.offered_side
        return {
            "suite": self.suite,
            "model": self.model,
            "offered_arm": None if self.offered is None else self.offered.id,
            "forced_arm": self.forced.id,
            "cases": list(self.cases),
            "offered": None if offered is None else offered.to_dict(),
            "forced": {
                **self.forced_side.to_dict(),
                "routes": {r: n for r, n in sorted(self.forced.routes.items()) if n},
                "adoption": ADOPTION_FORCED,
            },
        }


def _judged(arm: ArmScore) -> set[str]:
    return {c for c, i in arm.cases.items() if i["status"] in ("passed", "failed")}


def pairs(arms: Sequence[ArmScore]) -> list[Pair]:
    """One pair per forced arm, with its suite and model's cold arm when that ran; the cases
    are those judged in both (the forced arm's own when no cold arm ran)."""
    by_key = {(a.suite, a.model, a.channel, a.condition): a for a in arms}
    found = []
    for arm in arms:
        if not arm.forced:
            continue
        offered = by_key.get((arm.suite, arm.model, arm.channel, OFFERED_CONDITION))
        cases = _judged(arm) & _judged(offered) if offered is not None else _judged(arm)
        found.append(Pair(arm.suite, arm.model, arm, offered, tuple(sorted(cases))))
    return found
