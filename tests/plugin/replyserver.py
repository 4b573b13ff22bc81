"""A loopback stand-in for Ollama that answers every chat with one fixed, well-formed reply.

For error paths of recording only (where a cassette may be written, what happens when it
cannot be), never as evidence of how a real server behaves: tests/live does that.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CARD = '[{"type": "Input.Date", "id": "day"}]'


class ReplyServer:
    """Where the stand-in listens, what it answers and how many chats it was asked."""

    def __init__(self, httpd: ThreadingHTTPServer) -> None:
        self.httpd = httpd
        self.chats = 0
        self.content = CARD
        #: When set, every chat is answered with a call of this tool (a loop that never ends).
        self.call: str | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"


def _handler(server: ReplyServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] == "/api/tags":
                self._send({"models": []})
            else:
                self._send({"version": "0.0.0-stand-in"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.split("?", 1)[0] == "/api/show":
                self._send({"capabilities": ["completion", "tools"]})
                return
            server.chats += 1
            message: dict[str, Any] = {"role": "assistant", "content": server.content}
            if server.call:
                message = {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"function": {"name": server.call, "arguments": {}}}],
                }
            self._send(
                {
                    "model": body.get("model"),
                    "created_at": "2026-01-01T00:00:00Z",
                    "message": message,
                    "done": True,
                    "done_reason": "stop",
                    "eval_count": 12,
                }
            )

    return Handler


@contextmanager
def reply_server() -> Iterator[ReplyServer]:
    """Run the stand-in on a free loopback port for the duration of the block."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    server = ReplyServer(httpd)
    httpd.RequestHandlerClass = _handler(server)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
