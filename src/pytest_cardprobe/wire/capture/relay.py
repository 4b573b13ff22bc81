"""The ASGI application of the capture proxy: every request passed on to the upstream
server, every reply passed back as it arrives, and each chat exchange teed to the store.

Replies are relayed chunk by chunk, undecoded (``aiter_raw``: a gzip reply stays gzip for the
client that asked for it), with the upstream's status and headers less the hop-by-hop ones.
The copy kept for the capture file is bounded (``Limits.max_capture_bytes``); past it the
client still gets every byte and the file says ``truncated``. A request body larger than
``Limits.max_request_bytes`` is answered 413 without asking the upstream. A request that failed
on a kept-alive connection before any byte came back (the server closed it, idle, as the
request went out) is asked again, up to three asks in all, if it is a chat exchange or a GET,
HEAD or OPTIONS; anything else fails as it failed (``attempt.py``). When the upstream cannot be
reached or says nothing before the read timeout, the client gets a 502 or 504 whose body says
so in its API's error shape; when the connection breaks after the reply started, the client's
connection is cut as well, so it sees a broken reply, never a short one that looks whole. A
client that goes away stops the relay of its reply within ``CLIENT_GONE_GRACE_S``: a client may
hang up once it has read the last event, before the upstream's end of body arrives, and a reply
that ends within that grace is captured whole.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import httpx

from pytest_cardprobe.wire.capture.attempt import attempt, watched_transport
from pytest_cardprobe.wire.capture.format import chat_api
from pytest_cardprobe.wire.capture.store import CaptureStore, Exchange, Tee
from pytest_cardprobe.wire.redact import redact_url

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: How long a reply is still read (kept, not relayed) after its client hung up: enough for the
#: end of a body whose last event the client read, short enough to stop abandoned generations.
CLIENT_GONE_GRACE_S = 1.0

#: Headers that describe one connection, not the message (RFC 9110 §7.6.1), plus the ones the
#: HTTP libraries on either side write themselves.
# fmt: off
HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
    "te", "trailer", "trailers", "transfer-encoding", "upgrade",
})
# fmt: on
MB = 1024 * 1024
#: Methods a pass-through route may be asked again with (a chat exchange always may), and
#: the most asks of one request (each dropped one uses up a stale kept-alive connection).
REPEATABLE = frozenset({"GET", "HEAD", "OPTIONS"})
MAX_ASKS = 3


@dataclass(frozen=True)
class Limits:
    """The proxy's bounds (``capture --max-capture-mb``, ``--max-request-mb``,
    ``--upstream-timeout``)."""

    max_request_bytes: int = 64 * MB
    max_capture_bytes: int = 16 * MB
    connect_timeout_s: float = 10.0
    # Silence allowed between two reads of the upstream's reply (a model may think a while).
    read_timeout_s: float = 600.0


class UpstreamCut(Exception):
    """The upstream's reply broke after it started: the client's connection is cut too."""


def _headers(pairs: list[tuple[bytes, bytes]], drop: frozenset[str]) -> list[tuple[str, str]]:
    kept = []
    for name, value in pairs:
        key = name.decode("latin-1").lower()
        if key not in drop:
            kept.append((key, value.decode("latin-1")))
    return kept


def error_body(path: str, status: int, message: str) -> bytes:
    """An error in the shape the route's clients read: OpenAI's for ``/v1/...``, else
    Ollama's ``{"error": "..."}``."""
    if path.startswith("/v1/"):
        data: dict[str, Any] = {
            "error": {"message": message, "type": "cardprobe_capture", "code": status}
        }
    else:
        data = {"error": message}
    return json.dumps(data).encode("utf-8")


