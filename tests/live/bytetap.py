"""Two taps for the capture proxy's live tests: what a server really sent, and what a client
really received, byte for byte, so the two can be compared.

``ByteTap`` is a plain TCP relay on loopback in front of a server: it parses nothing and
changes nothing, and keeps every byte the server sent on each connection; ``responses``
reads the HTTP replies out of them (chunked or sized bodies, several per kept-alive
connection). ``ClientTap`` is an httpx transport for the official clients
(``ollama.Client(transport=...)``, ``openai.OpenAI(http_client=httpx.Client(transport=...))``)
that keeps each reply body's raw chunks as the client read them. Both are bounded: the
relay stops by itself after ``lifetime_s``.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class ByteTap:
    """``with ByteTap(upstream_url) as tap: ... tap.url ... tap.responses()``."""

    upstream: str
    lifetime_s: float = 600.0
    received: list[bytearray] = field(default_factory=list)  # server -> client, per connection

    def __enter__(self) -> ByteTap:
        parts = urllib.parse.urlsplit(self.upstream)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._started = time.monotonic()
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set() and time.monotonic() - self._started < self.lifetime_s:
            try:
                client, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            try:
                server = socket.create_connection(self._target, timeout=30)
            except OSError:
                client.close()  # this connection fails; the tap goes on accepting
                continue
            kept = bytearray()
            with self._lock:
                self.received.append(kept)
            threading.Thread(target=self._pipe, args=(client, server, None), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, kept), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, kept: bytearray | None) -> None:
        source.settimeout(self.lifetime_s)
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if kept is not None:
                    with self._lock:
                        kept.extend(data)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

    def responses(self) -> list[tuple[int, dict[str, str], bytes]]:
        """Every HTTP reply the server sent, in order: (status, headers, body as sent)."""
        out = []
        with self._lock:
            streams = [bytes(b) for b in self.received]
        for data in streams:
            out.extend(_replies(data))
        return out


def _replies(data: bytes) -> Iterator[tuple[int, dict[str, str], bytes]]:
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            return
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = bytearray()
            while True:
                size_line, _, rest = rest.partition(b"\r\n")
                size = int(size_line.split(b";")[0], 16)
                if size == 0:
                    rest = rest.partition(b"\r\n")[2]
                    break
                body.extend(rest[:size])
                rest = rest[size + 2 :]
            yield status, headers, bytes(body)
        else:
            size = int(headers.get("content-length", len(rest)))
            yield status, headers, rest[:size]
            rest = rest[size:]
        data = rest


class ClientTap(httpx.BaseTransport):
    """httpx's own transport, keeping each reply's raw body chunks as the client reads them."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.bodies: list[tuple[str, list[bytes]]] = []  # (path, chunks) per request

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        chunks: list[bytes] = []
        self.bodies.append((request.url.path, chunks))
        inner = response.stream

        class Kept(httpx.SyncByteStream):
            def __iter__(self) -> Iterator[bytes]:
                for chunk in inner:  # type: ignore[union-attr]
                    chunks.append(chunk)
                    yield chunk

            def close(self) -> None:
                inner.close()  # type: ignore[union-attr]

        return httpx.Response(
            response.status_code, headers=response.headers, stream=Kept(),
            extensions=response.extensions,
        )  # fmt: skip

    def close(self) -> None:
        self.inner.close()


def events(body: bytes) -> list[str]:
    """An NDJSON body's lines, or an SSE body's events, as text (empty ones left out)."""
    text = body.decode("utf-8")
    separator = "\n\n" if text.lstrip().startswith(("data:", "event:", ":")) else "\n"
    return [part for part in text.split(separator) if part.strip()]


def as_dict(value: Any) -> dict[str, Any]:
    """A client library's reply object as plain data (pydantic models and dicts alike)."""
    if hasattr(value, "model_dump"):
        return dict(value.model_dump())
    return dict(value)
