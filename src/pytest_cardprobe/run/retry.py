"""The retry channel: ask in prose; when the reply does not parse, ask again through the tool."""

from __future__ import annotations

from pytest_cardprobe.run.asking import Exchange, OneTurn, TextJudge
from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.suite.request import build_request
from pytest_cardprobe.types import ChatReply, ChatRequest, FailureClass, SampleRecord


class RetryThroughTool:
    """Prose first; a malformed reply is thrown away and the question asked via the tool.

    The retry is a fresh conversation (tool prompt, tool declared, same condition and
    question) that never sees the broken reply: showing the model its own output would
    measure self-correction as well. Both calls go to the test's cassette in order.
    """

    def __init__(
        self,
        exchange: Exchange,
        request: ChatRequest,
        probe: Probe,
        judge: TextJudge,
        server: str,
        live: bool | None = None,
    ) -> None:
        self.exchange = exchange
        self.probe = probe
        self.first = OneTurn(exchange, request, "prose", judge, server, live)
        self.judge, self.server, self.live = judge, server, live
        self.think = request.think
        # The tool retry, kept for later samples while no plugin implements the hook (then
        # it is the same request each time, and OneTurn writes its body once).
        self._retry: OneTurn | None = None

    def sample(self, index: int) -> tuple[SampleRecord, ChatReply | None]:
        """The prose reply, or the tool retry with the prose attempt kept beside it."""
        first, reply = self.first.sample(index)
        if first.failure != FailureClass.MALFORMED.value:
            return first, reply
        record, reply = self._tool_retry().sample(index)
        record.retry_of = {
            "label": first.label,
            "failure": first.failure,
            "route": first.route,
            "reply": first.reply,
        }
        return record, reply

    def _tool_retry(self) -> OneTurn:
        """The retry through the tool: its request built and given to the adjust hook."""
        if self._retry is not None and not self.exchange.edits_requests():
            return self._retry
        settings = self.exchange.settings
        retry = build_request(
            self.probe, settings.base_options(), self.think, channel="tool", api=settings.api
        )
        edited = self.exchange.adjust(retry, self.probe)
        way = OneTurn(self.exchange, retry, "tool", self.judge, self.server, self.live)
        if not edited:
            self._retry = way
        return way
