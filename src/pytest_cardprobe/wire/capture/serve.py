"""Run the capture proxy: check where it listens and where it relays to, bind, serve under
uvicorn until Ctrl-C (SIGINT) or SIGTERM, and say in one line what was captured.

Loopback only unless asked: a capture proxy writes down every prompt sent to it, so a listen
address that any other machine could reach is refused without ``allow_remote``. A host name
counts as loopback only when every address it resolves to is one.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import signal
import socket
import urllib.parse
from collections.abc import Callable
from typing import Any

from pytest_cardprobe.files import shown
from pytest_cardprobe.wire.capture.relay import CaptureApp, UpstreamCut
from pytest_cardprobe.wire.redact import redact_url

#: Where capture listens when not told: the port after Ollama's own.
DEFAULT_LISTEN = "127.0.0.1:11435"


class ServeProblem(Exception):
    """A listen address or upstream URL that cannot be used; the message says why."""


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT`` or a bare ``PORT`` (on 127.0.0.1) to (host, port)."""
    value = text.strip()
    if value.isdigit():
        host, port_text = "127.0.0.1", value
    elif value.startswith("["):
        host, sep, port_text = value[1:].partition("]:")
        if not sep:
            raise ServeProblem(f"--listen {text!r}: write an IPv6 address as [ADDRESS]:PORT")
    else:
        host, sep, port_text = value.rpartition(":")
        if not sep or not host:
            raise ServeProblem(f"--listen {text!r}: expected HOST:PORT, e.g. {DEFAULT_LISTEN}")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ServeProblem(f"--listen {text!r}: the port must be a number from 0 to 65535")
    return host, int(port_text)


def loopback_problem(host: str) -> str | None:
    """Why ``host`` is not a loopback address (it resolves elsewhere, or not at all), or None."""
    try:
        found = {
            str(info[4][0]) for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        }
    except (OSError, UnicodeError) as exc:
        return f"{host!r} does not resolve ({exc})"
    others = sorted(a for a in found if not ipaddress.ip_address(a.split("%", 1)[0]).is_loopback)
    if others:
        return f"{host!r} is reachable from other machines ({', '.join(others)})"
    return None


def check_upstream(url: str) -> str:
    """The upstream base URL, checked: http(s) with a host (``host:port`` alone, as in
    ``OLLAMA_HOST``, means ``http://host:port``); its own path is kept (a gateway's
    ``https://gw.example/ollama``), a query is not. The message never quotes credentials."""
    text = url.strip()
    if "://" not in text and text:
        text = f"http://{text}"  # OLLAMA_HOST's form, host:port, means plain http
    shown = redact_url(text)
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in text):
        raise ServeProblem(f"--upstream {shown!r} holds whitespace or control characters")
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ServeProblem(f"--upstream {shown!r} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ServeProblem(
            f"--upstream {shown!r}: give the server's absolute http(s) URL, "
            "e.g. http://127.0.0.1:11434"
        )
    if port == 0:
        raise ServeProblem(f"--upstream {shown!r} has port 0")
    if parts.query or parts.fragment:
        raise ServeProblem(f"--upstream {shown!r}: a base URL has no query or fragment")
    return text.rstrip("/")


def bind(host: str, port: int, allow_remote: bool) -> socket.socket:
    """A listening socket on ``host:port``; ServeProblem for a non-loopback host unless
    ``allow_remote``, or when the address cannot be bound."""
    if not allow_remote:
        problem = loopback_problem(host)
        if problem:
            raise ServeProblem(
                f"refusing to listen on {host}: {problem}. A capture proxy writes down every "
                "prompt sent to it, so it listens on loopback (127.0.0.1, ::1) unless "
                "--allow-remote is given"
            )
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise ServeProblem(f"cannot listen on {host}:{port}: {exc}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ServeProblem(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}"
            + ("; choose another port with --listen" if exc.errno == 98 else "")
        ) from None
    sock.setblocking(False)
    return sock


def address_of(sock: socket.socket) -> str:
    """``http://127.0.0.1:PORT`` (or ``http://[::1]:PORT``) of a bound socket."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class _DropCuts(logging.Filter):
    """uvicorn logs an application's exception with its traceback; a reply the upstream broke
    is expected here and already said in one line. So is a reply Ctrl-C cut after the grace
    time, which uvicorn reports in two ERROR lines of its own (the tasks it cancels, then the
    reply left unfinished, which it closes: the client sees a broken reply)."""

    SAID = ("timeout graceful shutdown exceeded", "returned without completing response")

    def filter(self, record: logging.LogRecord) -> bool:
        info = record.exc_info
        if info and isinstance(info[1], UpstreamCut):
            return False
        return not any(said in str(record.msg) for said in self.SAID)


#: How long an idle client connection stays open (nginx's default; clients let go sooner).
CLIENT_KEEP_ALIVE_S = 75


def make_server(app: CaptureApp) -> Any:
    """The uvicorn server of ``app`` (``serve`` runs it; tests run one in a thread)."""
    import uvicorn

    config = uvicorn.Config(
        app,
        lifespan="on",
        log_level="warning",
        access_log=False,
        # The upstream's own Server and Date headers go back to the client, not uvicorn's.
        server_header=False,
        date_header=False,
        # An idle client connection is kept longer than a client keeps one (httpx: 5 s), so
        # the proxy never closes one as the client sends on it (uvicorn's own is 5 s too).
        timeout_keep_alive=CLIENT_KEEP_ALIVE_S,
        # In-flight replies get this long to finish after Ctrl-C; then they are cut.
        timeout_graceful_shutdown=3,
    )
    logging.getLogger("uvicorn.error").addFilter(_DropCuts())
    return uvicorn.Server(config)


class _Stopped(Exception):
    """SIGTERM, handed back by uvicorn once it has shut down."""


def _stopped(signum: int, frame: Any) -> None:
    raise _Stopped


def serve(app: CaptureApp, sock: socket.socket, say: Callable[[str], None]) -> None:
    """Serve ``app`` on ``sock`` until SIGINT or SIGTERM; return once it has stopped."""
    server = make_server(app)
    say(
        f"capture: listening on {address_of(sock)}, passing requests to "
        f"{app.shown_upstream}; chat exchanges go to {shown(app.store.folder)} (Ctrl-C ends)"
    )
    # uvicorn catches SIGINT and SIGTERM, shuts down, then raises the signal again with the
    # handler that was there before: the usual end of a capture, not an error.
    before = signal.signal(signal.SIGTERM, _stopped)
    try:
        with contextlib.suppress(KeyboardInterrupt, _Stopped):
            server.run(sockets=[sock])
    finally:
        signal.signal(signal.SIGTERM, before)
