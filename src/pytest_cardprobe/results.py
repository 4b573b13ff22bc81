"""Plain records of what each sample and each test produced.

These are the only values that cross from workers to the controller, so they convert to
and from JSON-able dicts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pytest_cardprobe.judge import Verdict

REPLY_SHOWN = 400  # characters of a raw reply kept in reports

STATUSES = ("passed", "failed", "infra", "unsupported", "error")


def trim(text: str, limit: int = REPLY_SHOWN) -> str:
    """``text`` cut to ``limit`` characters with a marker saying how much was dropped."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


@dataclass
class SampleRecord:
    """One model call: how it travelled and what the judge said."""

    index: int
    route: str | None  # None when the call never produced a reply (infra)
    passed: bool
    label: str
    failure: str | None
    types: list[str] = field(default_factory=list)
    unknown_types: list[str] = field(default_factory=list)
    reply: str = ""
    finish_reason: str | None = None

    @classmethod
    def from_verdict(
        cls, index: int, route: str | None, verdict: Verdict, reply: str, finish: str | None
    ) -> SampleRecord:
        """Build from a judge verdict."""
        return cls(
            index=index,
            route=route,
            passed=verdict.passed,
            label=verdict.label,
            failure=verdict.failure.value if verdict.failure else None,
            types=list(verdict.types),
            unknown_types=list(verdict.unknown_types),
            reply=trim(reply),
            finish_reason=finish,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SampleRecord:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)


@dataclass
class ProbeResult:
    """The outcome of one generated test (or one fixture-driven test)."""

    nodeid: str
    suite: str
    model: str
    channel: str
    condition: str
    case: str
    status: str
    samples: list[SampleRecord] = field(default_factory=list)
    message: str | None = None

    @property
    def arm(self) -> tuple[str, str, str, str]:
        """(suite, model, channel, condition)."""
        return (self.suite, self.model, self.channel, self.condition)

    @property
    def split(self) -> bool:
        """Samples disagreed: some passed and some failed."""
        verdicts = {s.passed for s in self.samples if s.failure != "infra"}
        return len(verdicts) == 2

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        data = asdict(self)
        data["samples"] = [s.to_dict() for s in self.samples]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeResult:
        """Inverse of :meth:`to_dict`."""
        fields = dict(data)
        fields["samples"] = [SampleRecord.from_dict(s) for s in data.get("samples", [])]
        return cls(**fields)

    def headline(self) -> str:
        """One line for pytest's short test summary: what went wrong first."""
        if self.message:
            return f"{self.status}: {self.message}"
        failed = [s for s in self.samples if not s.passed]
        if not failed:
            return self.status
        first = failed[0]
        return (
            f"{len(failed)} of {len(self.samples)} samples failed; "
            f"sample {first.index + 1}: [{first.route or '-'}] {first.label}"
        )

    def describe(self) -> str:
        """The failure report: every sample's label, route and trimmed raw reply."""
        lines = [self.headline()]
        total = len(self.samples)
        for s in self.samples:
            mark = "pass" if s.passed else "FAIL"
            lines.append(
                f"  sample {s.index + 1}/{total} {mark} [{s.route or '-'}] {s.label}"
                + (f" (finish: {s.finish_reason})" if s.finish_reason else "")
            )
            if s.unknown_types:
                lines.append(f"    unknown element types: {', '.join(s.unknown_types)}")
            if s.reply:
                body = s.reply.replace("\n", "\n    | ")
                lines.append(f"    | {body}")
        return "\n".join(lines)
