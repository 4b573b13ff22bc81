"""Record raw model replies to vcrpy cassettes with ``--live``; replay them otherwise.

One cassette per test holds that test's samples in order. A cassette also stores a
fingerprint of the request (hashes of system prompt, history, question, tools, options,
model) so that a recording which no longer fits is reported as stale, naming what changed.
Writes are atomic: a killed run leaves the old file or the new one, never half of one.
Only model behaviour is recorded: a test whose calls hit infra errors writes nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

FORMAT = 1
METADATA_KEY = "cardprobe"
# Header names that may carry credentials; matched case-insensitively as substrings.
_SECRET_HEADER = re.compile(r"authorization|cookie|api[-_]?key|token|secret|session", re.I)


class CassetteProblem(Exception):
    """A recording that cannot be replayed; the message says what to do."""


class NotRecorded(CassetteProblem):
    """No cassette exists for this test."""


class StaleCassette(CassetteProblem):
    """The cassette was recorded for a different request."""


class CorruptCassette(CassetteProblem):
    """The cassette file cannot be read."""


def safe_model_name(model: str) -> str:
    """Filesystem-safe, reversible model name: ``smollm2:135m`` -> ``smollm2%3A135m``."""
    return urllib.parse.quote(model, safe="-_.")


def cassette_path(root: Path, suite: str, model: str, case: str, channel: str, cond: str) -> Path:
    """Where the cassette of one test lives."""
    return root / suite / safe_model_name(model) / f"{case}-{channel}-{cond}.yaml"


def shown(path: Path) -> str:
    """``path`` relative to the working directory when it is below it, for messages."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _json_body_matcher(r1: Any, r2: Any) -> None:
    """vcrpy matcher: bodies equal as parsed JSON (key order and whitespace do not matter)."""

    def parsed(request: Any) -> Any:
        body = request.body or b""
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        try:
            return json.loads(body) if body else None
        except ValueError:
            return body

    a, b = parsed(r1), parsed(r2)
    if a != b:
        raise AssertionError(_first_difference(a, b))


def _first_difference(a: Any, b: Any, where: str = "body") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{where}.{key} only in {'recording' if key in b else 'request'}"
            if a[key] != b[key]:
                return _first_difference(a[key], b[key], f"{where}.{key}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{where}[{i}]")
    return f"{where} differs"


def _scrub_request(request: Any) -> Any:
    for name in list(request.headers):
        if _SECRET_HEADER.search(name):
            del request.headers[name]
    return request


def _scrub_response(response: dict[str, Any]) -> dict[str, Any] | None:
    status = int(response.get("status", {}).get("code", 0))
    if status >= 500 or status == 429:
        return None  # infra, not model behaviour
    headers = response.get("headers") or {}
    for name in list(headers):
        if _SECRET_HEADER.search(name):
            del headers[name]
    return response


class _LivePersister:
    """Starts every live recording empty; saves atomically, and only when allowed."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording

    def load_cassette(self, cassette_path: Any, serializer: Any) -> Any:
        from vcr.persisters.filesystem import CassetteNotFoundError

        raise CassetteNotFoundError()

    def save_cassette(self, cassette_path: Any, cassette_dict: Any, serializer: Any) -> None:
        from vcr.serialize import serialize

        if self.recording.keep:
            write_atomically(Path(cassette_path), serialize(cassette_dict, serializer))
            self.recording.written = True


class _ReplayPersister:
    """Hands vcrpy the interactions already read and checked by :func:`read_cassette`."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data

    def load_cassette(self, cassette_path: Any, serializer: Any) -> Any:
        from vcr.request import Request
        from vcr.serializers import compat

        requests = [Request(**i["request"]) for i in self.data["interactions"]]
        responses = [compat.convert_to_bytes(i["response"]) for i in self.data["interactions"]]
        return requests, responses

    def save_cassette(self, cassette_path: Any, cassette_dict: Any, serializer: Any) -> None:
        raise AssertionError("replay never writes cassettes")


@dataclass
class Recording:
    """State of one test's cassette while the test runs."""

    path: Path
    live: bool
    samples: int = 0
    # Cleared when a call ended in infra or the model was unknown: nothing gets written.
    keep: bool = True
    written: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


