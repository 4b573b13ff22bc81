"""A loopback stand-in for a broken Ollama, for error paths only (breaker, lanes, slots).

It describes any model (``/api/show``, ``/api/tags``) so preflight passes, and answers every
``/api/chat`` with HTTP 500, logging which model each chat request named. Behaviour of real
servers is tested against real servers in tests/live.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FaultServer:
    """Where the stand-in listens and the models its chat requests named, in order."""

    def __init__(self, httpd: ThreadingHTTPServer) -> None:
        self.httpd = httpd
        self.chats: list[str] = []
        self.requests: list[str] = []  # every request, as "METHOD /path"
        self.delay = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        # Headers every request must carry (a header-authenticated gateway); else 401.
        self.required: dict[str, str] = {}
        self.refused: list[str] = []

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"


def _handler(server: FaultServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _admitted(self) -> bool:
            if all(self.headers.get(k) == v for k, v in server.required.items()):
                return True
            server.refused.append(self.path)
            self._send(401, {"error": "gateway: missing or wrong credentials"})
            return False

        def do_GET(self) -> None:
            server.requests.append(f"GET {self.path}")
            if not self._admitted():
                return
            if self.path.split("?", 1)[0] == "/api/tags":
                self._send(200, {"models": []})
            else:
                self._send(200, {"version": "fault"})

        def do_POST(self) -> None:
            server.requests.append(f"POST {self.path}")
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self._admitted():
                return
            if self.path.split("?", 1)[0] == "/api/show":  # a gateway's ?key= is no path
                self._send(200, {"capabilities": ["completion", "tools"]})
                return
            with server.lock:
                server.chats.append(str(body.get("model")))
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                if server.delay:
                    threading.Event().wait(server.delay)
                self._send(500, {"error": "fault server: always fails"})
            finally:
                with server.lock:
                    server.in_flight -= 1

    return Handler


@contextmanager
def fault_server() -> Iterator[FaultServer]:
    """Run a stand-in on a free loopback port for the duration of the block."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    server = FaultServer(httpd)
    httpd.RequestHandlerClass = _handler(server)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
