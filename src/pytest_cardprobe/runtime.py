"""Run one probe: build its request, ask the server (live or through a cassette), judge.

The :class:`Runtime` lives for one pytest session (one per xdist worker) and owns the
connection pool and what the session learnt about models (unknown, no tool support).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_cardprobe.judge.call import ModelTurn, judge_calls, scripted_result
from pytest_cardprobe.judge.card import infra_verdict, truncated_verdict
from pytest_cardprobe.judge.routing import answer_of, turn_of
from pytest_cardprobe.settings import Settings
from pytest_cardprobe.suite.calls import ScriptedResult
from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.suite.request import build_request
from pytest_cardprobe.types import (
    ChatReply,
    ChatRequest,
    FailureClass,
    Message,
    ProbeResult,
    SampleRecord,
    ToolCall,
    Verdict,
    trim,
)
from pytest_cardprobe.wire.cassettes.fingerprint import fingerprint
from pytest_cardprobe.wire.cassettes.format import Recording
from pytest_cardprobe.wire.cassettes.modes import Backend
from pytest_cardprobe.wire.cassettes.paths import cassette_path
from pytest_cardprobe.wire.cassettes.reading import recorded_model
from pytest_cardprobe.wire.client import ChatClient
from pytest_cardprobe.wire.errors import (
    ClientError,
    InfraError,
    ModelNotFound,
    RequestRejected,
    Unsupported,
)
from pytest_cardprobe.wire.figures import server_figures
from pytest_cardprobe.wire.identity import model_identity
from pytest_cardprobe.wire.redact import redact_url
from pytest_cardprobe.wire.slots import server_slot

TextJudge = Callable[[str], Verdict]


def refused_verdict(message: str) -> Verdict:
    """A call to the declared tool that could not be used: malformed."""
    return Verdict(
        passed=False,
        label=f"broken: refused tool call: {message}"[:160],
        failure=FailureClass.MALFORMED,
        types=(),
        unknown_types=(),
    )


def feedback_messages(
    api: str, reply: ChatReply, turn: ModelTurn, results: tuple[ScriptedResult, ...], number: int
) -> list[Message]:
    """The messages that hand a turn's calls back to the model with their scripted results.

    The assistant's calls come first, then one ``role: tool`` message per call, in call
    order. Ollama names the tool (``tool_name``) and takes arguments as an object; the
    OpenAI wire quotes the call's id (``tool_call_id``) and takes arguments as a JSON string.
    A call the server gave no id (or one recovered from text) gets ``call_<turn>_<n>``.
    """
    answers = [scripted_result(call, results) for call in turn.calls]
    if api == "openai":
        ids = [call.id or f"call_{number}_{i}" for i, call in enumerate(turn.calls)]
        assistant: Message = {
            "role": "assistant",
            "content": reply.content,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": json.dumps(call.arguments, ensure_ascii=False),
                    },
                }
                for call_id, call in zip(ids, turn.calls, strict=True)
            ],
        }
        tools: list[Message] = [
            {"role": "tool", "tool_call_id": call_id, "content": answer}
            for call_id, answer in zip(ids, answers, strict=True)
        ]
        return [assistant, *tools]
    assistant = {
        "role": "assistant",
        "content": reply.content,
        "tool_calls": [
            {"function": {"name": call.name, "arguments": call.arguments}} for call in turn.calls
        ],
    }
    return [
        assistant,
        *(
            {"role": "tool", "tool_name": call.name, "content": answer}
            for call, answer in zip(turn.calls, answers, strict=True)
        ),
    ]


def _call_id(call: ToolCall) -> dict[str, str]:
    """The server's id of a call, for the shown reply; nothing when it gave none."""
    return {"id": call.id} if call.id else {}


