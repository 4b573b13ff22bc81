"""A scripted HTTP server on loopback that stands in for a model server behind the capture
proxy, for the behaviour no real server shows on demand: a stream held between two events, a
reply that never ends, a reset, a hang, bytes that are not HTTP.

Each request is answered by the script registered for its path; a script gets the parsed
request and the raw socket file and writes whatever bytes it likes. Everything it sends is
kept in ``sent`` so a test can compare what the client got with what the server sent. Waits
are bounded: a gate that is never opened aborts the connection after ``gate_timeout_s``.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from pytest_cardprobe.wire.capture.relay import Limits
from pytest_cardprobe.wire.capture.store import CaptureStore


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Script = Callable[["Upstream", Request, BinaryIO, socket.socket], None]


@dataclass
class Upstream:
    """``with Upstream() as up: up.script["/api/chat"] = ...; up.url``."""

    script: dict[str, Script] = field(default_factory=dict)
    gate_timeout_s: float = 10.0
    requests: list[Request] = field(default_factory=list)
    sent: list[bytes] = field(default_factory=list)  # every chunk written by a script
    gates: list[threading.Event] = field(default_factory=list)

    def __enter__(self) -> Upstream:
        owner = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                while owner._one(self.rfile, self.wfile, self.connection):
                    pass

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for gate in self.gates:
            gate.set()
        self._server.shutdown()
        self._server.server_close()

    def gate(self) -> threading.Event:
        event = threading.Event()
        self.gates.append(event)
        return event

    def _one(self, rfile: BinaryIO, wfile: BinaryIO, conn: socket.socket) -> bool:
        line = rfile.readline(65537)
        if not line.strip():
            return False
        method, path, _ = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while True:
            header = rfile.readline(65537).decode("latin-1")
            if header in ("\r\n", "\n", ""):
                break
            name, _, value = header.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = rfile.read(int(headers.get("content-length", "0") or 0))
        request = Request(method, path, headers, body)
        self.requests.append(request)
        script = self.script.get(path.split("?", 1)[0], json_reply({"ok": True}))
        try:
            script(self, request, wfile, conn)
            wfile.flush()
        except (OSError, TimeoutError):
            return False
        return headers.get("connection", "").lower() != "close"

    def write(self, wfile: BinaryIO, data: bytes) -> None:
        self.sent.append(data)
        wfile.write(data)
        wfile.flush()


def head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} X"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def json_reply(value: Any, status: int = 200, gzipped: bool = False) -> Script:
    def script(up: Upstream, request: Request, wfile: BinaryIO, conn: socket.socket) -> None:
        body = json.dumps(value).encode()
        headers = {"content-type": "application/json"}
        if gzipped and "gzip" in request.headers.get("accept-encoding", ""):
            body = gzip.compress(body)
            headers["content-encoding"] = "gzip"
        headers["content-length"] = str(len(body))
        up.write(wfile, head(status, headers))
        up.write(wfile, body)

    return script


def chunked(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def stream(
    content_type: str, events: list[bytes], gates: dict[int, threading.Event] | None = None
) -> Script:
    """A chunked stream of ``events``; before event i it waits for ``gates[i]`` when given,
    and before the end of the body for ``gates[len(events)]`` (a gate not opened in time
    aborts the connection)."""

    def script(up: Upstream, request: Request, wfile: BinaryIO, conn: socket.socket) -> None:
        up.write(wfile, head(200, {"content-type": content_type, "transfer-encoding": "chunked"}))
        for i, event in enumerate(events):
            gate = (gates or {}).get(i)
            if gate is not None and not gate.wait(up.gate_timeout_s):
                reset(conn)
                return
            up.write(wfile, chunked(event))
        end = (gates or {}).get(len(events))
        if end is not None and not end.wait(up.gate_timeout_s):
            reset(conn)
            return
        up.write(wfile, b"0\r\n\r\n")

    return script


def endless(line: bytes, until: threading.Event) -> Script:
    """An NDJSON stream that never ends (one ``line`` after another until ``until`` is set or
    the client is gone)."""

    def script(up: Upstream, request: Request, wfile: BinaryIO, conn: socket.socket) -> None:
        wfile.write(
            head(200, {"content-type": "application/x-ndjson", "transfer-encoding": "chunked"})
        )
        deadline = time.monotonic() + 60
        while not until.is_set() and time.monotonic() < deadline:
            wfile.write(chunked(line))
            wfile.flush()
        reset(conn)

    return script


def reset(conn: socket.socket) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a crashed server's kernel would."""
    with contextlib.suppress(OSError):
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()


def cut_after(content_type: str, events: list[bytes]) -> Script:
    """A stream that sends ``events`` and then resets the connection mid-reply."""

    def script(up: Upstream, request: Request, wfile: BinaryIO, conn: socket.socket) -> None:
        up.write(wfile, head(200, {"content-type": content_type, "transfer-encoding": "chunked"}))
        for event in events:
            up.write(wfile, chunked(event))
        reset(conn)
        raise OSError("reset on purpose")

    return script


def hang(release: threading.Event) -> Script:
    """Read the request, answer nothing until ``release`` is set (bounded)."""

    def script(up: Upstream, request: Request, wfile: BinaryIO, conn: socket.socket) -> None:
        release.wait(up.gate_timeout_s)
        raise OSError("hung up on purpose")

    return script


def unanswered() -> Script:
    """Read the request and close the connection without a byte of reply, as a server does
    that drops an idle kept-alive connection just as a request arrives on it."""

    def script(up: Upstream, request: Request, wfile: BinaryIO, conn: socket.socket) -> None:
        raise OSError("closed unanswered on purpose")

    return script


def in_turn(*scripts: Script) -> Script:
    """The first script for the first request, the second for the second, ...; the last
    one for every request after."""
    calls = iter(scripts)
    last = scripts[-1]

    def script(up: Upstream, request: Request, wfile: BinaryIO, conn: socket.socket) -> None:
        next(calls, last)(up, request, wfile, conn)

    return script


def garbage(data: bytes) -> Script:
    """Bytes that are no HTTP reply at all, then a close."""

    def script(up: Upstream, request: Request, wfile: BinaryIO, conn: socket.socket) -> None:
        up.write(wfile, data)
        raise OSError("closed on purpose")

    return script


@contextlib.contextmanager
def running_proxy(
    upstream: str,
    folder: Path,
    limits: Limits | None = None,
    redact: tuple[str, ...] = (),
    notices: list[str] | None = None,
) -> Iterator[tuple[str, CaptureStore]]:
    """The capture proxy in front of ``upstream``, served by uvicorn in a thread of this
    process on a free loopback port: ``(its URL, its store)``; stopped when the block ends.
    The proxy's notices are appended to ``notices`` when given."""
    from pytest_cardprobe.wire.capture.relay import CaptureApp
    from pytest_cardprobe.wire.capture.serve import address_of, bind, make_server
    from pytest_cardprobe.wire.redact import DEFAULT_REDACT_FIELDS

    store = CaptureStore(folder, upstream, [*DEFAULT_REDACT_FIELDS, *redact])
    store.prepare()
    app = CaptureApp(upstream, store, limits, None if notices is None else notices.append)
    sock = bind("127.0.0.1", 0, allow_remote=False)
    server = make_server(app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started, "the capture proxy did not start"
    try:
        yield address_of(sock), store
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()
