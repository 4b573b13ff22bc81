"""The canary: one model's tool-calling capability, from a call suite's canary cases.

A canary pairs a case that needs a tool (``needs_tool``) with one that needs none
(``no_tool``). Offered the tools, does the model call for the first and abstain on the
second? Under the ``required`` condition the ``needs_tool`` side is asked again with the call
forced: that reading says whether a model that declines when offered can call at all
(``supportedButDeclines`` *with evidence*, when its forced calls are right). Forced samples
never count as offered calls: a forced call says nothing about willingness.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pytest_cardprobe.suite.records import REQUIRED
from pytest_cardprobe.types import ProbeResult, Status

#: Canary verdicts, best first.
CANARY_VERDICTS: tuple[str, ...] = ("supported", "supportedButDeclines", "overCalls", "unsupported")
#: The word of a canary whose needs_tool or no_tool side did not run this time.
NOT_MEASURED = "not measured"
#: How each verdict reads in the terminal, Markdown and HTML reports. The baseline and the
#: JSON report keep the words of :data:`CANARY_VERDICTS` (they are data: a baseline written
#: before these words existed gates unchanged, and a changed word would be a regression).
CANARY_WORDS: dict[str, str] = {
    "supported": "supports tools",
    "supportedButDeclines": "declines although supported",
    "overCalls": "calls where no tool is needed",
    "unsupported": "unsupported",
}


def canary_word(verdict: str) -> str:
    """A canary verdict as a report shows it (an unknown word as it is)."""
    return CANARY_WORDS.get(verdict, verdict)


@dataclass
class Canary:
    """One model's tool-calling capability, from a call suite's canary cases."""

    suite: str
    model: str
    needs_called: int = 0  # offered needs_tool samples whose first turn made a call
    needs_total: int = 0
    no_abstained: int = 0  # no_tool samples that made no call
    no_total: int = 0
    unsupported: bool = False
    # The forced reading: needs_tool samples asked under ``required``, and those that passed
    # (the right tool with the right arguments).
    forced_passed: int = 0
    forced_total: int = 0

    @property
    def key(self) -> str:
        """``suite/model``, the baseline key."""
        return f"{self.suite}/{self.model}"

    @property
    def measured(self) -> bool:
        """Both sides were judged: at least one needs_tool and one no_tool sample (or the
        server refused tools). A verdict from one side only is no verdict: a ``-k`` run that
        selects one canary case must not compare or record one."""
        return self.unsupported or (self.needs_total > 0 and self.no_total > 0)

    @property
    def verdict(self) -> str:
        """``unsupported`` (the server refuses tools), ``overCalls`` (a call where none was
        needed), ``supportedButDeclines`` (no call where one was needed), else ``supported``;
        ``not measured`` when one side did not run (see :attr:`measured`)."""
        if not self.measured:
            return NOT_MEASURED
        if self.unsupported:
            return "unsupported"
        if self.no_abstained < self.no_total:
            return "overCalls"
        if self.needs_called < self.needs_total:
            return "supportedButDeclines"
        return "supported"

    @property
    def evidence(self) -> str | None:
        """For ``supportedButDeclines``: what the forced reading says about it, when it ran.

        A forced call that passed shows the model can call, and so that it declines when
        offered by choice (the prompt, the tool descriptions); none passing shows no such
        thing. None without a forced reading or for another verdict.
        """
        if self.verdict != "supportedButDeclines" or not self.forced_total:
            return None
        reading = f"{self.forced_passed}/{self.forced_total} samples"
        if self.forced_passed:
            return f"declines when offered, calls correctly when forced ({reading})"
        return f"no evidence: when forced it never called correctly (0/{self.forced_total})"

    def forced_text(self) -> str:
        """The forced reading as a clause of the canary line; empty when it did not run."""
        if not self.forced_total:
            return ""
        return f"; forced: called correctly {self.forced_passed}/{self.forced_total} samples"

    def line(self) -> str:
        """One scoreboard line."""
        if self.unsupported:
            return f"canary {self.key}: unsupported (the server refuses tools)"
        if not self.measured:
            missing = [
                f"{side} 0/0"
                for side, n in (("needs_tool", self.needs_total), ("no_tool", self.no_total))
                if not n
            ]
            ran = (
                f"needs_tool called {self.needs_called}/{self.needs_total}"
                if self.needs_total
                else f"no_tool abstained {self.no_abstained}/{self.no_total}"
                if self.no_total
                else "no canary sample was judged"
            )
            return (
                f"canary {self.key}: {NOT_MEASURED} ({', '.join(missing)}) — {ran}"
                f"{self.forced_text()}; a verdict needs both sides, so none is compared or "
                "written to the baseline"
            )
        # The evidence names the forced reading itself; otherwise the reading is a clause.
        evidence = f" — {self.evidence}" if self.evidence else self.forced_text()
        return (
            f"canary {self.key}: {canary_word(self.verdict)} — needs_tool called "
            f"{self.needs_called}/{self.needs_total}, no_tool abstained "
            f"{self.no_abstained}/{self.no_total} samples{evidence}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The canary's readings for the JSON report (the baseline keeps the verdict only)."""
        return {
            "verdict": self.verdict,
            "needs_tool": {"called": self.needs_called, "samples": self.needs_total},
            "no_tool": {"abstained": self.no_abstained, "samples": self.no_total},
            "forced": (
                {"passed": self.forced_passed, "samples": self.forced_total}
                if self.forced_total
                else None
            ),
            "evidence": self.evidence,
        }


def canaries(results: Iterable[ProbeResult]) -> list[Canary]:
    """One canary per call suite x model that ran canary cases, sorted by key."""
    found: dict[tuple[str, str], Canary] = {}
    for result in results:
        if result.canary is None:
            continue
        canary = found.setdefault((result.suite, result.model), Canary(result.suite, result.model))
        if result.status == Status.UNSUPPORTED:
            if result.condition != REQUIRED:
                # A server that cannot force (its format refused) still takes tools.
                canary.unsupported = True
            continue
        for sample in result.samples:
            if sample.failure == "infra" or sample.calls is None:
                continue
            if result.condition == REQUIRED:
                if result.canary == "needs_tool":
                    canary.forced_total += 1
                    canary.forced_passed += sample.passed
            elif result.canary == "needs_tool":
                canary.needs_total += 1
                canary.needs_called += sample.called
            else:
                canary.no_total += 1
                canary.no_abstained += not sample.called
    return [found[k] for k in sorted(found)]
