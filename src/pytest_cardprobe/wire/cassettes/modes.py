"""Record modes: which tests a session records and which it replays."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import DEFAULT_MAX_FILE_MB, MB
from pytest_cardprobe.wire.body import Player
from pytest_cardprobe.wire.cassettes.fingerprint import Prints, check_fingerprint
from pytest_cardprobe.wire.cassettes.format import Recording
from pytest_cardprobe.wire.cassettes.reading import read_cassette
from pytest_cardprobe.wire.cassettes.record import Record
from pytest_cardprobe.wire.cassettes.replay import Replay
from pytest_cardprobe.wire.errors import CassetteProblem

RECORD_MODES = ("none", "once", "stale", "rewrite")


class RecordMissing:
    """Record modes ``once`` and ``stale``: record what needs it, replay the rest.

    ``once`` records tests that have no cassette; ``stale`` also those whose cassette is
    stale or unreadable. The client's player switches per test: a replayed test is
    answered from its cassette and nothing leaves the machine; a recorded one goes to the
    server through vcrpy.
    """

    live = True

    def __init__(
        self, mode: str, *, max_bytes: int = DEFAULT_MAX_FILE_MB * MB, redact: Sequence[str] = ()
    ) -> None:
        self.mode = mode
        self._replay = Replay(max_bytes, redact)
        self._record = Record(redact)

    def player(self) -> Player:
        """Answers from the open cassette while a test replays; None sends it to the server."""
        return self.play

    def play(self, method: str, path: str, content: str) -> tuple[int, bytes, Any] | None:
        """The recorded answer when the current test replays, else None (it is recorded)."""
        # Tests run one at a time per process, so an open replay cassette means this
        # request belongs to a replayed test; a recorded test has none open.
        if not self._replay._playing:
            return None
        return self._replay.play(method, path, content)

    def records(self, path: Path, fingerprint: Prints | None) -> bool:
        """True when this mode records the test whose cassette is ``path``."""
        if not path.exists():
            return True
        if self.mode != "stale":
            return False
        try:
            data = read_cassette(path)
            if fingerprint is not None:
                check_fingerprint(path, data, fingerprint())
        except CassetteProblem:
            return True
        return False

    @contextlib.contextmanager
    def open(
        self, path: Path, *, fingerprint: Prints | None, rerecord_hint: str
    ) -> Iterator[Recording]:
        """Record ``path`` when the mode says so, else replay it."""
        backend: Replay | Record = self._record if self.records(path, fingerprint) else self._replay
        with backend.open(path, fingerprint=fingerprint, rerecord_hint=rerecord_hint) as rec:
            yield rec


Backend = Replay | Record | RecordMissing
"""How a session reaches its model: chosen once from the settings, handed to the runtime."""


def backend_for(
    record_mode: str, *, max_bytes: int = DEFAULT_MAX_FILE_MB * MB, redact: Sequence[str] = ()
) -> Backend:
    """The backend of a record mode: ``none`` replays, ``rewrite`` records every test."""
    if record_mode == "none":
        return Replay(max_bytes, redact)
    if record_mode == "rewrite":
        return Record(redact)
    return RecordMissing(record_mode, max_bytes=max_bytes, redact=redact)
