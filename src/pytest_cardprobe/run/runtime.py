"""Run one probe: build its request, ask the server (live or through a cassette), judge.

The :class:`Runtime` lives for one pytest session (one per xdist worker). Its servers are a
:class:`~pytest_cardprobe.wire.pool.ServerPool` (clients, slots, breaker, what the session
learnt of each server and model, warm-up); it keeps only which models are missing. It picks
how a probe asks (``asking.py``, ``retry.py``, ``loop.py``) and hands it itself as the
:class:`~pytest_cardprobe.run.asking.Exchange`.

:meth:`Runtime.run` is a probe's road: refuse early (model missing, server broken), build the
request, the live preamble (one call of the wire, ``wire/preamble.py``), open the recording,
ask the samples the probe's way, return the result.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from pathlib import Path

from pytest_cardprobe.run.asking import OneTurn, TextJudge, WayOfAsking
from pytest_cardprobe.run.loop import ToolLoop, turn_request
from pytest_cardprobe.run.result import probe_result
from pytest_cardprobe.run.retry import RetryThroughTool
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.suite.request import build_request
from pytest_cardprobe.types import ChatReply, ChatRequest, ProbeResult, SampleRecord, Status
from pytest_cardprobe.wire.cassettes.fingerprint import Prints, fingerprint
from pytest_cardprobe.wire.cassettes.format import Recording
from pytest_cardprobe.wire.cassettes.modes import Backend
from pytest_cardprobe.wire.cassettes.paths import cassette_path
from pytest_cardprobe.wire.client import ChatClient
from pytest_cardprobe.wire.errors import (
    ModelNotFound,
    RequestRejected,
    Unsupported,
)
from pytest_cardprobe.wire.pool import ServerPool
from pytest_cardprobe.wire.preamble import Preamble, prepare
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
        adjusts: Callable[[], bool] | None = None,
    ) -> None:
        self.settings = settings
        self.backend = backend
        self.server = settings.servers[server_index % len(settings.servers)]
        self._adjust = adjust
        # Whether any plugin implements the adjust hook now (asked per request: a conftest
        # can register one late); without it, every plugin is assumed to edit requests.
        self._adjusts = adjusts
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

    def adjust(self, request: ChatRequest, probe: Probe | None) -> bool:
        """Let the adjust hook edit ``request`` (part of the Exchange the ways of asking use).
        False when no plugin implements the hook, so ``request`` is as it was built."""
        if self._adjust is None or not self.edits_requests():
            return False
        # The hook edits in place, so what it edits must be this request's own: a request's
        # tools, options and turns share their inner objects with the suite and with the
        # turns before it (the model's calls fed back), and an edit would otherwise reach
        # every later request built from them, and the call judge's schema.
        request.messages = copy.deepcopy(request.messages)
        request.tools = copy.deepcopy(request.tools)
        request.options = copy.deepcopy(request.options)
        self._adjust(request=request, probe=probe)
        return True

    def edits_requests(self) -> bool:
        """Whether a plugin implements the adjust hook now (a conftest can register late)."""
        return self._adjust is not None and (self._adjusts is None or self._adjusts())

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
        if self._refused(result, probe.model, server):
            return result
        base, request = self._requests(probe)
        unsupported = self._tools_missing(probe, server)
        path, prints = self.cassette_for(probe), self._prints(probe, request)
        before = self._preamble(result, probe, request, server, path, prints, samples, unsupported)
        with self.backend.open(path, fingerprint=prints, rerecord_hint=hint) as rec:
            before.stamp(rec, suite_file or probe.suite.path.name)
            result.recorded = rec.metadata.recorded
            if self._unsupported(result, rec, unsupported):
                return result
            way = self.way_of_asking(probe, base, request, judge, server, rec.live)
            build = self._ask_samples(probe, samples, result, rec, way)
            before.keep_model(rec, build)
            result.model_digest = rec.metadata.digest
        return result

    def _refused(self, result: ProbeResult, model: str, server: str) -> bool:
        """True, with why in ``result``, when the probe cannot be asked at all: its model is
        missing, or ``server``'s breaker is open (fail at once, leave the cassette alone)."""
        if model in self.missing_models:
            result.status, result.message = Status.ERROR, self.missing_models[model]
            return True
        if server in self.broken_servers:
            result.status, result.message = Status.INFRA, self.broken_servers[server]
            result.broken_server = redact_url(server)
            return True
        return False

    def _requests(self, probe: Probe) -> tuple[ChatRequest, ChatRequest]:
        """The probe's request before the adjust hook and its first turn after it."""
        s = self.settings
        think = s.think or probe.suite.think or s.think_default
        base = build_request(probe, s.base_options(), think, api=s.api)
        if not self.edits_requests():
            return base, base  # no hook edits it: the first turn is the request as built
        return base, turn_request(self, base, [], probe)[0]

    def _tools_missing(self, probe: Probe, server: str) -> str | None:
        """Why the probe's model cannot take the tools the probe needs (live Ollama), if so."""
        if probe.suite.is_call_suite or probe.channel in ("tool", "retry"):
            return self.pool.tools_missing(probe.model, server)
        return None

    def _prints(self, probe: Probe, request: ChatRequest) -> Prints:
        """The request's fingerprint, computed once and only if asked for (replay needs it
        only to say what changed). A call suite's tools are the team's own file: an edit
        there is named "tools"."""
        label = "tools" if probe.suite.is_call_suite else "tool declaration"
        redact = self.settings.redact_fields
        kept: list[Mapping[str, str]] = []  # a plain memo: functools.cache costs more to make

        def prints() -> Mapping[str, str]:
            if not kept:
                kept.append(fingerprint(request, tools_label=label, redact=redact))
            return kept[0]

        return prints

    def _preamble(
        self,
        result: ProbeResult,
        probe: Probe,
        request: ChatRequest,
        server: str,
        path: Path,
        prints: Prints,
        samples: int,
        unsupported: str | None,
    ) -> Preamble:
        """What a recorded probe learns before its cassette opens (``wire/preamble.py``; no
        warm-up when the model cannot be asked), as ``result`` reports it."""
        before = prepare(
            self.backend,
            self.pool,
            request,
            probe.model,
            server,
            path,
            prints,
            samples,
            warm=not unsupported,
        )
        result.server, result.warmup = before.server, before.warmup
        result.model_changed, result.server_changed = before.model_changed, before.server_changed
        return before

    @staticmethod
    def _unsupported(result: ProbeResult, rec: Recording, unsupported: str | None) -> bool:
        """True, with why in ``result`` and the cassette, when the model cannot take the
        probe's tools: found now, or noted when the cassette was recorded."""
        unsupported = unsupported or rec.metadata.unsupported
        if not unsupported:
            return False
        rec.metadata.unsupported = unsupported
        result.status, result.message = Status.UNSUPPORTED, unsupported
        return True

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
        self, probe: Probe, samples: int, result: ProbeResult, rec: Recording, way: WayOfAsking
    ) -> str | None:
        """Ask ``way``'s samples into ``result`` until one ends the probe (a client error, an
        infra failure: nothing is recorded then). Returns the system fingerprint the last
        reply that had one named (OpenAI-compatible servers name their build per reply)."""
        build: str | None = None
        for index in range(samples):
            try:
                record, reply = way.sample(index)
            except (ModelNotFound, Unsupported, RequestRejected) as exc:
                self._stopped(exc, probe, result, rec)
                return build
            if reply is not None and reply.raw.get("system_fingerprint"):
                build = str(reply.raw["system_fingerprint"])
            result.samples.append(record)
            if record.failure == "infra":
                # Not the model's doing: record nothing, ask no more, leave the case unscored.
                rec.keep = False
                result.status, result.message = Status.INFRA, record.label
                return build
        if not all(s.passed for s in result.samples):
            result.status = Status.FAILED
        return build

    def _stopped(
        self,
        exc: ModelNotFound | Unsupported | RequestRejected,
        probe: Probe,
        result: ProbeResult,
        rec: Recording,
    ) -> None:
        """The probe ends on a client error: its status, and whether the cassette is kept."""
        if isinstance(exc, ModelNotFound):
            rec.keep = False
            self.missing_models[probe.model] = str(exc)
            result.status, result.message = Status.ERROR, str(exc)
        elif isinstance(exc, Unsupported):
            rec.metadata.unsupported = str(exc)
            result.status, result.message = Status.UNSUPPORTED, str(exc)
        else:
            rec.keep = False
            result.status, result.message = Status.ERROR, f"server rejected the request: {exc}"
