"""What one ask of the upstream saw, for the capture proxy's single retry: whether it opened a
new connection, and how many bytes came back on it.

A server may close a kept-alive connection, idle, just as a request goes out on it; the
request then fails with no reply at all, and the server never acted on it. That is the one
failure the proxy asks again (``relay.py``): a request that failed on a connection of its own,
or after any byte of a reply, may have reached a server that acted on it, and is not.

The proxy's transport is watched from below (:func:`watch` wraps its network backend in place,
as the client's transport does for its deadline): a new connection marks the current
:class:`Attempt` as connected, and every read adds its bytes to it. The attempt is a context
variable, so the requests the proxy relays at once each count their own.
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


@dataclass
class Attempt:
    """One ask: whether it opened a connection, and the bytes it read back."""

    connected: bool = False
    read: int = 0

    @property
    def dropped_unread(self) -> bool:
        """Failed on a kept-alive connection before any byte came back: safe to ask again."""
        return not self.connected and self.read == 0


_CURRENT: contextvars.ContextVar[Attempt | None] = contextvars.ContextVar(
    "cardprobe_capture_attempt", default=None
)


@contextlib.contextmanager
def attempt() -> Iterator[Attempt]:
    """An attempt that the connections opened and read inside the block count into."""
    seen = Attempt()
    token = _CURRENT.set(seen)
    try:
        yield seen
    finally:
        _CURRENT.reset(token)


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._inner.read(max_bytes, timeout)
        seen = _CURRENT.get()
        if seen is not None:
            seen.read += len(data)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.AsyncNetworkBackend):
    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    @staticmethod
    def _opened(stream: httpcore.AsyncNetworkStream) -> httpcore.AsyncNetworkStream:
        seen = _CURRENT.get()
        if seen is not None:
            seen.connected = True
        return _Stream(stream)

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
    """``transport`` with its connections counted into the current :class:`Attempt`."""
    # httpx takes no network backend for its pool, so it is wrapped in place; a unit test
    # fails if a new httpx moves these attributes.
    pool = getattr(transport, "_pool", None)
    inner = getattr(pool, "_network_backend", None)
    if inner is None:
        raise RuntimeError("httpx changed: no network backend to watch the capture's asks")
    pool._network_backend = _Backend(inner)  # type: ignore[union-attr]
    return transport
