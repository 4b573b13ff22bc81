"""The recording backend: real calls through vcrpy, scrubbed of credentials, written
atomically when a test ends, and only when its calls were model behaviour."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import write_atomically
from pytest_cardprobe.wire.body import FirstRequest, parsed_body
from pytest_cardprobe.wire.cassettes.fingerprint import Prints
from pytest_cardprobe.wire.cassettes.format import (
    FORMAT,
    KEPT_HEADERS,
    METADATA_KEY,
    Recording,
    serialize_cassette,
)
from pytest_cardprobe.wire.redact import redact_fields, redact_url


def _scrubber(fields: Sequence[str]) -> Any:
    """vcrpy's ``before_record_request``: keep what replay matches on, nothing secret."""

    def scrub(request: Any) -> Any:
        # vcrpy hands over a deep copy; the request sent is not touched.
        for name in list(request.headers):
            if name.lower() not in KEPT_HEADERS:
                del request.headers[name]
        request.uri = redact_url(request.uri)
        body = request.body
        if fields and body:
            parsed = parsed_body(body)
            redacted = redact_fields(parsed, fields)
            # Rewritten only when a field was redacted: the sent text is what replay's
            # cheapest match compares with.
            if isinstance(parsed, dict | list) and redacted != parsed:
                request.body = json.dumps(redacted, ensure_ascii=False, separators=(",", ":"))
        return request

    return scrub


def _scrub_response(response: dict[str, Any]) -> dict[str, Any] | None:
    status = int(response.get("status", {}).get("code", 0))
    if status >= 500 or status == 429:
        return None  # infra, not model behaviour
    headers = response.get("headers") or {}
    for name in list(headers):
        if name.lower() not in KEPT_HEADERS:
            del headers[name]
    if "url" in response:
        response["url"] = redact_url(str(response["url"]))
    return response


class _LivePersister:
    """Starts every live recording empty; saves atomically, and only when allowed."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording

    def load_cassette(self, cassette_path: Any, serializer: Any) -> Any:
        from vcr.persisters.filesystem import CassetteNotFoundError

        raise CassetteNotFoundError()

    def save_cassette(self, cassette_path: Any, cassette_dict: Any, serializer: Any) -> None:
        if self.recording.keep:
            write_atomically(Path(cassette_path), serialize_cassette(cassette_dict))
            self.recording.written = True


class Record:
    """The recording backend: real calls through vcrpy, written atomically when a test ends."""

    live = True

    def __init__(self, redact: Sequence[str] = ()) -> None:
        self.redact = tuple(redact)

    def records(
        self,
        path: Path,
        fingerprint: Prints | None,
        first: FirstRequest | None = None,
        samples: int = 1,
    ) -> bool:
        """Every test is recorded."""
        return True

    def player(self) -> None:
        """None: the client uses the network, and vcrpy records what passes."""
        return None

    @contextlib.contextmanager
    def open(
        self, path: Path, *, fingerprint: Prints | None, rerecord_hint: str
    ) -> Iterator[Recording]:
        """Record one test to ``path``; nothing is written if ``keep`` was cleared."""
        import vcr

        rec = Recording(path=path, live=True)
        config = vcr.VCR(
            decode_compressed_response=True,
            before_record_request=_scrubber(self.redact),
            before_record_response=_scrub_response,
        )
        with config.use_cassette(
            str(path), record_mode="all", persister=_LivePersister(rec), drop_unused_requests=True
        ) as cassette:
            rec.metadata = cassette.get_metadata(
                METADATA_KEY,
                {"format": FORMAT, "fingerprint": dict(fingerprint() if fingerprint else {})},
            )
            try:
                yield rec
            except BaseException:
                # Interrupted (Ctrl-C) or broken mid-test: a partial set of samples is not a
                # recording of this test, so keep whatever cassette was there before.
                rec.keep = False
                raise
