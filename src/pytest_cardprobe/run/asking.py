"""The ways a probe asks, behind one small protocol, and what they share.

A way of asking turns one sample index into a :class:`SampleRecord` (and the last reply).
There are three: :class:`OneTurn` (the prose and tool channels: one request, one reply),
``retry.RetryThroughTool`` (prose first, the tool when that reply did not parse) and
``loop.ToolLoop`` (a call suite's turns with scripted tool results). The runtime picks one
per probe and hands it an :class:`Exchange`, the part of itself they need: sending through
the lane's server (slots, breaker, wall time) and the request hook.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Protocol

from pytest_cardprobe.judge.card import infra_verdict, truncated_verdict
from pytest_cardprobe.judge.routing import answer_of
from pytest_cardprobe.judge.withhold import exposure
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.types import (
    ChatReply,
    ChatRequest,
    FailureClass,
    SampleRecord,
    ToolCall,
    Verdict,
    trim,
)
from pytest_cardprobe.wire.errors import InfraError
from pytest_cardprobe.wire.figures import server_figures

TextJudge = Callable[[str], Verdict]


class Exchange(Protocol):
    """What a way of asking needs from the runtime."""

    settings: Settings

    def send(
        self, request: ChatRequest, server: str, live: bool | None, wire: str | None = None
    ) -> tuple[ChatReply, float | None]:
        """One request to ``server``; the reply and its wall time when it went out.

        ``wire`` is :meth:`wire_text` of ``request``, when the caller wrote it already."""
        ...

    def wire_text(self, request: ChatRequest, server: str) -> str | None:
        """``request``'s body as replay matches it (None when ``server`` is asked live)."""
        ...

    def adjust(self, request: ChatRequest, probe: Probe | None) -> bool:
        """Let the adjust hook edit ``request`` before it is sent or matched; False when no
        plugin implements it (``request`` is as built, so a copy of it made the same way is
        the same request)."""
        ...

    def edits_requests(self) -> bool:
        """Whether a plugin implements the adjust hook now (one can be registered at any
        time): a request kept because none did is built again once one does."""
        ...


class WayOfAsking(Protocol):
    """One way of asking a probe: a sample index in, its record and last reply out."""

    def sample(self, index: int) -> tuple[SampleRecord, ChatReply | None]:
        """Ask for sample ``index``; infra failures come back as an infra record."""
        ...


def refused_verdict(message: str) -> Verdict:
    """A call to the declared tool that could not be used: malformed."""
    return Verdict(
        passed=False,
        label=f"broken: refused tool call: {message}"[:160],
        failure=FailureClass.MALFORMED,
        types=(),
        unknown_types=(),
    )


def infra_record(index: int, error: InfraError) -> SampleRecord:
    """The record of a sample whose request failed on infra: no route, unscored."""
    return SampleRecord.from_verdict(index, None, infra_verdict(str(error)), "", None)


def figures(reply: ChatReply, wall: float | None) -> dict[str, float]:
    """The server's figures of one reply, plus its wall time when it went to the server."""
    found = server_figures(reply.raw)
    if wall is not None:
        found["wall_s"] = round(wall, 4)
    return found


def call_id(call: ToolCall) -> dict[str, str]:
    """The server's id of a call, for the shown reply; nothing when it gave none."""
    return {"id": call.id} if call.id else {}


def shown_calls(reply: ChatReply) -> str:
    """A structured reply as the reports show it: its calls as JSON, then any content."""
    calls = [{**call_id(c), "name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
    return f"tool_calls: {json.dumps(calls, ensure_ascii=False)}" + (
        f"\ncontent: {reply.content}" if reply.content else ""
    )


class OneTurn:
    """The prose and tool channels: one request, one reply, judged as a card."""

    def __init__(
        self,
        exchange: Exchange,
        request: ChatRequest,
        channel: str,
        judge: TextJudge,
        server: str,
        live: bool | None = None,
    ) -> None:
        self.exchange = exchange
        self.request = request
        self.channel = channel
        self.judge = judge
        self.server = server
        self.live = live
        self._wire: list[str | None] = []

    def sample(self, index: int) -> tuple[SampleRecord, ChatReply | None]:
        """Ask once; route and judge the reply."""
        if not self._wire:
            # The request went through the adjust hook before this way of asking was made,
            # and nothing edits it between samples: its body is written once for all of them.
            self._wire.append(self.exchange.wire_text(self.request, self.server))
        try:
            reply, wall = self.exchange.send(self.request, self.server, self.live, self._wire[0])
        except InfraError as exc:
            return infra_record(index, exc), None
        names = self.request.tool_names
        found = figures(reply, wall)
        tool = names[0] if names else None
        answer = answer_of(reply, self.channel, tool, found.get("generated_tokens"))
        if answer.swallowed:
            verdict = Verdict(False, answer.swallowed, FailureClass.MALFORMED)
        elif answer.refused:
            verdict = refused_verdict(answer.refused)
        else:
            verdict = self.judge(answer.text)
        verdict = truncated_verdict(verdict, reply.finish_reason)
        shown = answer.text if answer.route == "content" else reply.content
        if answer.route == "tool_calls":
            shown = shown_calls(reply)
        record = SampleRecord.from_verdict(index, answer.route, verdict, shown, reply.finish_reason)
        reasoning = "\n".join(t for t in (reply.thinking.strip(), answer.thinking) if t)
        record.thinking = trim(reasoning)
        record.figures = found
        if reply.pieces:
            record.stream = exposure(reply.pieces, names)
        return record, reply
