"""A fault-injecting HTTP proxy on loopback, in front of a real model server (issue 14).

Each connection takes the next fault from a queue; when the queue is empty the proxy passes
requests through untouched, so with no faults at all it is a counting proxy: ``chat_posts``
is how many chat requests (``POST`` to a chat path) the server behind it was really sent.
Faults that need a real reply (a truncated body, an error line in the middle of a stream, a
slow drip) forward the request to the real server and damage what it answered; the others
answer without asking it. ``drip-last`` drips the last real reply the proxy passed on for
that path (a request sent through it beforehand, with no deadline), so the drip starts at
once however long the server takes to generate. One request per connection
(``Connection: close``), threads, bounded waits, and a lifetime after which it stops by
itself, so a test that forgets it cannot leave it running.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import struct
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field

FAULTS = ("500", "503", "reset", "hang", "truncate", "error-line", "drip", "drip-last", "pass")


@dataclass
class FaultProxy:
    """``with FaultProxy(upstream, ["500", "500"]) as proxy: ... proxy.url``."""

    upstream: str
    faults: list[str] = field(default_factory=list)
    hang_s: float = 6.0  # how long "hang" holds a connection without answering
    drip_delay_s: float = 0.2  # pause between the bytes of "drip"
    lifetime_s: float = 300.0
    # Only chat requests meet faults; the preflight's model checks and anything else pass.
    fault_paths: tuple[str, ...] = ("/api/chat", "/v1/chat/completions")
    seen: list[str] = field(default_factory=list)  # "<fault> <path>" per chat request
    chat_posts: int = 0  # POSTs to a chat path that reached the proxy, whatever their fault
    # Per "drip": (bytes sent, bytes in the whole reply); fewer sent: the client hung up.
    dripped: list[tuple[int, int]] = field(default_factory=list)
    # The body of every chat request, byte for byte as the client put it on the wire.
    bodies: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        for fault in self.faults:
            assert fault in FAULTS, fault
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._threads: list[threading.Thread] = []
        self._last: dict[str, tuple[int, str, str, bytes]] = {}  # path -> last real reply

    # -- lifecycle

    def __enter__(self) -> FaultProxy:
        thread = threading.Thread(target=self._serve, name="faultproxy", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=self.hang_s + 5)
        self._sock.close()

    def _serve(self) -> None:
        deadline = time.monotonic() + self.lifetime_s
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            worker = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            worker.start()
            self._threads.append(worker)

    # -- one connection

    def _handle(self, conn: socket.socket) -> None:
        with contextlib.closing(conn):
            conn.settimeout(30)
            try:
                method, path, headers, body = _read_request(conn)
            except (OSError, ValueError):
                return
            fault = "pass"
            if path.split("?", 1)[0] in self.fault_paths:
                with self._lock:
                    fault = self.faults.pop(0) if self.faults else "pass"
                    self.seen.append(f"{fault} {path}")
                    self.chat_posts += method == "POST"
                    self.bodies.append(body)
            # OSError: the client gave up (its timeout); nothing more to do.
            with contextlib.suppress(OSError):
                self._answer(conn, fault, method, path, headers, body)

    def _answer(
        self,
        conn: socket.socket,
        fault: str,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
    ) -> None:
        if fault in ("500", "503"):
            text = b'{"error":"injected by faultproxy"}'
            reason = "Internal Server Error" if fault == "500" else "Service Unavailable"
            conn.sendall(_response(int(fault), reason, "application/json", text))
            return
        if fault == "reset":
            # SO_LINGER 0: close sends RST instead of FIN, as a crashed server would.
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if fault == "hang":
            self._stop.wait(self.hang_s)
            return
        route = path.split("?", 1)[0]
        with self._lock:
            last = self._last.get(route) if fault == "drip-last" else None
        if last is None:
            last = self._forward(method, path, headers, body)
            with self._lock:
                self._last[route] = last
        status, reason, ctype, reply = last
        if fault == "truncate":
            whole = _response(status, reason, ctype, reply)
            conn.sendall(whole[: len(whole) - max(1, len(reply) // 2)])
            return
        if fault == "error-line":
            lines = reply.split(b"\n")
            middle = max(1, len(lines) // 2)
            error = b'{"error":"injected by faultproxy in the middle of the stream"}'
            if reply.startswith(b"data:"):
                error = b"data: " + error
            reply = b"\n".join([*lines[:middle], error, *lines[middle:]])
        if fault in ("drip", "drip-last"):
            whole = _response(status, reason, ctype, reply)
            sent = 0
            try:
                for index in range(len(whole)):
                    if self._stop.wait(self.drip_delay_s):
                        return
                    conn.sendall(whole[index : index + 1])
                    sent += 1
            finally:
                with self._lock:
                    self.dripped.append((sent, len(whole)))
            return
        conn.sendall(_response(status, reason, ctype, reply))

    def _forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, str, str, bytes]:
        parts = urllib.parse.urlsplit(self.upstream)
        upstream = http.client.HTTPConnection(
            parts.hostname or "127.0.0.1", parts.port, timeout=600
        )
        try:
            sent = {k: v for k, v in headers.items() if k.lower() in ("content-type", "accept")}
            upstream.request(method, path, body=body, headers=sent)
            answer = upstream.getresponse()
            return (
                answer.status,
                answer.reason,
                answer.getheader("content-type", "application/json"),
                answer.read(),
            )
        finally:
            upstream.close()


def _read_request(conn: socket.socket) -> tuple[str, str, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            raise ValueError("connection closed before a request")
        data += chunk
        if len(data) > 1 << 20:
            raise ValueError("request head too large")
    head, _, body = data.partition(b"\r\n\r\n")
    request_line, *lines = head.decode("latin-1").split("\r\n")
    method, path, _ = request_line.split(" ", 2)
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip()] = value.strip()
    length = int(next((v for k, v in headers.items() if k.lower() == "content-length"), "0"))
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return method, path, headers, body


def _response(status: int, reason: str, ctype: str, body: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body


@contextlib.contextmanager
def proxy(upstream: str, faults: list[str], **kwargs: float) -> Iterator[FaultProxy]:
    """A running :class:`FaultProxy`, stopped when the block ends."""
    with FaultProxy(upstream, list(faults), **kwargs) as running:  # type: ignore[arg-type]
        yield running
