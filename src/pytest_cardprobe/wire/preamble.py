"""What a probe that records learns of its server and model before its cassette opens.

:func:`prepare` is the one call the runtime makes before it opens a probe's cassette: it asks
the backend whether the probe records, and if so asks the :class:`~.pool.ServerPool` what the
model and the server are now, compares them with what the old cassette says it was recorded
against, and spends the warm-up request. None of it is recorded. The :class:`Preamble` it
returns is what the result reports and what the new recording is stamped with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cardprobe.types import ChatRequest
from pytest_cardprobe.wire import identity as wire_identity
from pytest_cardprobe.wire.cassettes.fingerprint import Prints
from pytest_cardprobe.wire.cassettes.format import Recording
from pytest_cardprobe.wire.cassettes.modes import Backend
from pytest_cardprobe.wire.cassettes.reading import recorded_identity
from pytest_cardprobe.wire.pool import ServerPool
from pytest_cardprobe.wire.redact import redact_url


@dataclass
class Preamble:
    """What a recorded probe learnt before its cassette opened; all empty when it replays."""

    #: The server asked, credentials redacted (shown in reports); None when replayed.
    server: str | None = None
    #: What the server says the model is now (digest or id), written to the new recording.
    model: dict[str, str] = field(default_factory=dict)
    #: What the server says it is (kind, version, sampling defaults).
    serving: dict[str, str] = field(default_factory=dict)
    #: "old → new" when the old recording's model or server differs from today's.
    model_changed: str | None = None
    server_changed: str | None = None
    #: The unrecorded warm-up request this probe triggered (:meth:`ServerPool.warm_up`).
    warmup: dict[str, Any] | None = None

    def stamp(self, rec: Recording, suite_file: str) -> None:
        """A recording: note the server, the suite file and the time in its metadata."""
        if rec.live:
            rec.metadata.stamp(suite_file, self.serving)

    def keep_model(self, rec: Recording, build: str | None) -> None:
        """A recording: note the model's identity in its metadata, with ``build``, the system
        fingerprint the server's last reply named (OpenAI-compatible servers), if any."""
        if not rec.live:
            return
        identity = dict(self.model)
        if build is not None:
            identity["system_fingerprint"] = build
        if identity:
            rec.metadata.model = identity


def prepare(
    backend: Backend,
    pool: ServerPool,
    request: ChatRequest,
    model: str,
    server: str,
    path: Path,
    prints: Prints,
    samples: int,
    *,
    warm: bool,
) -> Preamble:
    """Before the cassette ``path`` opens: an empty :class:`Preamble` when ``backend``
    replays it; else what ``server`` and ``model`` (the probe's, whatever the adjust hook
    made of ``request``) are, what changed since the old recording, and (``warm``) the
    warm-up with ``request``.

    ``prints`` and ``samples`` are what a backend that records only stale cassettes needs to
    decide as replay would, with ``request``'s body as the first sample sends it.
    """
    first = lambda: pool.client_for(server).wire_request(request)  # noqa: E731
    if not backend.records(path, prints, first, samples):
        return Preamble()
    identity = dict(pool.identity(server, model))
    serving = pool.server_identity(server)
    before = recorded_identity(path)
    return Preamble(
        server=redact_url(server),
        model=identity,
        serving=serving,
        model_changed=wire_identity.model_change(before["model"], identity),
        server_changed=wire_identity.server_change(before["server"], serving, request.options),
        warmup=pool.warm_up(request, server) if warm else None,
    )
