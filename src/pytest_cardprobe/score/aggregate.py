"""Fold per-test results into per-arm scores (the unit the scoreboard and the gate use)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_cardprobe.score.bounds import figure
from pytest_cardprobe.score.canary import CANARY_VERDICTS, NOT_MEASURED, Canary, canaries
from pytest_cardprobe.score.rule import label_of, sample_counts
from pytest_cardprobe.score.stats import share
from pytest_cardprobe.suite.records import CALL_CHANNEL, REQUIRED
from pytest_cardprobe.types import CALL_CLASSES, CARD_CLASSES, ArmKeyed, ProbeResult, Status

__all__ = [
    "CANARY_VERDICTS",
    "NOT_MEASURED",
    "ArmScore",
    "Canary",
    "aggregate",
    "canaries",
]

# Scoreboard columns of card arms and of call arms (channel ``call``), in the order
# types.py declares them.
FAILURE_CLASSES: tuple[str, ...] = tuple(c.value for c in CARD_CLASSES)
CALL_FAILURE_CLASSES: tuple[str, ...] = tuple(c.value for c in CALL_CLASSES)


def classes_of(channel: str) -> tuple[str, ...]:
    """The failure-class columns of an arm on ``channel``."""
    return CALL_FAILURE_CLASSES if channel == CALL_CHANNEL else FAILURE_CLASSES


#: What a forced arm shows for adoption (a cell), and why (the JSON report's note).
ADOPTION_FORCED = "n/a (forced)"
ADOPTION_FORCED_WHY = (
    "not measured: in a forced arm the way of forcing decides the route (Ollama's format: "
    "a call written as text, recovered; tool_choice: a structured call), not the model"
)
ROUTES: tuple[str, ...] = ("tool_calls", "recovered", "content", "swallowed")


@dataclass
class RetryCounts:
    """The retry channel's table: what failed to parse, and what the retry made of it."""

    parse_failures: int = 0  # first (prose) replies that failed to parse
    retries: int = 0  # retries that got a reply
    recovered: int = 0  # retries that passed
    routes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROUTES, 0))

    def add(self, passed: bool, route: str | None) -> None:
        """Count one sample whose first reply failed to parse."""
        self.parse_failures += 1
        if route is None:
            return  # the retry itself hit an infra error
        self.retries += 1
        self.recovered += passed
        self.routes[route] = self.routes.get(route, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "parse_failures": self.parse_failures,
            "retries": self.retries,
            "recovered": self.recovered,
            "routes": dict(sorted(self.routes.items())),
        }