def _load_yaml(text: str) -> Any:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)


def read_cassette(path: Path, hint: str = "pytest --live") -> dict[str, Any]:
    """Read and check one cassette file; raise :class:`CassetteProblem` with the file named."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotRecorded(f"not recorded — run with --live to record it: {hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CorruptCassette(f"corrupt cassette {shown(path)}: cannot read it ({exc})") from None
    try:
        data = _load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise CorruptCassette(
            f"corrupt cassette {shown(path)}:{where} not valid YAML; re-record it: {hint}"
        ) from None
    interactions = data.get("interactions") if isinstance(data, dict) else None
    ok = isinstance(interactions, list) and all(
        isinstance(i, dict) and isinstance(i.get("request"), dict) and "response" in i
        for i in interactions
    )
    if not ok:
        raise CorruptCassette(
            f"corrupt cassette {shown(path)}: no list of request/response interactions; "
            f"re-record it: {hint}"
        )
    assert isinstance(data, dict)
    return data


def check_fingerprint(path: Path, data: Mapping[str, Any], expected: Mapping[str, str]) -> None:
    """Raise :class:`StaleCassette` naming every part of the request that changed."""
    meta = (data.get("metadata") or {}).get(METADATA_KEY) or {}
    recorded = meta.get("fingerprint")
    if not isinstance(recorded, dict):
        raise StaleCassette(f"stale cassette {shown(path)}: it has no cardprobe fingerprint")
    changed = [k for k in expected if recorded.get(k) != expected[k]]
    if changed:
        what = ", ".join(changed)
        raise StaleCassette(f"stale cassette {shown(path)}: {what} changed since recording")


@contextlib.contextmanager
def recording(
    path: Path, *, live: bool, fingerprint: Mapping[str, str] | None, rerecord_hint: str
) -> Iterator[Recording]:
    """Wrap one test: replay from ``path``, or record to it with ``live``.

    Inside the block every httpx request goes through vcrpy: replay serves recorded
    responses in order and refuses anything else, so no request leaves the machine.
    """
    import vcr
    from vcr.errors import CannotOverwriteExistingCassetteException

    rec = Recording(path=path, live=live)
    config = vcr.VCR(
        decode_compressed_response=True,
        before_record_request=_scrub_request,
        before_record_response=_scrub_response,
    )
    config.register_matcher("json_body", _json_body_matcher)
    match_on = ("method", "path", "json_body")
    if live:
        cassette_cm = config.use_cassette(
            str(path),
            record_mode="all",
            match_on=match_on,
            persister=_LivePersister(rec),
            drop_unused_requests=True,
        )
    else:
        data = read_cassette(path, rerecord_hint)
        try:
            if fingerprint is not None:
                check_fingerprint(path, data, fingerprint)
        except StaleCassette as exc:
            raise StaleCassette(f"{exc}; re-record with: {rerecord_hint}") from None
        rec.metadata = dict((data.get("metadata") or {}).get(METADATA_KEY) or {})
        rec.samples = len(data["interactions"])
        cassette_cm = config.use_cassette(
            str(path),
            record_mode="none",
            match_on=match_on,
            persister=_ReplayPersister(data),
            allow_playback_repeats=False,
        )
    try:
        with cassette_cm as cassette:
            if live:
                rec.metadata = cassette.get_metadata(
                    METADATA_KEY, {"format": FORMAT, "fingerprint": dict(fingerprint or {})}
                )
            try:
                yield rec
            except BaseException:
                # Interrupted (Ctrl-C) or broken mid-test: a partial set of samples is not a
                # recording of this test, so keep whatever cassette was there before.
                rec.keep = False
                raise
    except CannotOverwriteExistingCassetteException as exc:
        reason = getattr(exc, "reason", "")
        if reason == "already_played":
            why = f"it holds {rec.samples} recorded call(s) and the test asked for more"
        else:
            failed = [m for _, _, fails in exc.similar_requests[:1] for _, m in fails]
            why = "the request no longer matches the recording" + (
                f" ({'; '.join(failed)[:200]})" if failed else ""
            )
        raise StaleCassette(
            f"stale cassette {shown(path)}: {why}; re-record with: {rerecord_hint}"
        ) from None
