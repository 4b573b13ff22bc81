"""What one ask of the upstream saw, for the capture proxy's asking again: whether it went out
on a connection an earlier ask had used, and how many bytes came back.

A server may close a kept-alive connection, idle, just as a request goes out on it; the
request then fails with nothing read back, most likely before the server read it. That is the
one failure the proxy asks again (``relay.py``). A request that failed on a connection opened
for it, or after any byte of a reply, may have reached a server that acted on it, and is not.

The proxy's transport is watched from below (:func:`watch` wraps its network backend in place,
as the client's transport does for its deadline): each connection remembers the attempt that
last wrote on it, so a write by another attempt marks that one as ``reused``, and every read
adds its bytes to the current attempt. The attempt is a context variable, so the requests the
proxy relays at once each count their own. Reuse is positive evidence: an attempt nothing
marked (were a new httpx to stop using the wrapped backend) is never asked again.
"""

from __future__ import annotations

import contextlib
import contextvars
import ssl
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from pytest_cardprobe.wire.deadline import KEEPALIVE_EXPIRY_S
from pytest_cardprobe.wire.transport import wrap_backend


@dataclass(eq=False)
class Attempt:
    """One ask: whether it wrote on a connection an earlier ask had used, and the bytes it
    read back."""

    reused: bool = False
    read: int = 0

    @property
    def dropped_unread(self) -> bool:
        """Failed on a kept-alive connection with nothing read back: asked again."""
        return self.reused and self.read == 0


_CURRENT: contextvars.ContextVar[Attempt | None] = contextvars.ContextVar(
    "cardprobe_capture_attempt", default=None
)


@contextlib.contextmanager
def attempt() -> Iterator[Attempt]:
    """An attempt that the connections written and read inside the block count into."""
    seen = Attempt()
    token = _CURRENT.set(seen)
    try:
        yield seen
    finally:
        _CURRENT.reset(token)


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream, owner: Attempt | None) -> None:
        self._inner, self._owner = inner, owner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._inner.read(max_bytes, timeout)
        seen = _CURRENT.get()
        if seen is not None:
            seen.read += len(data)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        seen = _CURRENT.get()
        if seen is not None and seen is not self._owner:
            seen.reused = self._owner is not None
            self._owner = seen
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        inner = await self._inner.start_tls(ssl_context, server_hostname, timeout)
        return _Stream(inner, self._owner)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.AsyncNetworkBackend):
    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    @staticmethod
    def _opened(stream: httpcore.AsyncNetworkStream) -> httpcore.AsyncNetworkStream:
        return _Stream(stream, _CURRENT.get())

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return self._opened(
            await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        )

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        return self._opened(await self._inner.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def watch(transport: httpx.AsyncHTTPTransport) -> httpx.AsyncHTTPTransport:
    """``transport`` with its connections counted into the current :class:`Attempt`
    (:class:`~pytest_cardprobe.wire.transport.BackendMoved` if this httpx keeps its network
    backend elsewhere)."""
    wrap_backend(transport, _Backend, "where capture watches its connections")
    return transport


def watched_transport() -> httpx.AsyncHTTPTransport:
    """The proxy's transport: httpx's own, used directly (a proxy needs no redirects,
    cookies, auth flows or default headers, only the request as the client sent it), its
    idle connections let go after ``KEEPALIVE_EXPIRY_S``, and watched."""
    return watch(
        httpx.AsyncHTTPTransport(
            limits=httpx.Limits(
                max_connections=None,
                max_keepalive_connections=64,
                keepalive_expiry=KEEPALIVE_EXPIRY_S,
            ),
            # The proxy relays what the application sent: no proxy variables, no .netrc.
            trust_env=False,
        )
    )
