"""Run one probe: build its request, ask the server (live or through a cassette), judge.

The :class:`Runtime` lives for one pytest session (one per xdist worker) and owns the
connection pool and what the session learnt about models (unknown, no tool support).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_cardprobe.judge.card import infra_verdict, truncated_verdict
from pytest_cardprobe.judge.routing import answer_of
from pytest_cardprobe.settings import Settings
from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.suite.request import build_request
from pytest_cardprobe.types import (
    ChatReply,
    ChatRequest,
    FailureClass,
    ProbeResult,
    SampleRecord,
    Verdict,
    trim,
)
from pytest_cardprobe.wire.cassettes import (
    Backend,
    Recording,
    cassette_path,
    fingerprint,
    recorded_model,
)
from pytest_cardprobe.wire.client import (
    ChatClient,
    ClientError,
    InfraError,
    ModelNotFound,
    RequestRejected,
    Unsupported,
    model_identity,
    server_figures,
)
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
            self.broken_servers[server] = (
                f"circuit breaker open: {streak} consecutive infra failures on {server} "
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
        server = server or self.server
        live = self.backend.live if live is None else live
        broken = self.broken_servers.get(server)
        if broken is not None:
            return SampleRecord.from_verdict(index, None, infra_verdict(broken), "", None), None
        wall: float | None = None
        try:
            if live:
                with server_slot(server, self.settings.parallel):
                    started = time.perf_counter()
                    reply = self.client_for(server).chat(request)
                    wall = time.perf_counter() - started
            else:
                reply = self.client_for(server).chat(request)
        except InfraError as exc:
            self.note_outcome(server, str(exc))
            return SampleRecord.from_verdict(index, None, infra_verdict(str(exc)), "", None), None
        self.note_outcome(server, None)
        tool_name = request.tool_names[0] if request.tool_names else None
        answer = answer_of(reply, channel, tool_name)
        verdict = refused_verdict(answer.refused) if answer.refused else judge(answer.text)
        verdict = truncated_verdict(verdict, reply.finish_reason)
        shown = answer.text if answer.route == "content" else reply.content
        if answer.route == "tool_calls":
            calls = [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
            shown = f"tool_calls: {json.dumps(calls, ensure_ascii=False)}" + (
                f"\ncontent: {reply.content}" if reply.content else ""
            )
        record = SampleRecord.from_verdict(index, answer.route, verdict, shown, reply.finish_reason)
        reasoning = "\n".join(t for t in (reply.thinking.strip(), answer.thinking) if t)
        record.thinking = trim(reasoning)
        record.figures = server_figures(reply.raw)
        if wall is not None:
            record.figures["wall_s"] = round(wall, 4)
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
        outcome: dict[str, Any] = {"model": request.model, "server": server}
        with server_slot(server, self.settings.parallel):
            started = time.perf_counter()
            try:
                self.client_for(server).chat(request)
            except ClientError as exc:
                outcome["error"] = str(exc)[:200]
            outcome["seconds"] = round(time.perf_counter() - started, 3)
        return outcome

    def run(
        self,
        probe: Probe,
        samples: int,
        nodeid: str,
        judge: TextJudge,
        server: str | None = None,
    ) -> ProbeResult:
        """Ask ``probe`` ``samples`` times on ``server`` (default: this worker's) and judge."""
        server = server or self.server
        result = ProbeResult(
            nodeid=nodeid,
            suite=probe.suite.name,
            model=probe.model,
            channel=probe.channel,
            condition=probe.condition,
            case=probe.case.id,
            status="passed",
        )
        if probe.model in self.missing_models:
            result.status, result.message = "error", self.missing_models[probe.model]
            return result
        if server in self.broken_servers:
            # Fail at once and leave the cassette alone: the server is not answering.
            result.status, result.message = "infra", self.broken_servers[server]
            return result
        s = self.settings
        think = s.think or probe.suite.think or s.think_default
        request = build_request(probe, s.base_options(), think)
        self._adjust(request, probe)
        unsupported = self._tools_missing(probe.model, server) if probe.channel == "tool" else None
        path, prints = self.cassette_for(probe), fingerprint(request)
        identity: dict[str, str] = {}
        if self.backend.records(path, prints):
            result.server = server
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
            seen = self._ask_samples(request, probe, samples, result, rec, judge, server)
            if rec.live:
                if seen:
                    identity["system_fingerprint"] = seen
                if identity:
                    rec.metadata["model"] = identity
            model = rec.metadata.get("model")
            if isinstance(model, dict):
                result.model_digest = model.get("digest") or model.get("system_fingerprint")
        return result

    def _ask_samples(
        self,
        request: ChatRequest,
        probe: Probe,
        samples: int,
        result: ProbeResult,
        rec: Recording,
        judge: TextJudge,
        server: str,
    ) -> str | None:
        """Ask every sample; returns the last ``system_fingerprint`` an OpenAI server sent."""
        seen: str | None = None
        for index in range(samples):
            try:
                record, reply = self.ask(request, probe.channel, judge, index, server, rec.live)
            except ModelNotFound as exc:
                rec.keep = False
                self.missing_models[probe.model] = str(exc)
                result.status, result.message = "error", str(exc)
                return seen
            except Unsupported as exc:
                rec.metadata["unsupported"] = str(exc)
                result.status, result.message = "unsupported", str(exc)
                return seen
            except RequestRejected as exc:
                rec.keep = False
                result.status, result.message = "error", f"server rejected the request: {exc}"
                return seen
            result.samples.append(record)
            if reply is not None and reply.raw.get("system_fingerprint"):
                seen = str(reply.raw["system_fingerprint"])
            if record.failure == "infra":
                # Not the model's doing: record nothing, ask no more, leave the case unscored.
                rec.keep = False
                result.status, result.message = "infra", record.label
                return seen
        if not all(s.passed for s in result.samples):
            result.status = "failed"
        return seen