def _shown_turn(number: int, turn: ModelTurn, many: bool) -> str:
    text = turn.content
    if turn.route == "tool_calls":
        calls = [{**_call_id(c), "name": c.name, "arguments": c.arguments} for c in turn.calls]
        text = f"tool_calls: {json.dumps(calls, ensure_ascii=False)}" + (
            f"\ncontent: {turn.content}" if turn.content else ""
        )
    return f"turn {number + 1}: {text}" if many else text


def _figures(reply: ChatReply, wall: float | None) -> dict[str, float]:
    """The server's figures of one reply, plus its wall time when it went to the server."""
    figures = server_figures(reply.raw)
    if wall is not None:
        figures["wall_s"] = round(wall, 4)
    return figures


def new_result(probe: Probe, nodeid: str) -> ProbeResult:
    """A passing result for ``probe``, to be filled in by its samples."""
    return ProbeResult(
        nodeid=nodeid,
        suite=probe.suite.name,
        model=probe.model,
        channel=probe.channel,
        condition=probe.condition,
        case=probe.case.id,
        status="passed",
        canary=probe.case.canary,
    )


class Runtime:
    """Per-session state and the probe runner."""

    def __init__(
        self,
        settings: Settings,
        backend: Backend,
        *,
        server_index: int = 0,
        adjust: Callable[[ChatRequest, Probe | None], None] = lambda r, p: None,
        rerecord_hint: Callable[[str, str], str] = lambda nodeid, model: "pytest --live",
    ) -> None:
        self.settings = settings
        self.backend = backend
        self.server = settings.servers[server_index % len(settings.servers)]
        self._adjust = adjust
        self._hint = rerecord_hint
        self._clients: dict[str, ChatClient] = {}
        self.missing_models: dict[str, str] = {}
        # Consecutive infra failures per server, and why a server's breaker opened.
        self._infra_streak: dict[str, int] = {}
        self.broken_servers: dict[str, str] = {}
        self._capabilities: dict[str, list[str] | None] = {}
        self._identities: dict[tuple[str, str], dict[str, str]] = {}
        self._warmed: set[tuple[str, str]] = set()

    @property
    def client(self) -> ChatClient:
        """The client of this worker's own server, created on first use."""
        return self.client_for(self.server)

    def client_for(self, server: str) -> ChatClient:
        """The client of ``server``, created on first use (one connection pool per server)."""
        if server not in self._clients:
            self._clients[server] = ChatClient(
                self.settings.client_settings(server), player=self.backend.player()
            )
        return self._clients[server]

    def close(self) -> None:
        """Release the connection pools."""
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    def note_outcome(self, server: str, infra: str | None) -> None:
        """Count consecutive infra failures on ``server``; open its breaker at the limit."""
        if not self.settings.live:
            return
        if infra is None:
            self._infra_streak[server] = 0
            return
        streak = self._infra_streak.get(server, 0) + 1
        self._infra_streak[server] = streak
        if streak >= self.settings.breaker and server not in self.broken_servers:
            shown = redact_url(server)
            self.broken_servers[server] = (
                f"circuit breaker open: {streak} consecutive infra failures on {shown} "
                f"(ini cardprobe_breaker = {self.settings.breaker}); its remaining tests "
                f"were not asked. Last failure: {infra}"
            )

    def cassette_for(self, probe: Probe) -> Path:
        """The cassette path of one probe."""
        return cassette_path(
            self.settings.cassette_dir,
            probe.suite.name,
            probe.model,
            probe.case.id,
            probe.channel,
            probe.condition,
        )

    def _tools_missing(self, model: str, server: str) -> str | None:
        """Live Ollama only: why ``model`` cannot take tools, asked once per model."""
        if not self.settings.live or self.settings.api != "ollama":
            return None
        if model not in self._capabilities:
            try:
                self._capabilities[model] = self.client_for(server).capabilities(model)
            except (InfraError, ModelNotFound, RequestRejected):
                self._capabilities[model] = None  # let the chat call report it
        caps = self._capabilities[model]
        if caps is not None and "tools" not in caps:
            return f"{model} does not support tools (capabilities: {', '.join(caps)})"
        return None

    def _send(
        self, request: ChatRequest, server: str, live: bool | None
    ) -> tuple[ChatReply, float | None]:
        """One request to ``server`` and its wall time when it went to the server.

        Live (default: the backend's), it first waits for one of the server's slots, so time
        spent queued does not count against the request timeout. Infra failures count
        toward the server's breaker and are raised; once the breaker is open nothing more
        is sent to that server.
        """
        live = self.backend.live if live is None else live
        broken = self.broken_servers.get(server)
        if broken is not None:
            raise InfraError(broken)
        try:
            if live:
                with server_slot(server, self.settings.parallel):
                    started = time.perf_counter()
                    reply = self.client_for(server).chat(request)
                    wall: float | None = time.perf_counter() - started
            else:
                reply, wall = self.client_for(server).chat(request), None
        except InfraError as exc:
            self.note_outcome(server, str(exc))
            raise
        self.note_outcome(server, None)
        return reply, wall

    def ask(
        self,
        request: ChatRequest,
        channel: str,
        judge: TextJudge,
        index: int,
        server: str | None = None,
        live: bool | None = None,
    ) -> tuple[SampleRecord, ChatReply | None]:
        """One sample. Infra failures become an infra record; other client errors propagate.

        ``live`` (default: the backend's) means the request goes to the server: it waits for
        one of the server's slots first and its wall time is kept.
        """
        try:
            reply, wall = self._send(request, server or self.server, live)
        except InfraError as exc:
            return SampleRecord.from_verdict(index, None, infra_verdict(str(exc)), "", None), None
        tool_name = request.tool_names[0] if request.tool_names else None
        answer = answer_of(reply, channel, tool_name)
        verdict = refused_verdict(answer.refused) if answer.refused else judge(answer.text)
        verdict = truncated_verdict(verdict, reply.finish_reason)
        shown = answer.text if answer.route == "content" else reply.content
        if answer.route == "tool_calls":
            calls = [
                {**_call_id(c), "name": c.name, "arguments": c.arguments} for c in reply.tool_calls
            ]
            shown = f"tool_calls: {json.dumps(calls, ensure_ascii=False)}" + (
                f"\ncontent: {reply.content}" if reply.content else ""
            )
        record = SampleRecord.from_verdict(index, answer.route, verdict, shown, reply.finish_reason)
        reasoning = "\n".join(t for t in (reply.thinking.strip(), answer.thinking) if t)
        record.thinking = trim(reasoning)
        record.figures = _figures(reply, wall)
        return record, reply

    def identity(self, server: str, model: str) -> dict[str, str]:
        """What ``server`` says ``model`` is (digest or id), asked once per server and model."""
        key = (server, model)
        if key not in self._identities:
            try:
                self._identities[key] = model_identity(self.client_for(server), model)
            except (InfraError, ModelNotFound, RequestRejected):
                self._identities[key] = {}  # the chat call reports what is wrong
        return self._identities[key]

    def warm_up(self, request: ChatRequest, server: str) -> dict[str, Any] | None:
        """One unrecorded, unscored request before a model's first recorded one on ``server``.

        The first reply after a server or model start is an outlier (measured on both real
        servers), so it is spent here. Returns what to report, or None when already warm.
        """
        key = (server, request.model)
        if not self.settings.warmup or key in self._warmed:
            return None
        self._warmed.add(key)
        outcome: dict[str, Any] = {"model": request.model, "server": redact_url(server)}
        with server_slot(server, self.settings.parallel):
            started = time.perf_counter()
            try:
                self.client_for(server).chat(request)
            except ClientError as exc:
                outcome["error"] = str(exc)[:200]
            outcome["seconds"] = round(time.perf_counter() - started, 3)
        return outcome

    def ask_with_retry(
        self,
        request: ChatRequest,
        probe: Probe,
        judge: TextJudge,
        index: int,
        server: str | None = None,
        live: bool | None = None,
    ) -> SampleRecord:
        """The retry channel's sample: prose first; through the tool if that did not parse.

        The retry is a fresh conversation (tool prompt, tool declared, same condition and
        question) that never sees the broken reply: showing the model its own output would
        measure self-correction as well. Both calls go to the test's cassette in order.
        """
        first, _ = self.ask(request, "prose", judge, index, server, live)
        if first.failure != FailureClass.MALFORMED.value:
            return first
        retry = build_request(probe, self.settings.base_options(), request.think, channel="tool")
        self._adjust(retry, probe)
        record, _ = self.ask(retry, "tool", judge, index, server, live)
        record.retry_of = {
            "label": first.label,
            "failure": first.failure,
            "route": first.route,
            "reply": first.reply,
        }
        return record

    def run(
        self,
        probe: Probe,
        samples: int,
        nodeid: str,
        judge: TextJudge | None = None,
        server: str | None = None,
    ) -> ProbeResult:
        """Ask ``probe`` ``samples`` times on ``server`` (default: this worker's) and judge.

        Card suites are judged by ``judge``; call suites by the call judge against their
        expectations (``judge`` is unused), a loop's turns all going to the same server.
        """
        server = server or self.server
        result = new_result(probe, nodeid)
        if probe.model in self.missing_models:
            result.status, result.message = "error", self.missing_models[probe.model]
            return result
        if server in self.broken_servers:
            # Fail at once and leave the cassette alone: the server is not answering.
            result.status, result.message = "infra", self.broken_servers[server]
            return result
        s = self.settings
        think = s.think or probe.suite.think or s.think_default
        calls = probe.suite.is_call_suite
        base = build_request(probe, s.base_options(), think)
        request = self._turn_request(base, [], probe)
        uses_tool = calls or probe.channel in ("tool", "retry")
        unsupported = self._tools_missing(probe.model, server) if uses_tool else None
        path = self.cassette_for(probe)
        # A call suite's tools are the team's own file: an edit there is named "tools".
        label = "tools" if calls else "tool declaration"
        # Computed once, and only if asked for: replay needs it only to say what changed.
        prints = functools.cache(
            lambda: fingerprint(request, tools_label=label, redact=s.redact_fields)
        )
        identity: dict[str, str] = {}
        # The request each sample starts with, for record mode stale to match as replay would.
        first = lambda: self.client_for(server).wire_request(request)  # noqa: E731
        if self.backend.records(path, prints, first, samples):
            result.server = redact_url(server)  # shown in reports: no credentials
            # Both happen before the cassette opens, so neither is recorded.
            identity = dict(self.identity(server, probe.model))
            before = recorded_model(path)
            old, new = before.get("digest"), identity.get("digest")
            if old and new and old != new:
                result.model_changed = f"{old} → {new}"
            if not unsupported:
                result.warmup = self.warm_up(request, server)
        with self.backend.open(
            path, fingerprint=prints, rerecord_hint=self._hint(nodeid, probe.model)
        ) as rec:
            if unsupported or rec.metadata.get("unsupported"):
                rec.metadata["unsupported"] = unsupported or rec.metadata["unsupported"]
                result.status, result.message = "unsupported", rec.metadata["unsupported"]
                return result
            seen: list[str] = []

            def one(index: int) -> SampleRecord:
                if calls:
                    record, reply = self.ask_loop(base, probe, index, server, rec.live)
                elif judge is None:
                    raise TypeError(f"{probe.name}: a card suite needs its text judge")
                elif probe.channel == "retry":
                    # The retry channel may send a second request per sample.
                    return self.ask_with_retry(request, probe, judge, index, server, rec.live)
                else:
                    record, reply = self.ask(request, probe.channel, judge, index, server, rec.live)
                # OpenAI-compatible servers name their build per reply; keep the last one.
                if reply is not None and reply.raw.get("system_fingerprint"):
                    seen.append(str(reply.raw["system_fingerprint"]))
                return record

            self._ask_samples(probe, samples, result, rec, one)
            if rec.live:
                if seen:
                    identity["system_fingerprint"] = seen[-1]
                if identity:
                    rec.metadata["model"] = identity
            model = rec.metadata.get("model")
            if isinstance(model, dict):
                result.model_digest = model.get("digest") or model.get("system_fingerprint")
        return result

    def _turn_request(self, base: ChatRequest, extra: list[Message], probe: Probe) -> ChatRequest:
        # A fresh request per turn, adjusted by the hook each time, so a conftest can shape
        # the first turn of a loop differently from the turns after a tool result.
        request = replace(
            base,
            messages=[*base.messages, *extra],
            tools=[dict(t) for t in base.tools],
            options=dict(base.options),
        )
        self._adjust(request, probe)
        return request

    def ask_loop(
        self,
        base: ChatRequest,
        probe: Probe,
        index: int,
        server: str | None = None,
        live: bool | None = None,
    ) -> tuple[SampleRecord, ChatReply | None]:
        """One sample of a call suite: one turn, or a tool loop up to the case's max_turns.

        Returns the record and the last reply (None when the sample ended in infra).
        """
        server = server or self.server
        case = probe.case
        expect = case.expect
        assert expect is not None, "a call suite's case always has an expectation"
        declared = probe.suite.tool_names
        limit = case.max_turns if expect.multi_turn else 1
        extra: list[Message] = []
        turns: list[ModelTurn] = []
        shown: list[str] = []
        figures: dict[str, float] = {}
        reasoning: list[str] = []
        finish: str | None = None
        reply: ChatReply | None = None
        for number in range(limit):
            request = self._turn_request(base, extra, probe)
            try:
                reply, wall = self._send(request, server, live)
            except InfraError as exc:
                infra = infra_verdict(str(exc))
                return SampleRecord.from_verdict(index, None, infra, "", None), None
            turn = turn_of(reply, declared)
            turns.append(turn)
            shown.append(_shown_turn(number, turn, expect.multi_turn))
            reasoning.extend(t for t in (reply.thinking.strip(), turn.thinking) if t)
            # A loop's figures are its turns' added up (tokens, durations, wall time).
            for key, value in _figures(reply, wall).items():
                figures[key] = figures.get(key, 0.0) + value
            finish = reply.finish_reason
            if not expect.multi_turn or not turn.calls:
                break
            extra.extend(feedback_messages(self.settings.api, reply, turn, case.results, number))
        verdict = judge_calls(
            turns, expect, probe.suite.tools, max_turns=limit if expect.multi_turn else None
        )
        record = SampleRecord.from_verdict(index, turns[0].route, verdict, "\n".join(shown), finish)
        record.calls = [[c.name for c in t.calls] for t in turns]
        record.turns = len(turns)
        record.args_as_string = sum(c.arguments_as_string for t in turns for c in t.calls)
        record.thinking = trim("\n".join(reasoning))
        record.figures = figures
        return record, reply

    def _ask_samples(
        self,
        probe: Probe,
        samples: int,
        result: ProbeResult,
        rec: Recording,
        one: Callable[[int], SampleRecord],
    ) -> None:
        for index in range(samples):
            try:
                record = one(index)
            except ModelNotFound as exc:
                rec.keep = False
                self.missing_models[probe.model] = str(exc)
                result.status, result.message = "error", str(exc)
                return
            except Unsupported as exc:
                rec.metadata["unsupported"] = str(exc)
                result.status, result.message = "unsupported", str(exc)
                return
            except RequestRejected as exc:
                rec.keep = False
                result.status, result.message = "error", f"server rejected the request: {exc}"
                return
            result.samples.append(record)
            if record.failure == "infra":
                # Not the model's doing: record nothing, ask no more, leave the case unscored.
                rec.keep = False
                result.status, result.message = "infra", record.label
                return
        if not all(s.passed for s in result.samples):
            result.status = "failed"
