"""Which recorded interaction answers a request: vcrpy's matching, done without vcrpy.

A request is answered by the first unplayed interaction with its method, path and body;
the body matches as the same text (the fast path: no parsing) or as the same JSON meaning:
key order and spacing aside, and tool-call ids aside (the server's labels, other on every
recording, see ``wire.body.request_meaning``). Each
interaction is served at most once; anything else is a stale cassette, named by what
changed.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import shown
from pytest_cardprobe.wire.body import request_meaning
from pytest_cardprobe.wire.cassettes.fingerprint import Prints, check_fingerprint
from pytest_cardprobe.wire.errors import StaleCassette
from pytest_cardprobe.wire.redact import redact_fields


def same_path(recorded_uri: Any, path: str) -> bool:
    """Whether a recorded request went to ``path`` (``/api/chat``) of its server.

    The recorded URI holds the server's base URL, whose own path (``https://gw/ollama``, a
    gateway's prefix) is part of where the server is, not of the request: replay asks the
    API path alone.
    """
    return urllib.parse.urlsplit(str(recorded_uri or "")).path.endswith(path)


def first_difference(a: Any, b: Any, where: str = "body") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{where}.{key} only in {'recording' if key in b else 'request'}"
            if a[key] != b[key]:
                return first_difference(a[key], b[key], f"{where}.{key}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return first_difference(x, y, f"{where}[{i}]")
    return f"{where} differs"


class CassettePlayer:
    """Serves one cassette's recorded responses, each at most once.

    A request gets the first unplayed interaction whose method, path and JSON body match it,
    as vcrpy plays a cassette; anything else is a stale cassette.
    """

    def __init__(
        self,
        path: Path,
        data: Mapping[str, Any],
        hint: str,
        redact: Sequence[str] = (),
        prints: Prints | None = None,
        replies: Sequence[Any] = (),
    ) -> None:
        self.path = path
        self.hint = hint
        self.redact = redact
        self.data = data
        self.prints = prints
        self.interactions: list[dict[str, Any]] = list(data["interactions"])
        self.replies: list[Any] = list(replies) if replies else [None] * len(self.interactions)
        self.played = [False] * len(self.interactions)
        self._bodies: dict[int, Any] = {}
        # Interactions matched as parsed JSON, not as the same text (see response_for).
        self._loose: set[int] = set()
        self._prints_checked = False

    def _matches(
        self, index: int, method: str, path: str, content: str, meaning: Callable[[], Any]
    ) -> bool:
        recorded = self.interactions[index]["request"]
        if str(recorded.get("method", "")).upper() != method:
            return False
        if not same_path(recorded.get("uri"), path):
            return False
        raw = recorded.get("body")
        if raw == content:
            return True  # the same text: the same JSON, without parsing either
        if self._body(index) == meaning():
            self._loose.add(index)
            return True
        return False

    def response_for(self, method: str, path: str, content: str) -> int | None:
        """The index of the recorded interaction that answers a request, or ``None`` when
        nothing here matches.

        A request that matches as parsed JSON but not as the same text (another writer's
        spacing, or fields the recording redacted) may differ inside a redacted field, which
        only the fingerprint sees: the fingerprint is then checked, once per cassette.
        """
        asked: list[Any] = []

        def meaning() -> Any:
            # Parsed once per request, and only when no recorded body is the same text;
            # redacted as the recording was, so a secret a hook adds still matches.
            if not asked:
                asked.append(redact_fields(request_meaning(content), self.redact))
            return asked[0]

        played, count = self.played, len(self.interactions)
        # The first unplayed interaction that matches. Played ones are looked at only when none
        # does, so a test asking in the recorded order compares each request with its own
        # interaction alone (a retry cassette's tool request is not parsed to be compared with
        # the prose requests before it).
        for index in range(count):
            if played[index] or not self._matches(index, method, path, content, meaning):
                continue
            if index in self._loose and self.prints is not None and not self._prints_checked:
                self._prints_checked = True
                try:
                    check_fingerprint(self.path, self.data, self.prints())
                except StaleCassette as exc:
                    raise exc.reworded(
                        f"{exc}; re-record with: {self.hint}", self._body(index), meaning()
                    ) from None
            played[index] = True
            return index
        if any(self._matches(i, method, path, content, meaning) for i in range(count)):
            raise StaleCassette(
                f"stale cassette {shown(self.path)}: it holds {sum(self.played)} recorded call(s) "
                f"and the test asked for more; re-record with: {self.hint}"
            )
        return None

    def mismatch(self, method: str, path: str, content: str) -> StaleCassette:
        """The error for a request that matches no interaction: the parts of the request that
        changed since recording when the fingerprint tells, else the first difference."""
        recorded = self._body(0) if self.interactions else None
        asked = redact_fields(request_meaning(content), self.redact)
        if self.prints is not None:
            try:
                check_fingerprint(self.path, self.data, self.prints())
            except StaleCassette as exc:
                return exc.reworded(f"{exc}; re-record with: {self.hint}", recorded, asked)
        why = "the request no longer matches the recording"
        if self.interactions:
            first = self.interactions[0]["request"]
            want = (
                str(first.get("method", "")).upper(),
                urllib.parse.urlsplit(str(first.get("uri", ""))).path,
            )
            if want[0] != method or not same_path(first.get("uri"), path):
                why += f" (recorded {want[0]} {want[1]}, asked {method} {path})"
            else:
                diff = first_difference(asked, self._body(0))
                why += f" ({diff[:200]})"
        where = shown(self.path)
        return StaleCassette(
            f"stale cassette {where}: {why}; re-record with: {self.hint}", (), recorded, asked
        )

    def _body(self, index: int) -> Any:
        """The recorded request body of interaction ``index``, parsed (once)."""
        if index not in self._bodies:
            self._bodies[index] = request_meaning(self.interactions[index]["request"].get("body"))
        return self._bodies[index]
