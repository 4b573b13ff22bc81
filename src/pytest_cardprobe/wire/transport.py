"""How the client's bytes travel: httpx's own transport, with a deadline under every read.

httpx bounds each read, connect and write on its own, so a server that sends one byte every
0.2 s never trips a 3 s timeout and keeps a request open for as long as it likes. The
transport here is httpx's ``HTTPTransport`` (vcrpy records through it as through any other)
whose network streams cap the timeout of every socket operation by what is left of the
exchange's deadline, and fail once nothing is left. The deadline is below httpx, so it
bounds the response head, the body, a stream and a reply vcrpy reads whole while recording.

Connecting has its own bound (``wire.deadline.CONNECT_TIMEOUT_S``) inside the deadline. This module
imports httpx, so the client imports it only when it first talks to a server.
"""

from __future__ import annotations

import functools
import ssl
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpcore
import httpx

from pytest_cardprobe.wire.deadline import KEEPALIVE_EXPIRY_S, Deadline
from pytest_cardprobe.wire.errors import ReplyRefused

#: The ini key of the reply cap, named in the refusal.
MAX_REPLY_KEY = "cardprobe_max_reply_mb"


class DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every operation ends by the deadline."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: Deadline) -> None:
        self._inner, self._deadline = inner, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadline.cap(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._deadline.cap(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        capped = self._deadline.cap(timeout, httpcore.ConnectTimeout)
        inner = self._inner.start_tls(ssl_context, server_hostname, capped)
        return DeadlineStream(inner, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """Opens connections by the deadline and hands out streams bound by it."""

    def __init__(self, inner: httpcore.NetworkBackend, deadline: Deadline) -> None:
        self._inner, self._deadline = inner, deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        capped = self._deadline.cap(timeout, httpcore.ConnectTimeout)
        opened = self._inner.connect_tcp(host, port, capped, local_address, socket_options)
        return DeadlineStream(opened, self._deadline)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        capped = self._deadline.cap(timeout, httpcore.ConnectTimeout)
        opened = self._inner.connect_unix_socket(path, capped, socket_options)
        return DeadlineStream(opened, self._deadline)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):g} MB"


class CappedBody:
    """A reply body that stops being read one byte past ``limit``: what arrives is counted
    as it comes off the connection, below httpx's decoding and vcrpy's recording."""

    def __init__(self, inner: Iterable[bytes], limit: int, where: str) -> None:
        self._inner, self._limit, self._where = inner, limit, where

    def __iter__(self) -> Iterator[bytes]:
        seen = 0
        for part in self._inner:
            seen += len(part)
            if seen > self._limit:
                raise ReplyRefused(_too_large(self._where, self._limit))
            yield part

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()


def _too_large(where: str, limit: int) -> str:
    # Short: the start of it is the sample's label. The server is in the test's report.
    return f"reply refused: larger than the {_megabytes(limit)} cap ({MAX_REPLY_KEY})"


def _header(response: httpcore.Response, name: bytes) -> list[str]:
    return [v.decode("latin-1").strip() for k, v in response.headers if k.lower() == name]


def capped(handle: Any, limit: int, where: str) -> Any:
    """``handle`` (a connection pool's ``handle_request``) whose replies are refused when
    compressed (the client asks for none: an inflated size cannot be bounded before it is
    inflated, and vcrpy inflates whole) and cut one byte past ``limit``."""

    def handle_request(request: httpcore.Request) -> httpcore.Response:
        response: httpcore.Response = handle(request)
        listed = (e.strip() for v in _header(response, b"content-encoding") for e in v.split(","))
        encodings = [e for e in listed if e and e.lower() != "identity"]
        if encodings:
            response.close()
            # Short, since its start is the sample's label; docs/design.md §7 says why.
            raise ReplyRefused(
                f"reply refused: compressed ({', '.join(encodings)}) though asked for none "
                "(Accept-Encoding: identity)"
            )
        declared = _header(response, b"content-length")
        if declared and declared[0].isdigit() and int(declared[0]) > limit:
            response.close()
            raise ReplyRefused(_too_large(where, limit))
        assert isinstance(response.stream, Iterable)  # a sync pool's
        response.stream = CappedBody(response.stream, limit, where)
        return response

    return handle_request


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context per process (loading the CA bundle costs ~0.15 s per context)."""
    return httpx.create_ssl_context()


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTP_PROXY``, ``HTTPS_PROXY``,
    ``ALL_PROXY``, minus ``NO_PROXY``), as httpx would use it without a transport of ours."""
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


class BackendMoved(RuntimeError):
    """This httpx's transport keeps no network backend where the plugin wraps one."""


def wrap_backend(transport: Any, wrap: Callable[[Any], Any], purpose: str) -> Any:
    """Wrap the network backend of ``transport``'s connection pool in place and return the
    pool. httpx builds its pool without a way to pass httpcore's network backend, so both the
    client's deadline and the capture proxy's watch go in this way; a unit test fails if a
    new httpx moves these attributes."""
    pool = getattr(transport, "_pool", None)
    inner = getattr(pool, "_network_backend", None)
    if pool is None or inner is None:
        raise BackendMoved(
            f"httpx changed: httpx {httpx.__version__}'s transport has no network backend "
            + purpose
        )
    pool._network_backend = wrap(inner)
    return pool


def deadline_transport(
    deadline: Deadline, url: str, max_reply_bytes: int | None = None
) -> httpx.HTTPTransport:
    """httpx's transport for ``url`` (through the environment's proxy, if any) whose
    connections all keep to ``deadline``, and whose replies are read up to
    ``max_reply_bytes`` and never compressed (:func:`capped`)."""
    transport = httpx.HTTPTransport(
        verify=_ssl_context(),
        proxy=env_proxy(url),
        # httpx's own pool sizes; only the idle time is ours.
        limits=httpx.Limits(
            max_connections=100, max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_EXPIRY_S
        ),
    )
    pool = wrap_backend(
        transport,
        lambda inner: DeadlineBackend(inner, deadline),
        "to put the request deadline under",
    )
    if max_reply_bytes is not None:
        # Below httpx.HTTPTransport.handle_request, which vcrpy patches to record: a reply
        # is refused or cut before vcrpy reads (and would inflate) it.
        pool.handle_request = capped(pool.handle_request, max_reply_bytes, url)
    return transport