class CaptureApp:
    """``CaptureApp(upstream, store)``: an ASGI application (uvicorn runs it, ``serve.py``)."""

    def __init__(
        self,
        upstream: str,
        store: CaptureStore,
        limits: Limits | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        url = httpx.URL(upstream.rstrip("/"))
        # Credentials in the upstream URL are the proxy's own to the server: sent as Basic
        # auth (as httpx sends a URL's), never kept in the URL.
        self.upstream = str(url.copy_with(userinfo=b"")).rstrip("/")
        self.basic = (
            "Basic " + base64.b64encode(f"{url.username}:{url.password}".encode()).decode()
            if url.userinfo
            else None
        )
        self.shown_upstream = redact_url(self.upstream)
        self.store = store
        self.limits = limits or Limits()
        self.notice = notice or (lambda line: None)
        self.timeouts = {
            "connect": self.limits.connect_timeout_s,
            "read": self.limits.read_timeout_s,
            "write": self.limits.read_timeout_s,
            "pool": None,
        }
        # Built here, so that an httpx whose transport cannot be watched stops capture at once.
        self.transport = watched_transport()

    async def aclose(self) -> None:
        await self.transport.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # websockets: nothing a model server speaks; uvicorn closes them
        await self._http(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _read_body(self, receive: Receive) -> tuple[bytes, bool] | None:
        """The request body and whether it was over the limit (then it is read to its end
        and dropped, so the client can take the 413); None when the client left."""
        parts: list[bytes] = []
        size, limit = 0, self.limits.max_request_bytes
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size <= limit:
                parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts), size > limit

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started, method = time.perf_counter(), str(scope["method"])
        raw_path = scope.get("raw_path") or str(scope["path"]).encode("utf-8")
        path = raw_path.decode("latin-1")
        query = scope.get("query_string") or b""
        target = path + ("?" + query.decode("latin-1") if query else "")
        api = chat_api(method, str(scope["path"]))
        given = _headers(list(scope["headers"]), frozenset())
        headers = [(k, v) for k, v in given if k not in HOP_BY_HOP | {"host", "content-length"}]
        declared = dict(given).get("content-length", "")
        if declared.isdigit() and int(declared) > self.limits.max_request_bytes:
            await self._answer(send, 413, path, self._too_big())
            return
        read = await self._read_body(receive)
        if read is None:
            return
        body, too_big = read
        if too_big:
            await self._answer(send, 413, path, self._too_big())
            return
        exchange = None
        if api is not None:
            exchange = Exchange(api, method, target, started, dict(headers), body)
        else:
            self.store.passed_through += 1
        stopping = False
        try:
            await self._relay(method, target, headers, body, receive, send, exchange)
        except asyncio.CancelledError:
            # Capture is stopping (Ctrl-C) and this reply outlived the grace time: its client
            # is cut, its exchange written as cut short, and the task ends quietly (uvicorn
            # logs a traceback for anything an application raises, cancellation included).
            stopping = True
        finally:
            if exchange is not None:
                exchange.ended = exchange.ended or time.perf_counter()
                if stopping:  # no awaiting in a cancelled task: one small file, written here
                    written = self.store.write(exchange)
                else:
                    written = await asyncio.to_thread(self.store.write, exchange)
                if written is None:
                    self.notice(f"capture: could not write {self.store.unwritten[-1]}")
        if stopping:
            self.notice(f"cardprobe capture: {method} {path}: stopped before the reply ended")

    def _too_big(self) -> str:
        limit = self.limits.max_request_bytes / MB
        return (
            f"cardprobe capture: the request body is larger than {limit:g} MB "
            "(capture --max-request-mb raises the limit); it was not passed on"
        )

    async def _answer(self, send: Send, status: int, path: str, message: str) -> None:
        body = error_body(path, status, message)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json; charset=utf-8"),
                    (b"content-length", str(len(body)).encode("ascii")),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _relay(
        self,
        method: str,
        target: str,
        headers: list[tuple[str, str]],
        body: bytes,
        receive: Receive,
        send: Send,
        exchange: Exchange | None,
    ) -> None:
        if self.basic is not None:
            headers = [(k, v) for k, v in headers if k != "authorization"]
            headers.append(("authorization", self.basic))
        request = httpx.Request(
            method,
            self.upstream + target,
            headers=headers,
            content=body,
            extensions={"timeout": self.timeouts},
        )
        path = target.split("?", 1)[0]
        try:
            response = await self._ask(request, path, exchange is not None or method in REPEATABLE)
        except httpx.TimeoutException:
            why = (
                f"cardprobe capture: the upstream server {self.shown_upstream} did not answer "
                f"within {self._timeout_words()}"
            )
            await self._failed(send, 504, path, why, exchange)
            return
        except httpx.HTTPError as exc:
            why = (
                f"cardprobe capture: cannot reach the upstream server {self.shown_upstream}: "
                f"{type(exc).__name__}: {redact_url(str(exc)) or 'no reason given'}"
            )
            await self._failed(send, 502, path, why, exchange)
            return
        try:
            await self._pump(response, receive, send, exchange)
        finally:
            await response.aclose()

    async def _ask(self, request: httpx.Request, path: str, may_repeat: bool) -> httpx.Response:
        """The upstream's reply (its head). A request that failed on a kept-alive connection
        with nothing read back (the server closed it, idle, as the request went out) most
        likely never reached the server, and is asked again when asking twice would be
        harmless anyway (``may_repeat``), up to ``MAX_ASKS`` asks in all. ``path`` is the
        request's path as the client sent it (still percent-encoded), for the notice."""
        asks = 1
        while True:
            with attempt() as seen:  # the last ask too: its connection is watched from now
                try:
                    return await self.transport.handle_async_request(request)
                except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
                    if asks == MAX_ASKS or not (may_repeat and seen.dropped_unread):
                        raise
            asks += 1
            self.notice(
                f"cardprobe capture: {request.method} {path}: the upstream closed "
                "a kept-alive connection before replying; asked again"
            )

    def _timeout_words(self) -> str:
        limits = self.limits
        return f"{limits.connect_timeout_s:g} s to connect or {limits.read_timeout_s:g} s to reply"

    async def _failed(
        self, send: Send, status: int, path: str, why: str, exchange: Exchange | None
    ) -> None:
        self.notice(why)
        if exchange is not None:
            exchange.status, exchange.error = status, why
        await self._answer(send, status, path, why)

    async def _pump(
        self, response: httpx.Response, receive: Receive, send: Send, exchange: Exchange | None
    ) -> None:
        """Relay the reply chunk by chunk; stop at once when the client goes away."""
        pairs = _headers(list(response.headers.raw), HOP_BY_HOP)
        tee = Tee(self.limits.max_capture_bytes)
        if exchange is not None:
            exchange.status = response.status_code
            exchange.reply_headers = dict(pairs)

        gone = asyncio.Event()

        async def relay() -> None:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in pairs],
                }
            )
            async for chunk in response.aiter_raw():
                if exchange is not None:
                    if exchange.first_byte is None:
                        exchange.first_byte = time.perf_counter()
                    tee.add(chunk)
                if not gone.is_set():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if not gone.is_set():
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        async def client_gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        pump = asyncio.ensure_future(relay())
        watch = asyncio.ensure_future(client_gone())
        cut: str | None = None
        try:
            await asyncio.wait({pump, watch}, return_when=asyncio.FIRST_COMPLETED)
            if not pump.done():
                # The client hung up: keep reading (not relaying) for a moment, in case all
                # that was left is the end of the body.
                await asyncio.wait({pump}, timeout=CLIENT_GONE_GRACE_S)
            if not pump.done():
                pump.cancel()
                cut = "the client went away before the reply ended"
            try:
                await pump
            except asyncio.CancelledError:
                if cut is None:
                    raise
            except httpx.HTTPError as exc:
                cut = (
                    f"the upstream's reply broke after {tee.seen} bytes: {type(exc).__name__}: "
                    f"{redact_url(str(exc)) or 'connection closed'}"
                )
        except asyncio.CancelledError:
            # Capture is stopping (Ctrl-C) and this reply did not finish in the grace time.
            cut = "capture stopped before the reply ended"
            raise
        finally:
            watch.cancel()
            if not pump.done():
                pump.cancel()
            if exchange is not None:
                exchange.ended = time.perf_counter()
                text, truncated = tee.text(response.headers.get("content-encoding", ""))
                exchange.reply_text, exchange.reply_bytes = text, tee.seen
                exchange.truncated = truncated
                exchange.error = cut
        if cut is not None and not cut.startswith("the client"):
            self.notice(f"cardprobe capture: {cut}")
            raise UpstreamCut(cut)
