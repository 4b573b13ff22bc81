"""The plain records that cross stages: request, reply, tool call, verdict, results.

A leaf module: it imports nothing of this package, so every stage may import it (see
docs/design.md §4). Sample and test results convert to and from JSON-able dicts
because they travel from xdist workers to the controller.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]


@dataclass
class ChatRequest:
    """What is asked of a model, independent of the wire API.

    Mutable on purpose: the ``pytest_cardprobe_adjust_request`` hook may edit it before it
    is sent.
    """

    model: str
    messages: list[Message]
    tools: list[dict[str, Any]] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    # Reasoning level: off, on, low, medium or high (the wire maps it per API).
    think: str = "off"
    # ``"required"``: the model must call one of ``tools`` (the ``required`` condition of a
    # call suite). The wire says it per API: OpenAI's ``tool_choice``, and on Ollama, which
    # has no ``tool_choice``, a ``format`` JSON Schema admitting exactly the declared calls.
    tool_choice: str | None = None

    @property
    def tool_names(self) -> list[str]:
        """Names of the declared functions."""
        names = []
        for tool in self.tools:
            fn = tool.get("function", tool)
            if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
                names.append(fn["name"])
        return names


@dataclass(frozen=True)
class ToolCall:
    """One structured call the server parsed out of the model's reply."""

    name: str
    arguments: dict[str, Any]
    # Set when the wire carried arguments that are not a JSON object (OpenAI sends a string).
    arguments_error: str | None = None
    # The server's id for the call (OpenAI ``tool_calls[].id``); a tool result quotes it back.
    # Not part of equality: the same call is the same name and arguments, whatever its id.
    id: str | None = field(default=None, compare=False)
    # The arguments arrived as a JSON string where the wire promises an object (an Ollama
    # ``/api/chat`` reply, or an OpenAI string that held another JSON string) and were decoded.
    arguments_as_string: bool = False


@dataclass(frozen=True)
class ChatReply:
    """A whole assistant turn, however it travelled (one body or a stream of chunks)."""

    content: str
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    # A streamed reply's content as it arrived, one piece per chunk that carried any (empty
    # for a reply that came whole): what a client showing tokens would have shown, in order.
    pieces: tuple[str, ...] = ()
    # The server's own word that it could not parse the tool call the model wrote (its
    # parser's message): the turn failed, and it is the model's failure (docs/design.md §7).
    unparsed: str | None = None


class Status(enum.StrEnum):
    """A probe test's status (:attr:`ProbeResult.status`): the model's verdict (``passed``,
    ``failed``), or why there is none (``infra``: the server failed; ``error``: the test could
    not ask; ``unsupported``: the server cannot serve the arm). Str-valued: reports and the
    JSON a worker sends carry the plain string."""

    PASSED = "passed"
    FAILED = "failed"
    INFRA = "infra"
    ERROR = "error"
    UNSUPPORTED = "unsupported"


#: The statuses that carry the model's verdict (the others are no observation).
VERDICT_STATUSES = (Status.PASSED, Status.FAILED)


class FailureClass(enum.StrEnum):
    """Why a sample failed; ``infra`` is never blamed on the model."""

    MALFORMED = "malformed"
    DECLINED = "declined"
    WRONG_ELEMENT = "wrong_element"
    # The reply was cut by the token limit (finish reason ``length``) before it was a card.
    TRUNCATED = "truncated"
    INFRA = "infra"
    # Call suites (``judge: call``) add these; see docs/guide/own-tools.md.
    OVER_CALL = "over_call"
    # A turn that had to call (the ``required`` condition) came back without a call: the
    # server did not enforce the forcing (Ollama's ``/v1`` drops ``tool_choice``).
    UNFORCED = "unforced"
    # Fewer calls of a name than the case expects (a dropped parallel call, a loop that
    # stopped early), or more: counts, where ``wrong_tool`` is a name in place of another.
    MISSING_CALL = "missing_call"
    EXTRA_CALL = "extra_call"
    WRONG_TOOL = "wrong_tool"
    UNKNOWN_TOOL = "unknown_tool"
    BAD_ARGUMENTS = "bad_arguments"
    WRONG_ARGUMENTS = "wrong_arguments"
    WRONG_FINAL = "wrong_final"
    LOOP_LIMIT = "loop_limit"


