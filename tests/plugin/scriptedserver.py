"""A loopback stand-in for an Ollama that sends what a test scripts, for error paths only.

It describes any model (``/api/version``, ``/api/show``, ``/api/tags``) so the preflight
passes, and answers every ``/api/chat`` with the status, headers and bytes the test set:
a stream that goes on after ``done: true``, a gzip bomb, a flood of chunks. What real
servers send is tested against real servers in tests/live; this only makes the hostile
bytes a real server would not.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Scripted:
    """What ``/api/chat`` answers: status, headers and body bytes (sent as they are)."""

    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})


class ScriptedServer:
    """Where the stand-in listens, what it answers, and the chat requests it was sent."""

    def __init__(self, reply: Scripted) -> None:
        self.httpd: ThreadingHTTPServer | None = None
        self.reply = reply
        self.chats: list[dict[str, Any]] = []
        self.accept_encoding: list[str] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        assert self.httpd is not None
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"


def ndjson(*chunks: dict[str, Any]) -> bytes:
    """Chunks as an Ollama stream writes them: one JSON object a line."""
    return b"".join(json.dumps(c).encode() + b"\n" for c in chunks)


def chunk(content: str = "", done: bool = False, **extra: Any) -> dict[str, Any]:
    """One ``/api/chat`` stream chunk."""
    message = {"role": "assistant", "content": content}
    return {"model": "smollm2:135m", "message": message, "done": done, **extra}


def _handler(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            # The client may stop reading (what a cap does).
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

        def _json(self, body: Any) -> None:
            self._send(200, json.dumps(body).encode(), {"Content-Type": "application/json"})

        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] == "/api/tags":
                self._json({"models": []})
            else:
                self._json({"version": "scripted"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?", 1)[0]
            if path == "/api/show":
                self._json({"capabilities": ["completion", "tools"]})
                return
            with server.lock:
                server.chats.append(body)
                server.accept_encoding.append(self.headers.get("Accept-Encoding", ""))
            reply = server.reply
            self._send(reply.status, reply.body, reply.headers)

    return Handler


@contextmanager
def scripted_server(reply: Scripted) -> Iterator[ScriptedServer]:
    """Run the stand-in on a free loopback port for the duration of the block."""
    server = ScriptedServer(reply)
    httpd = server.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
