"""The recording backend: real calls through vcrpy, scrubbed of credentials, written
atomically when a test ends, and only when its calls were model behaviour."""

from __future__ import annotations

import contextlib
import errno
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import DEFAULT_MAX_FILE_MB, MAX_FILE_KEY, MB, shown, write_atomically
from pytest_cardprobe.wire.body import FirstRequest, parsed_body
from pytest_cardprobe.wire.cassettes.fingerprint import Prints
from pytest_cardprobe.wire.cassettes.format import KEPT_HEADERS, Recording, serialize_cassette
from pytest_cardprobe.wire.cassettes.metadata import METADATA_KEY, CassetteMeta
from pytest_cardprobe.wire.errors import CassetteNotWritten, CassetteProblem
from pytest_cardprobe.wire.redact import redact_fields, redact_url
from pytest_cardprobe.wire.unparsed import unparsed_status


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
    body = (response.get("body") or {}).get("string") or b""
    if (status >= 500 or status == 429) and unparsed_status(status, body) is None:
        return None  # infra, not model behaviour (a call the server could not parse is)
    headers = response.get("headers") or {}
    for name in list(headers):
        if name.lower() not in KEPT_HEADERS:
            del headers[name]
    if "url" in response:
        response["url"] = redact_url(str(response["url"]))
    return response


class _LivePersister:
    """Starts every live recording empty; saves atomically, and only when allowed and when
    replay will read it (no larger than ``max_bytes``, ``cardprobe_max_file_mb``)."""

    def __init__(
        self,
        recording: Recording,
        max_bytes: int = DEFAULT_MAX_FILE_MB * MB,
        hint: str = "pytest --live",
    ) -> None:
        self.recording = recording
        self.max_bytes = max_bytes
        self.hint = hint

    def load_cassette(self, cassette_path: Any, serializer: Any) -> Any:
        from vcr.persisters.filesystem import CassetteNotFoundError

        raise CassetteNotFoundError()

    def save_cassette(self, cassette_path: Any, cassette_dict: Any, serializer: Any) -> None:
        if self.recording.keep:
            path = Path(cassette_path)
            text = serialize_cassette(cassette_dict)
            size = len(text.encode("utf-8"))
            if size > self.max_bytes:
                raise CassetteProblem(
                    f"cassette {shown(path)} not written: at {size:,} bytes "
                    f"it is larger than the {self.max_bytes / MB:g} MB cap replay reads "
                    f"({MAX_FILE_KEY}); raise {MAX_FILE_KEY}, or ask fewer samples or "
                    "shorter replies (the previous cassette is kept)"
                )
            try:
                write_atomically(path, text)
            except OSError as exc:
                # write_atomically leaves the old file as it was (and no temporary file).
                raise CassetteNotWritten(not_written(path, exc, self.hint)) from None
            self.recording.written = True


def not_written(path: Path, exc: OSError, hint: str) -> str:
    """Why a recording could not be kept, naming the file and the system's reason."""
    reason = exc.strerror or str(exc)
    name = errno.errorcode.get(exc.errno or 0)
    return (
        f"cannot write the cassette {shown(path)}: {reason}"
        + (f" ({name})" if name else "")
        + "; the replies of this test were not kept and the cassette is as it was. Free some "
        f"space or make the folder writable, then re-record: {hint}"
    )


class Record:
    """The recording backend: real calls through vcrpy, written atomically when a test ends."""

    live = True

    def __init__(
        self, redact: Sequence[str] = (), max_bytes: int = DEFAULT_MAX_FILE_MB * MB
    ) -> None:
        self.redact = tuple(redact)
        self.max_bytes = max_bytes

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
            str(path),
            record_mode="all",
            persister=_LivePersister(rec, self.max_bytes, rerecord_hint),
            drop_unused_requests=True,
        ) as cassette:
            fresh = CassetteMeta.fresh(fingerprint() if fingerprint else {})
            rec.metadata = CassetteMeta(cassette.get_metadata(METADATA_KEY, fresh))
            try:
                yield rec
            except BaseException:
                # Interrupted (Ctrl-C) or broken mid-test: a partial set of samples is not a
                # recording of this test, so keep whatever cassette was there before.
                rec.keep = False
                raise
