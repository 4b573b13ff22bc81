"""Expand suites into probes: one per case x model x channel x condition."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pytest_cardprobe.suite.loader import Case, Suite


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
    def skip_reason(self) -> str | None:
        """Why this combination is not asked at all, or None when it is."""
        if self.channel == "prose":
            return None
        if self.condition == "seeded":
            return (
                f"the seeded condition shows the model card JSON as an earlier prose answer; "
                f"the {self.channel} channel cannot carry it"
            )
        if self.condition == "schema":
            return (
                f"the schema condition constrains a prose reply to card JSON; "
                f"the {self.channel} channel does not answer in prose"
            )
        return None

    @property
    def name(self) -> str:
        """The pytest item name, e.g. ``date[smollm2:135m-tool-cold]``."""
        return f"{self.case.id}[{self.param_id}]"


def expand(
    suite: Suite,
    models: Sequence[str],
    *,
    channels: Sequence[str] | None = None,
    conditions: Sequence[str] | None = None,
) -> Iterator[Probe]:
    """Yield the probes of ``suite`` in a stable order, keeping only the given filters."""
    for case in suite.cases:
        for model in models:
            for channel in suite.channels:
                if channels and channel not in channels:
                    continue
                for condition in suite.conditions:
                    if conditions and condition not in conditions:
                        continue
                    yield Probe(suite, case, model, channel, condition)
