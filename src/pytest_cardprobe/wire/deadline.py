"""The deadline of one exchange with a server, and the bounds on opening a connection and
on keeping an idle one.

``--request-timeout`` is the whole exchange: the transport (``wire.transport``) caps the
timeout of every socket operation by what is left of it. Each attempt of a retried request
gets a deadline of its own; the backoff between attempts is outside them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

#: The longest a connection may take to open (never longer than the request timeout).
CONNECT_TIMEOUT_S = 10.0

#: How long an idle kept-alive connection is reused: under the 5 s after which llama-server
#: (cpp-httplib), uvicorn and Node close one, so the client lets it go first. At httpx's own
#: 5 s both ends drop it together, and a request sent as the server closes gets no reply.
KEEPALIVE_EXPIRY_S = 4.0


class Deadline:
    """When the exchange in flight must be over; ``None`` while none is."""

    def __init__(self) -> None:
        self.at: float | None = None
        self.seconds = 0.0

    @contextlib.contextmanager
    def running(self, seconds: float) -> Iterator[Deadline]:
        """Give the exchange inside ``seconds`` from now (one attempt: a retry gets its own)."""
        self.at, self.seconds = time.monotonic() + seconds, seconds
        try:
            yield self
        finally:
            self.at = None

    def cap(self, timeout: float | None, error: type[Exception]) -> float | None:
        """``timeout`` shortened to what is left of the deadline; ``error`` when nothing is."""
        if self.at is None:
            return timeout
        left = self.at - time.monotonic()
        if left <= 0:
            raise error(f"the {self.seconds:g} s request deadline has passed")
        return left if timeout is None else min(timeout, left)