#: The failure classes a card judge gives, in scoreboard column order.
CARD_CLASSES: tuple[FailureClass, ...] = (
    FailureClass.MALFORMED,
    FailureClass.DECLINED,
    FailureClass.WRONG_ELEMENT,
    FailureClass.TRUNCATED,
    FailureClass.INFRA,
)
#: The failure classes the call judge gives, in scoreboard column order.
CALL_CLASSES: tuple[FailureClass, ...] = (
    FailureClass.DECLINED,
    FailureClass.UNFORCED,
    FailureClass.OVER_CALL,
    FailureClass.MISSING_CALL,
    FailureClass.EXTRA_CALL,
    FailureClass.WRONG_TOOL,
    FailureClass.UNKNOWN_TOOL,
    FailureClass.BAD_ARGUMENTS,
    FailureClass.WRONG_ARGUMENTS,
    FailureClass.WRONG_FINAL,
    FailureClass.MALFORMED,
    FailureClass.LOOP_LIMIT,
    FailureClass.INFRA,
)


@dataclass(frozen=True)
class Verdict:
    """Pass/fail of one sample, a short single-line label and what the card contained."""

    passed: bool
    label: str
    failure: FailureClass | None
    types: tuple[str, ...] = ()
    unknown_types: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form, as it crosses xdist workers and lands in reports."""
        return {
            "passed": self.passed,
            "label": self.label,
            "failure": None if self.failure is None else self.failure.value,
            "types": list(self.types),
            "unknown_types": list(self.unknown_types),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Verdict:
        """Inverse of :meth:`to_dict`."""
        failure = d.get("failure")
        return cls(
            passed=bool(d["passed"]),
            label=str(d["label"]),
            failure=None if failure is None else FailureClass(failure),
            types=tuple(d.get("types", ())),
            unknown_types=tuple(d.get("unknown_types", ())),
        )


def with_class(label: str, failure: str | None) -> str:
    """``failure: label``, the way a report line shows a failed sample's label, saying the
    class once: a label that already starts with its class (every call-judge label,
    ``infra: …``, ``truncated at …``) is shown as it is.
    """
    if not failure or label.split(" ", 1)[0].rstrip(":") == failure:
        return label
    return f"{failure}: {label}"


REPLY_KEPT = 20_000  # characters of a raw reply kept in results and reports
REPLY_PREVIEW = 200  # characters of a reply a failing test shows in the terminal


def trim(text: str, limit: int = REPLY_KEPT) -> str:
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
    # The model's reasoning (message.thinking, reasoning_content or a leading <think> block):
    # kept for reports, never judged.
    thinking: str = ""
    # The server's own figures (tokens, durations), see wire.figures.server_figures.
    figures: dict[str, float] = field(default_factory=dict)
    # Retry channel: the first (prose) attempt that failed to parse and was discarded, as
    # ``{"label", "failure", "route", "reply"}``; the fields above then describe the retry.
    retry_of: dict[str, Any] | None = None
    # Call suites only (None elsewhere, and then left out of ``to_dict``): the names of the
    # calls the model made, turn by turn; how many turns the loop took; how many calls
    # carried their arguments as a JSON string.
    calls: list[list[str]] | None = None
    turns: int | None = None
    args_as_string: int | None = None
    # Streamed samples only: what a streaming chat client would have shown of the content
    # (judge/withhold.exposure): ``shown_early`` characters a careful client released before
    # the turn ended, and ``naive_leak`` / ``careful_leak`` characters each showed of a turn
    # that recovery claimed as a call (a call written as text must never reach the user).
    stream: dict[str, int] | None = None

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
        """JSON-able form (the call-suite fields only when set)."""
        # Not dataclasses.asdict: its deep copy of every field cost more than judging a reply.
        data = dict(vars(self))
        data["types"] = list(self.types)
        data["unknown_types"] = list(self.unknown_types)
        if self.calls is None:
            del data["calls"]
        else:
            data["calls"] = [list(turn) for turn in self.calls]
        for name in ("turns", "args_as_string", "stream"):
            if data[name] is None:
                del data[name]
        return data

    @property
    def called(self) -> bool:
        """A call suite's sample whose first turn made at least one call."""
        return bool(self.calls and self.calls[0])

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SampleRecord:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)


