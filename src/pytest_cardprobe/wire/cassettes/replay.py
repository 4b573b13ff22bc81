"""The replay backend: serves recorded responses; the client built on it has no network."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import DEFAULT_MAX_FILE_MB, MB
from pytest_cardprobe.wire.body import FirstRequest, Player
from pytest_cardprobe.wire.cassettes.fingerprint import Prints, check_fingerprint
from pytest_cardprobe.wire.cassettes.format import Recording
from pytest_cardprobe.wire.cassettes.matching import CassettePlayer
from pytest_cardprobe.wire.cassettes.metadata import CassetteMeta
from pytest_cardprobe.wire.cassettes.reading import checked_cassette
from pytest_cardprobe.wire.errors import CassetteProblem, StaleCassette
from pytest_cardprobe.wire.shapes import StreamLimits


def _recorded_body(response: Mapping[str, Any]) -> bytes:
    body = (response.get("body") or {}).get("string", b"")
    if isinstance(body, str):
        return body.encode("utf-8")
    return bytes(body or b"")


class Replay:
    """The replay backend: serves recorded responses; the client built on it has no network.

    Replay reads vcrpy's cassette format but does not go through vcrpy's patching, which
    costs more per test than pytest's own handling of a test (see BENCHMARKS.md). One
    instance per session holds the cassettes being replayed, innermost last.
    """

    live = False

    def __init__(
        self,
        max_bytes: int = DEFAULT_MAX_FILE_MB * MB,
        redact: Sequence[str] = (),
        limits: StreamLimits | None = None,
    ) -> None:
        self._playing: list[CassettePlayer] = []
        self.max_bytes = max_bytes
        self.redact = tuple(redact)
        self.limits = limits

    def records(
        self,
        path: Path,
        fingerprint: Prints | None,
        first: FirstRequest | None = None,
        samples: int = 1,
    ) -> bool:
        """Replay never records."""
        return False

    def _checked(
        self, path: Path, fingerprint: Prints | None, hint: str
    ) -> tuple[dict[str, Any], list[Any], CassetteMeta]:
        """The cassette's data, checked replies and metadata, or the problem that stops
        its replay before any request (see :meth:`open`)."""
        data, replies = checked_cassette(path, hint, self.max_bytes, self.limits)
        meta = CassetteMeta.of(data)
        try:
            if fingerprint is not None:
                if not data["interactions"] or meta.unsupported:
                    check_fingerprint(path, data, fingerprint())
                elif not meta.fingerprint:
                    check_fingerprint(path, data, {})  # refused: it has no fingerprint
        except StaleCassette as exc:
            raise exc.reworded(f"{exc}; re-record with: {hint}") from None
        return data, replies, meta

    def problem(
        self,
        path: Path,
        fingerprint: Prints | None,
        first: FirstRequest | None = None,
        samples: int = 1,
    ) -> CassetteProblem | None:
        """Why replaying the test at ``path`` would fail, decided as :meth:`open` and
        :meth:`play` decide it; None when it would replay.

        ``first`` gives the request each of the test's ``samples`` starts with, as the wire
        carries it; each is matched against the recording as replay would match it, so a
        cassette is stale here for whatever makes it stale there: the fingerprint, a request
        option outside it (``keep_alive``, ``stream``), another model, or fewer recorded
        samples than asked. A later request of a sample (a tool loop's next turn, the retry
        channel's second call) depends on the reply before it and is not foreseen.
        """
        try:
            data, replies, meta = self._checked(path, fingerprint, "-")
            if first is None or meta.unsupported:
                return None  # nothing will be asked (answered from the metadata), or unknown
            player = CassettePlayer(path, data, "-", self.redact, fingerprint, replies)
            method, wire_path, body = first()
            for _ in range(samples):
                if player.response_for(method.upper(), wire_path, body) is None:
                    return player.mismatch(method.upper(), wire_path, body)
        except CassetteProblem as exc:
            return exc
        return None

    @property
    def playing(self) -> bool:
        """True while a cassette is open for replay (a test is being replayed)."""
        return bool(self._playing)

    def player(self) -> Player:
        """What the replay client sends its requests to instead of a network."""
        return self.play

    def play(self, method: str, path: str, content: str) -> tuple[int, bytes, Any]:
        """The recorded status, body and checked reply JSON for a request, from the
        cassettes being replayed.

        A request that no open cassette holds is refused, so no call can leave the machine.
        No HTTP stack is involved: building and reading httpx requests cost more per test
        than the rest of replay (see BENCHMARKS.md, "Cassette replay").
        """
        method = method.upper()
        if not self._playing:
            raise CassetteProblem(
                f"replay without a cassette: {method} {path} would need the network; "
                "only --live talks to a server"
            )
        for player in reversed(self._playing):
            index = player.response_for(method, path, content)
            if index is not None:
                break
        else:
            raise self._playing[-1].mismatch(method, path, content)
        response = player.interactions[index]["response"]
        status = response.get("status") or {}
        return int(status.get("code", 200)), _recorded_body(response), player.replies[index]

    @contextlib.contextmanager
    def open(
        self, path: Path, *, fingerprint: Prints | None, rerecord_hint: str
    ) -> Iterator[Recording]:
        """Replay one test from ``path``: missing, corrupt or stale cassettes raise.

        A request whose body is the text of a recorded one is the recorded request, so the
        fingerprint is computed only to name what changed when a request matches nothing,
        when one matches only as parsed JSON (see :meth:`CassettePlayer.response_for`), or up front
        when no request will be matched: a cassette that holds none, or one recorded as
        unsupported (the test is answered from its metadata). A cassette without a
        fingerprint is refused up front.
        """
        rec = Recording(path=path, live=False)
        data, replies, meta = self._checked(path, fingerprint, rerecord_hint)
        rec.metadata = CassetteMeta(dict(meta.raw))
        rec.samples = len(data["interactions"])
        player = CassettePlayer(path, data, rerecord_hint, self.redact, fingerprint, replies)
        self._playing.append(player)
        try:
            yield rec
        finally:
            self._playing.remove(player)