@dataclass
class ArmScore(ArmKeyed):
    """Scores of one arm: suite x model x channel x condition."""

    suite: str
    model: str
    channel: str
    condition: str
    passed: int = 0
    scored: int = 0  # cases with a verdict from the model (not infra, not errored)
    unscored: int = 0  # cases left without a verdict: infra or a test error
    unsupported: int = 0
    calls: int = 0  # samples that produced a reply
    routes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROUTES, 0))
    failures: dict[str, int] = field(default_factory=dict)
    # Samples that passed, per route: with ``routes`` this splits the pass rate by route.
    route_passed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROUTES, 0))
    retry: RetryCounts = field(default_factory=lambda: RetryCounts())
    split: list[str] = field(default_factory=list)  # unstable now: the samples disagreed
    cases: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Judged cases' samples: passed, and judged; cases whose every sample passed (pass^k);
    # cases judged by a k-of-n rule with k < n.
    samples_passed: int = 0
    samples_judged: int = 0
    all_passed: int = 0
    relaxed: int = 0
    # Model identity seen in this arm's cassettes, and "old → new" when a live run saw it change.
    digests: list[str] = field(default_factory=list)
    model_changed: list[str] = field(default_factory=list)
    # "ollama 0.11.4 → ollama 0.33.0" when a live run found another server than the recording's.
    server_changed: list[str] = field(default_factory=list)
    # Streamed samples: how many there were, and in how many a call written as text reached a
    # naive streaming client (every token shown) or a careful one (judge/withhold.exposure).
    streamed: int = 0
    leaked: int = 0
    careful_leaked: int = 0
    # Per-sample server figures: latency (server total, else wall clock), tokens, generation time.
    latencies: list[float] = field(default_factory=list)
    prompt_tokens: float = 0
    generated_tokens: float = 0
    generate_s: float = 0
    args_as_string: int = 0  # call arms: calls whose arguments came as a JSON string
    # Per judged case, its samples' failure classes counted (the offered-vs-forced table
    # compares two arms over the cases both ran).
    case_failures: dict[str, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in classes_of(self.channel):
            self.failures.setdefault(name, 0)

    @property
    def is_call_arm(self) -> bool:
        """An arm of a call suite (channel ``call``)."""
        return self.channel == CALL_CHANNEL

    @property
    def forced(self) -> bool:
        """A call arm of the ``required`` condition: every turn that must call was forced."""
        return self.is_call_arm and self.condition == REQUIRED

    # The arm's key as the scoreboard code names it; written once, in types.ArmKeyed.
    key = ArmKeyed.arm
    id = ArmKeyed.arm_id

    def by_route(self) -> dict[str, tuple[int, int]]:
        """Per route that carried any sample: (samples passed, samples)."""
        return {r: (self.route_passed.get(r, 0), n) for r, n in sorted(self.routes.items()) if n}

    @property
    def adoption_counts(self) -> tuple[int, int] | None:
        """(structured ``tool_calls``, calls it is a share of); None off the tool channel.

        In a call arm, where declining is right for some cases, the share is taken over the
        samples whose first turn made a call at all: structured, or written as text. A forced
        arm has none: the way of forcing decides the route (Ollama's format makes every call
        text, OpenAI's tool_choice a structured one), so the share would measure the server.
        """
        tool = self.routes["tool_calls"]
        if self.forced:
            return None
        if self.is_call_arm:
            made = tool + self.routes["recovered"]
            return (tool, made) if made else None
        if self.channel != "tool" or not self.calls:
            return None
        return tool, self.calls

    @property
    def adoption(self) -> float | None:
        """Share of calls routed through structured ``tool_calls`` (tool channel only)."""
        counts = self.adoption_counts
        return None if counts is None else counts[0] / counts[1]

    def intervals(self) -> dict[str, Any]:
        """The arm's shares with 95 % Wilson intervals: cases passed (by the case rule),
        samples passed, pass^k (cases whose every sample passed; with a k-of-n rule only)
        and adoption (tool arms)."""
        out: dict[str, Any] = {
            "cases": share(self.passed, self.scored),
            "samples": share(self.samples_passed, self.samples_judged),
        }
        if self.relaxed:
            out["pass_all"] = share(self.all_passed, self.scored)
        if self.adoption_counts is not None:
            out["adoption"] = share(*self.adoption_counts)
        return out

    def add(self, result: ProbeResult) -> None:
        """Count one test's result into this arm."""
        if result.model_digest and result.model_digest not in self.digests:
            self.digests.append(result.model_digest)
        if result.model_changed and result.model_changed not in self.model_changed:
            self.model_changed.append(result.model_changed)
        if result.server_changed and result.server_changed not in self.server_changed:
            self.server_changed.append(result.server_changed)
        for sample in result.samples:
            # Figures outside 0..MAX_FIGURE (a hostile server's 1e308) are left out, so no
            # sum below overflows to infinity and the session end cannot crash on them.
            figures = {k: figure(v) for k, v in sample.figures.items()}
            latency = figures.get("total_s")
            latency = figures.get("wall_s") if latency is None else latency
            if latency is not None:
                self.latencies.append(latency)
            self.prompt_tokens += figures.get("prompt_tokens") or 0
            self.generated_tokens += figures.get("generated_tokens") or 0
            self.generate_s += figures.get("generate_s") or 0
            if sample.failure:
                self.failures[sample.failure] = self.failures.get(sample.failure, 0) + 1
            if sample.route:
                self.calls += 1
                self.routes[sample.route] = self.routes.get(sample.route, 0) + 1
                if sample.passed:
                    self.route_passed[sample.route] = self.route_passed.get(sample.route, 0) + 1
            if sample.stream is not None:
                self.streamed += 1
                self.leaked += sample.stream.get("naive_leak", 0) > 0
                self.careful_leaked += sample.stream.get("careful_leak", 0) > 0
            if sample.retry_of is not None:
                self.retry.add(sample.passed, sample.route)
            self.args_as_string += sample.args_as_string or 0
        if result.status == Status.UNSUPPORTED:
            self.unsupported += 1
            return
        if result.status in (Status.INFRA, Status.ERROR):
            self.unscored += 1
            self.cases[result.case] = {"status": result.status, "label": result.message or ""}
            return
        self.scored += 1
        ok = result.status == Status.PASSED
        self.passed += ok
        if result.split:
            self.split.append(result.case)
        passed, judged = sample_counts(result)
        self.samples_passed += passed
        self.samples_judged += judged
        self.all_passed += bool(judged) and passed == judged
        entry: dict[str, Any] = {
            "status": "passed" if ok else "failed",
            "label": label_of(result),
            "samples_passed": passed,
            "samples": judged,
        }
        if result.at_least is not None and result.at_least < judged:
            self.relaxed += 1
            entry["at_least"] = result.at_least
        self.cases[result.case] = entry
        found: dict[str, int] = {}
        for sample in result.samples:
            if sample.failure and sample.failure != "infra":
                found[sample.failure] = found.get(sample.failure, 0) + 1
        self.case_failures[result.case] = found

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form with stable ordering."""
        data = {
            "suite": self.suite,
            "model": self.model,
            "channel": self.channel,
            "condition": self.condition,
            "passed": self.passed,
            "scored": self.scored,
            "unscored": self.unscored,
            "unsupported": self.unsupported,
            "calls": self.calls,
            "routes": dict(sorted(self.routes.items())),
            "route_passed": dict(sorted(self.route_passed.items())),
            "retry": self.retry.to_dict() if self.channel == "retry" else None,
            "adoption": None if self.adoption is None else round(self.adoption, 4),
            "failures": {k: self.failures.get(k, 0) for k in classes_of(self.channel)},
            "split": sorted(self.split),
            "intervals": self.intervals(),
            "cases": {k: self.cases[k] for k in sorted(self.cases)},
            "model_digest": sorted(self.digests),
            "model_changed": sorted(self.model_changed),
            "server_changed": sorted(self.server_changed),
            "stream": {
                "samples": self.streamed,
                "leaked": self.leaked,
                "careful_leaked": self.careful_leaked,
            },
            "timing": self.timing(),
        }
        if self.is_call_arm:
            data["args_as_string"] = self.args_as_string
        if self.forced:
            data["forced"] = True
            data["adoption_note"] = ADOPTION_FORCED_WHY
        return data

    def timing(self) -> dict[str, Any]:
        """Latency and token figures of the arm's samples (reported, never gated)."""
        rate = self.generated_tokens / self.generate_s if self.generate_s else None
        if rate is not None and not math.isfinite(rate):
            rate = None  # tokens over a subnormal number of seconds
        return {
            "samples": len(self.latencies),
            "latency_median_s": _round(statistics.median(self.latencies))
            if self.latencies
            else None,
            "latency_p95_s": _round(percentile(self.latencies, 95)),
            "prompt_tokens": int(self.prompt_tokens),
            "generated_tokens": int(self.generated_tokens),
            "tokens_per_s": _round(rate),
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def percentile(values: Sequence[float], pct: float) -> float | None:
    """Nearest-rank percentile (the smallest value with ``pct`` % of values at or below it)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def aggregate(results: Iterable[ProbeResult]) -> list[ArmScore]:
    """Scores per arm, sorted by arm key."""
    arms: dict[tuple[str, str, str, str], ArmScore] = {}
    for result in results:
        arm = arms.get(result.arm)
        if arm is None:
            arm = arms[result.arm] = ArmScore(*result.arm)
        arm.add(result)
    return [arms[k] for k in sorted(arms)]