class ArmKeyed:
    """What names an arm, for the records that belong to one (a test's result, an arm's score).

    The class defines ``suite``, ``model``, ``channel`` and ``condition``; this gives the key
    in its two forms, written once.
    """

    suite: str
    model: str
    channel: str
    condition: str

    @property
    def arm(self) -> tuple[str, str, str, str]:
        """(suite, model, channel, condition)."""
        return (self.suite, self.model, self.channel, self.condition)

    @property
    def arm_id(self) -> str:
        """The arm as one string, ``suite/model/channel/condition`` (baseline and report key)."""
        return "/".join(self.arm)


#: Why a test could not replay (:attr:`ProbeResult.problem`).
PROBLEMS: tuple[str, ...] = ("not recorded", "never recorded", "stale", "corrupt")


@dataclass
class ProbeResult(ArmKeyed):
    """The outcome of one generated test (or one fixture-driven test)."""

    nodeid: str
    suite: str
    model: str
    channel: str
    condition: str
    case: str
    status: Status
    samples: list[SampleRecord] = field(default_factory=list)
    message: str | None = None
    # The server this test asked (live runs; None in replay).
    server: str | None = None
    # The model's digest (Ollama) or system fingerprint (OpenAI) from the cassette.
    model_digest: str | None = None
    # "old → new" when a live run found a different digest than the old recording's.
    model_changed: str | None = None
    # "ollama 0.11.4 → ollama 0.33.0" when a live run found another server than the old one.
    server_changed: str | None = None
    # The unrecorded warm-up request this test triggered: model, server, seconds, error.
    warmup: dict[str, Any] | None = None
    # A call suite's canary role of the case (``needs_tool`` / ``no_tool``), else None.
    canary: str | None = None
    # How pytest showed it against the baseline (score/outcome.py); set where the test ran.
    outcome: str | None = None
    # When the test's cassette was recorded (ISO 8601, UTC), when the cassette says so.
    recorded: str | None = None
    # The case rule k of ``samples(n, at_least=k)`` / the suite key ``at_least``: the test
    # passes when at least k samples pass. None: every sample must pass (k = n).
    at_least: int | None = None
    # A test that could not replay: ``not recorded``, ``never recorded`` (its suite has no
    # recording at all), ``stale`` or ``corrupt`` (see :data:`PROBLEMS`); None otherwise.
    problem: str | None = None
    # A stale cassette: what changed since the recording, in words (suite/declarations.py).
    changes: list[str] | None = None
    # True for a case whose expectation no person has reviewed (``reviewed: false``): scored
    # apart, never gated nor written to the baseline. None otherwise (left out of reports).
    draft: bool | None = None
    # The server (credentials redacted) whose circuit breaker had opened before this test
    # asked anything: the test failed as infra unasked. None otherwise (left out of reports).
    broken_server: str | None = None

    def __post_init__(self) -> None:
        # A status given as its plain string (a worker's JSON, a test) becomes the enum.
        self.status = Status(self.status)

    @property
    def split(self) -> bool:
        """Samples disagreed: some passed and some failed (an unstable case)."""
        verdicts = {s.passed for s in self.samples if s.failure != "infra"}
        return len(verdicts) == 2

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        data = dict(vars(self))
        # Plain strings, also when set from Status: execnet (xdist) sends only built-in types.
        data["status"] = str(self.status)
        if self.outcome is not None:
            data["outcome"] = str(self.outcome)
        data["samples"] = [s.to_dict() for s in self.samples]
        for name in (
            "canary",
            "recorded",
            "server_changed",
            "at_least",
            "problem",
            "changes",
            "draft",
            "broken_server",
        ):
            if data[name] is None:
                del data[name]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeResult:
        """Inverse of :meth:`to_dict`."""
        fields = dict(data)
        fields["samples"] = [SampleRecord.from_dict(s) for s in data.get("samples", [])]
        return cls(**fields)
