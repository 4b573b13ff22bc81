"""Run one probe: build its request, ask the server (live or through a cassette), judge.

The :class:`Runtime` lives for one pytest session (one per xdist worker). Its servers are a
:class:`~pytest_cardprobe.wire.pool.ServerPool` (clients, slots, breaker, what the session
learnt of each server and model, warm-up); it keeps only which models are missing. It picks
how a probe asks (``asking.py``, ``retry.py``, ``loop.py``) and hands it itself as the
:class:`~pytest_cardprobe.run.asking.Exchange`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from pytest_cardprobe.run.asking import OneTurn, TextJudge, WayOfAsking
from pytest_cardprobe.run.loop import ToolLoop, turn_request
from pytest_cardprobe.run.result import probe_result
from pytest_cardprobe.run.retry import RetryThroughTool
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.suite.request import build_request
from pytest_cardprobe.types import ChatReply, ChatRequest, ProbeResult, SampleRecord, Status
from pytest_cardprobe.wire import identity as wire_identity
from pytest_cardprobe.wire.cassettes.fingerprint import fingerprint
from pytest_cardprobe.wire.cassettes.format import Recording
from pytest_cardprobe.wire.cassettes.modes import Backend
from pytest_cardprobe.wire.cassettes.paths import cassette_path
from pytest_cardprobe.wire.cassettes.reading import recorded_identity
from pytest_cardprobe.wire.client import ChatClient
from pytest_cardprobe.wire.errors import (
    ModelNotFound,
    RequestRejected,
    Unsupported,
)
from pytest_cardprobe.wire.pool import ServerPool
from pytest_cardprobe.wire.redact import redact_url


class Runtime:
    """Per-session state and the probe runner."""

    def __init__(
        self,
        settings: Settings,
        backend: Backend,
        *,
        server_index: int = 0,
        adjust: Callable[..., object] | None = None,
    ) -> None:
        self.settings = settings
        self.backend = backend
        self.server = settings.servers[server_index % len(settings.servers)]
        self._adjust = adjust
        self.missing_models: dict[str, str] = {}
        self.pool = ServerPool(
            settings.client_settings(self.server),
            backend.player(),
            live_run=settings.live,
            sends_live=backend.live,
            api=settings.api,
            parallel=settings.parallel,
            breaker=settings.breaker,
            warmup=settings.warmup,
        )

    @property
    def client(self) -> ChatClient:
        """The client of this worker's own server, created on first use."""
        return self.pool.client_for(self.server)

    def close(self) -> None:
        """Release the connection pools."""
        self.pool.close()

    @property
    def broken_servers(self) -> dict[str, str]:
        """Servers whose circuit breaker opened, with why."""
        return self.pool.broken

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

    def send(
        self, request: ChatRequest, server: str, live: bool | None = None, wire: str | None = None
    ) -> tuple[ChatReply, float | None]:
        """One request through the pool (slots, breaker, wall time: :meth:`ServerPool.send`)."""
        return self.pool.send(request, server, live, wire)

    def wire_text(self, request: ChatRequest, server: str) -> str | None:
        """``request``'s body as replay matches it (:meth:`ServerPool.wire_text`)."""
        return self.pool.wire_text(request, server)

    def adjust(self, request: ChatRequest, probe: Probe | None) -> None:
        """Let the adjust hook edit ``request`` (part of the Exchange the ways of asking use)."""
        if self._adjust is not None:
            self._adjust(request=request, probe=probe)

    def ask(
        self,
        request: ChatRequest,
        channel: str,
        judge: TextJudge,
        index: int,
        server: str | None = None,
        live: bool | None = None,
    ) -> tuple[SampleRecord, ChatReply | None]:
        """One sample of one request (the fixture's way of asking; a probe's is chosen in run).

        Infra failures become an infra record; other client errors propagate.
        """
        way = OneTurn(self, request, channel, judge, server or self.server, live)
        return way.sample(index)

    def run(
        self,
        probe: Probe,
        samples: int,
        nodeid: str,
        judge: TextJudge | None = None,
        server: str | None = None,
        *,
        hint: str = "pytest --live",
        suite_file: str | None = None,
    ) -> ProbeResult:
        """Ask ``probe`` ``samples`` times on ``server`` (default: this worker's) and judge.

        Card suites are judged by ``judge``; call suites by the call judge against their
        expectations (``judge`` is unused), a loop's turns all going to the same server.
        ``hint``: the command that records this test again (said when its cassette is stale
        or missing); ``suite_file``: the identity a recording writes for the suite's file
        (default its name). Glue hands both in as values, so nothing here calls back into it.
        """
        server = server or self.server
        result = probe_result(nodeid, probe)
        if probe.model in self.missing_models:
            result.status, result.message = Status.ERROR, self.missing_models[probe.model]
            return result
        if server in self.broken_servers:
            # Fail at once and leave the cassette alone: the server is not answering.
            result.status, result.message = Status.INFRA, self.broken_servers[server]
            result.broken_server = redact_url(server)
            return result
        s = self.settings
        think = s.think or probe.suite.think or s.think_default
        calls = probe.suite.is_call_suite
        base = build_request(probe, s.base_options(), think, api=s.api)
        request = turn_request(self, base, [], probe)
        uses_tool = calls or probe.channel in ("tool", "retry")
        unsupported = self.pool.tools_missing(probe.model, server) if uses_tool else None
        path = self.cassette_for(probe)
        # A call suite's tools are the team's own file: an edit there is named "tools".
        label = "tools" if calls else "tool declaration"
        # Computed once, and only if asked for: replay needs it only to say what changed.
        prints = functools.cache(
            lambda: fingerprint(request, tools_label=label, redact=s.redact_fields)
        )
        identity: dict[str, str] = {}
        serving: dict[str, str] = {}
        # The request each sample starts with, for record mode stale to match as replay would.
        first = lambda: self.pool.client_for(server).wire_request(request)  # noqa: E731
        if self.backend.records(path, prints, first, samples):
            result.server = redact_url(server)  # shown in reports: no credentials
            # Both happen before the cassette opens, so neither is recorded.
            identity = dict(self.pool.identity(server, probe.model))
            serving = self.pool.server_identity(server)
            before = recorded_identity(path)
            result.model_changed = wire_identity.model_change(before["model"], identity)
            result.server_changed = wire_identity.server_change(
                before["server"], serving, request.options
            )
            if not unsupported:
                result.warmup = self.pool.warm_up(request, server)
        with self.backend.open(path, fingerprint=prints, rerecord_hint=hint) as rec:
            meta = rec.metadata
            if rec.live:
                meta.stamp(suite_file or probe.suite.path.name, serving)
            result.recorded = meta.recorded
            unsupported = unsupported or meta.unsupported
            if unsupported:
                meta.unsupported = unsupported
                result.status, result.message = Status.UNSUPPORTED, unsupported
                return result
            way = self.way_of_asking(probe, base, request, judge, server, rec.live)
            seen: list[str] = []

            def one(index: int) -> SampleRecord:
                record, reply = way.sample(index)
                # OpenAI-compatible servers name their build per reply; keep the last one.
                if reply is not None and reply.raw.get("system_fingerprint"):
                    seen.append(str(reply.raw["system_fingerprint"]))
                return record

            self._ask_samples(probe, samples, result, rec, one)
            if rec.live:
                if seen:
                    identity["system_fingerprint"] = seen[-1]
                if identity:
                    meta.model = identity
            result.model_digest = meta.digest
        return result

    def way_of_asking(
        self,
        probe: Probe,
        base: ChatRequest,
        request: ChatRequest,
        judge: TextJudge | None,
        server: str,
        live: bool | None,
    ) -> WayOfAsking:
        """How ``probe`` asks: a call suite loops, the retry channel retries, others ask once.

        ``base`` is the request before the hook (a loop adjusts each turn's copy), ``request``
        the first turn as the hook left it.
        """
        if probe.suite.is_call_suite:
            return ToolLoop(self, base, probe, server, live)
        if judge is None:
            raise TypeError(f"{probe.name}: a card suite needs its text judge")
        if probe.channel == "retry":
            return RetryThroughTool(self, request, probe, judge, server, live)
        return OneTurn(self, request, probe.channel, judge, server, live)

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
                result.status, result.message = Status.ERROR, str(exc)
                return
            except Unsupported as exc:
                rec.metadata.unsupported = str(exc)
                result.status, result.message = Status.UNSUPPORTED, str(exc)
                return
            except RequestRejected as exc:
                rec.keep = False
                result.status, result.message = Status.ERROR, f"server rejected the request: {exc}"
                return
            result.samples.append(record)
            if record.failure == "infra":
                # Not the model's doing: record nothing, ask no more, leave the case unscored.
                rec.keep = False
                result.status, result.message = Status.INFRA, record.label
                return
        if not all(s.passed for s in result.samples):
            result.status = Status.FAILED
