"""Record modes: which tests a session records and which it replays."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pytest_cardprobe.files import DEFAULT_MAX_FILE_MB, MB
from pytest_cardprobe.wire.body import FirstRequest, Player
from pytest_cardprobe.wire.cassettes.fingerprint import Prints
from pytest_cardprobe.wire.cassettes.format import Recording
from pytest_cardprobe.wire.cassettes.record import Record
from pytest_cardprobe.wire.cassettes.replay import Replay
from pytest_cardprobe.wire.shapes import StreamLimits

RECORD_MODES = ("none", "once", "stale", "rewrite")


@runtime_checkable
class Backend(Protocol):
    """How a session reaches its model, chosen once from the record mode (:func:`backend_for`)
    and handed to the runtime: :class:`Replay`, :class:`Record` and :class:`RecordMissing`
    meet it."""

    #: Whether a request goes to the server unless the caller says otherwise.
    live: bool

    def records(
        self,
        path: Path,
        fingerprint: Prints | None,
        first: FirstRequest | None = None,
        samples: int = 1,
    ) -> bool:
        """True when the test whose cassette is ``path`` is recorded, not replayed."""
        ...

    def open(
        self, path: Path, *, fingerprint: Prints | None, rerecord_hint: str
    ) -> AbstractContextManager[Recording]:
        """The cassette of one test while it runs: replayed or recorded."""
        ...

    def player(self) -> Player | None:
        """What a client sends its requests to instead of the network; None: the network."""
        ...


class RecordMissing:
    """Record modes ``once`` and ``stale``: record what needs it, replay the rest.

    ``once`` records tests that have no cassette; ``stale`` also those whose replay would
    fail as stale or corrupt, whatever made it so. The client's player switches per test:
    a replayed test is answered from its cassette and nothing leaves the machine; a
    recorded one goes to the server through vcrpy.
    """

    live = True

    def __init__(
        self,
        mode: str,
        *,
        max_bytes: int = DEFAULT_MAX_FILE_MB * MB,
        redact: Sequence[str] = (),
        limits: StreamLimits | None = None,
    ) -> None:
        self.mode = mode
        self._replay = Replay(max_bytes, redact, limits)
        self._record = Record(redact, max_bytes)
        # What records() said per cassette, for the open() that follows it: open has no
        # request to match, and the cassette is not read twice to decide.
        self._decided: dict[Path, bool] = {}

    def player(self) -> Player:
        """Answers from the open cassette while a test replays; None sends it to the server."""
        return self.play

    def play(self, method: str, path: str, content: str) -> tuple[int, bytes, Any] | None:
        """The recorded answer when the current test replays, else None (it is recorded)."""
        # Tests run one at a time per process, so an open replay cassette means this
        # request belongs to a replayed test; a recorded test has none open.
        if not self._replay.playing:
            return None
        return self._replay.play(method, path, content)

    def records(
        self,
        path: Path,
        fingerprint: Prints | None,
        first: FirstRequest | None = None,
        samples: int = 1,
    ) -> bool:
        """True when this mode records the test whose cassette is ``path``.

        ``once``: exactly the tests without a cassette. ``stale``: also every test whose
        replay would fail as stale or corrupt, decided by replay's own rules
        (:meth:`Replay.problem`: the same checks, the same body match for the request
        ``first`` gives), never by a second rule such as the fingerprint alone.
        """
        if not path.exists():
            decided = True
        elif self.mode != "stale":
            decided = False
        else:
            decided = self._replay.problem(path, fingerprint, first, samples) is not None
        self._decided[path] = decided
        return decided

    @contextlib.contextmanager
    def open(
        self, path: Path, *, fingerprint: Prints | None, rerecord_hint: str
    ) -> Iterator[Recording]:
        """Record ``path`` when the mode says so (as :meth:`records` said just before, when
        it was asked), else replay it."""
        decided = self._decided.pop(path, None)
        if decided is None:
            decided = self.records(path, fingerprint)
            del self._decided[path]
        backend: Replay | Record = self._record if decided else self._replay
        with backend.open(path, fingerprint=fingerprint, rerecord_hint=rerecord_hint) as rec:
            yield rec


def backend_for(
    record_mode: str,
    *,
    max_bytes: int = DEFAULT_MAX_FILE_MB * MB,
    redact: Sequence[str] = (),
    limits: StreamLimits | None = None,
) -> Backend:
    """The backend of a record mode: ``none`` replays, ``rewrite`` records every test.

    ``max_bytes`` caps a cassette file both ways: replay reads none larger, and a recording
    larger is not written (replay would refuse it); ``limits`` hold recorded streams."""
    if record_mode == "none":
        return Replay(max_bytes, redact, limits)
    if record_mode == "rewrite":
        return Record(redact, max_bytes)
    return RecordMissing(record_mode, max_bytes=max_bytes, redact=redact, limits=limits)
