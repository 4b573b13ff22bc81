"""The servers a session asks: one client per server, its request slots, its breaker, and
what the session learnt of each server and model.

A :class:`ServerPool` lives for one pytest session (one per xdist worker). It sends a
request to a server (live: in one of the server's slots, timed, counted by the breaker;
replayed: through the backend's player), and asks, once each, what a model can do
(capabilities), what it is (identity) and what the server is, and warms a model up.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from pytest_cardprobe.types import ChatReply, ChatRequest
from pytest_cardprobe.wire import identity as wire_identity
from pytest_cardprobe.wire.body import Player
from pytest_cardprobe.wire.breaker import Breaker
from pytest_cardprobe.wire.client import ChatClient, ClientSettings
from pytest_cardprobe.wire.errors import ClientError, InfraError, ModelNotFound, RequestRejected
from pytest_cardprobe.wire.redact import redact_url
from pytest_cardprobe.wire.slots import server_slot

#: What asking a server about a model may fail with; the chat call then reports it.
_ASKED = (InfraError, ModelNotFound, RequestRejected)


class ServerPool:
    """The clients of a session's servers and what it learnt of them."""

    def __init__(
        self,
        client_settings: ClientSettings,
        player: Player | None,
        *,
        live_run: bool,
        sends_live: bool,
        api: str,
        parallel: int,
        breaker: int,
        warmup: bool,
    ) -> None:
        """``client_settings`` are how every server is reached (each client gets a copy with
        its server's ``base_url``); ``player`` stands in for the network in replay.
        ``live_run``: a run that may ask servers (the breaker counts, capabilities are
        asked); ``sends_live``: whether a request goes to the server unless the caller says
        otherwise (the backend's ``live``)."""
        self._settings = client_settings
        self._player = player
        self.live_run, self.sends_live = live_run, sends_live
        self.api, self.parallel, self.warmup = api, parallel, warmup
        self.breaker = Breaker(breaker)
        self._clients: dict[str, ChatClient] = {}
        self._capabilities: dict[str, list[str] | None] = {}
        self._identities: dict[tuple[str, str], dict[str, str]] = {}
        self._servers: dict[str, dict[str, str]] = {}
        self._warmed: set[tuple[str, str]] = set()
        self.on_sent: Callable[[], None] = lambda: None  # after each request sent live

    def client_for(self, server: str) -> ChatClient:
        """The client of ``server``, created on first use (one connection pool per server)."""
        if server not in self._clients:
            settings = dataclasses.replace(
                self._settings, base_url=server, headers=dict(self._settings.headers)
            )
            self._clients[server] = ChatClient(settings, player=self._player)
        return self._clients[server]

    def close(self) -> None:
        """Release the connection pools."""
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    @property
    def broken(self) -> dict[str, str]:
        """Servers whose circuit breaker opened, with why."""
        return self.breaker.open

    def wire_text(self, request: ChatRequest, server: str) -> str | None:
        """``request``'s body as the replay player of ``server``'s client is handed it (None
        when that client sends live): a way of asking writes it once for all its samples."""
        return self.client_for(server).played_text(request)

    def send(
        self,
        request: ChatRequest,
        server: str,
        live: bool | None = None,
        wire: str | None = None,
    ) -> tuple[ChatReply, float | None]:
        """One request to ``server`` and its wall time when it went to the server.

        Live (default: :attr:`sends_live`), it first waits for one of the server's slots, so
        time spent queued does not count against the request timeout. Infra failures count
        toward the server's breaker (live runs only) and are raised; once it is open nothing
        more is sent to that server. ``wire``: :meth:`wire_text` of ``request``, if known.
        """
        live = self.sends_live if live is None else live
        broken = self.broken.get(server)
        if broken is not None:
            raise InfraError(broken)
        try:
            if live:
                with server_slot(server, self.parallel):
                    started = time.perf_counter()
                    reply = self.client_for(server).chat(request, wire)
                    wall: float | None = time.perf_counter() - started
                self.on_sent()
            else:
                reply, wall = self.client_for(server).chat(request, wire), None
        except InfraError as exc:
            if self.live_run:
                self.breaker.note(server, str(exc))
            raise
        if self.live_run:
            self.breaker.note(server, None)
        return reply, wall

    def tools_missing(self, model: str, server: str) -> str | None:
        """Live Ollama only: why ``model`` cannot take tools, asked once per model."""
        if not self.live_run or self.api != "ollama":
            return None
        if model not in self._capabilities:
            try:
                self._capabilities[model] = self.client_for(server).capabilities(model)
            except _ASKED:
                self._capabilities[model] = None  # let the chat call report it
        caps = self._capabilities[model]
        if caps is not None and "tools" not in caps:
            return f"{model} does not support tools (capabilities: {', '.join(caps)})"
        return None

    def identity(self, server: str, model: str) -> dict[str, str]:
        """What ``server`` says ``model`` is (digest or id), asked once per server and model."""
        key = (server, model)
        if key not in self._identities:
            try:
                self._identities[key] = wire_identity.model_identity(self.client_for(server), model)
            except _ASKED:
                self._identities[key] = {}  # the chat call reports what is wrong
        return self._identities[key]

    def server_identity(self, server: str) -> dict[str, str]:
        """What ``server`` says it is (kind and version), asked once per server."""
        if server not in self._servers:
            try:
                self._servers[server] = wire_identity.server_identity(self.client_for(server))
            except _ASKED:
                self._servers[server] = {}  # the chat call reports what is wrong
        return self._servers[server]

    def warm_up(self, request: ChatRequest, server: str) -> dict[str, Any] | None:
        """One unrecorded, unscored request before a model's first recorded one on ``server``.

        The first reply after a server or model start is an outlier (measured on both real
        servers), so it is spent here. Returns what to report, or None when already warm.
        """
        key = (server, request.model)
        if not self.warmup or key in self._warmed:
            return None
        self._warmed.add(key)
        outcome: dict[str, Any] = {"model": request.model, "server": redact_url(server)}
        with server_slot(server, self.parallel):
            started = time.perf_counter()
            try:
                self.client_for(server).chat(request)
            except ClientError as exc:
                outcome["error"] = str(exc)[:200]
            outcome["seconds"] = round(time.perf_counter() - started, 3)
        return outcome
