"""Expand suites into probes: one per case x model x channel x condition that is asked.

A channel that cannot carry a condition (the tool and retry channels with ``seeded`` or
``schema``) makes no probe at all: there is nothing to ask, so it is not a test. Nor does a
call case that expects no call under the ``required`` condition, which forces a call.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pytest_cardprobe.suite.loader import REQUIRED, Case, Suite


@dataclass(frozen=True)
class Probe:
    """One generated test: a case asked of one model on one channel under one condition."""

    suite: Suite
    case: Case
    model: str
    channel: str
    condition: str

    @property
    def param_id(self) -> str:
        """The bracketed part of the test id, e.g. ``smollm2:135m-tool-cold``."""
        return f"{self.model}-{self.channel}-{self.condition}"

    @property
    def name(self) -> str:
        """The pytest item name, e.g. ``date[smollm2:135m-tool-cold]``."""
        return f"{self.case.id}[{self.param_id}]"


def not_asked(channel: str, condition: str) -> str | None:
    """Why ``channel`` cannot carry ``condition``, so that no probe is made; None when it can.

    Both opt-in conditions shape a prose reply: ``seeded`` shows card JSON as an earlier prose
    answer and ``schema`` constrains a prose reply to card JSON. The tool channel does not
    answer in prose, and the retry channel's second call goes through the tool.
    """
    if channel == "prose" or condition not in ("seeded", "schema"):
        return None
    if condition == "seeded":
        return (
            "the seeded condition shows the model card JSON as an earlier prose answer; "
            f"the {channel} channel cannot carry it"
        )
    return (
        "the schema condition constrains a prose reply to card JSON; "
        f"the {channel} channel does not answer in prose"
    )


def case_not_asked(case: Case, condition: str) -> str | None:
    """Why ``case`` is not asked under ``condition``; None when it is.

    The ``required`` condition forces every request to call a tool, so a case whose right
    answer is no call (``no_call``, the irrelevance cases and a canary's ``no_tool`` side)
    cannot be answered right under it: it is left out rather than failed by construction.
    """
    if condition == REQUIRED and not expects_call(case):
        return "the required condition forces a call; a case that expects none is not asked"
    return None


def expects_call(case: Case) -> bool:
    """A call case that expects at least one call (what the ``required`` condition asks)."""
    return case.expect is not None and case.expect.kind != "no_call"


def expand(
    suite: Suite,
    models: Sequence[str],
    *,
    channels: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
) -> Iterator[Probe]:
    """Yield the probes of ``suite`` in a stable order, keeping only the given filters and
    leaving out the combinations that are never asked (:func:`not_asked`)."""
    for case in suite.cases:
        for model in models:
            for channel in suite.channels:
                if channels and channel not in channels:
                    continue
                for condition in suite.conditions:
                    if conditions and condition not in conditions:
                        continue
                    if not_asked(channel, condition) or case_not_asked(case, condition):
                        continue
                    yield Probe(suite, case, model, channel, condition)


def asked_arms(suite: Suite) -> frozenset[tuple[str, str]]:
    """The (channel, condition) pairs of ``suite`` that are asked (its arms, for any model)."""
    if not suite.cases:
        return frozenset()
    return frozenset(
        (channel, condition)
        for channel in suite.channels
        for condition in suite.conditions
        if not_asked(channel, condition) is None
    )


def run_order(probes: Sequence[Probe], models: Sequence[str]) -> list[int]:
    """Positions of ``probes`` sorted model → suite → channel → condition → case.

    One model's tests run together so a server that holds one model at a time loads each
    model once, and tests sharing a system prompt run back to back so the server's
    prompt-prefix cache is reused. Models keep the order they were given in; suites the order
    they were collected in; channels, conditions and cases the order of their suite file.
    """
    suite_rank: dict[str, int] = {}
    case_rank: dict[tuple[str, str], int] = {}
    for probe in probes:
        path = str(probe.suite.path)
        if path not in suite_rank:
            suite_rank[path] = len(suite_rank)
            for index, case in enumerate(probe.suite.cases):
                case_rank[(path, case.id)] = index
    model_rank = {model: index for index, model in reversed(list(enumerate(models)))}

    def rank(position: int) -> tuple[int, int, int, int, int]:
        probe = probes[position]
        suite = probe.suite
        path = str(suite.path)
        return (
            model_rank.get(probe.model, len(model_rank)),
            suite_rank[path],
            suite.channels.index(probe.channel) if probe.channel in suite.channels else 0,
            suite.conditions.index(probe.condition) if probe.condition in suite.conditions else 0,
            case_rank.get((path, probe.case.id), 0),
        )

    return sorted(range(len(probes)), key=rank)
