"""Record raw model replies to vcrpy cassettes with ``--live``; replay them otherwise.

One cassette per test holds that test's samples in order. A cassette also stores a
fingerprint of the request (hashes of system prompt, history, question, tools, options,
model) so that a recording which no longer fits is reported as stale, naming what changed.
Writes are atomic: a killed run leaves the old file or the new one, never half of one.
Only model behaviour is recorded: a test whose calls hit infra errors writes nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_cardprobe.files import shown, write_atomically
from pytest_cardprobe.types import ChatRequest
from pytest_cardprobe.wire.client import Player

FORMAT = 1
METADATA_KEY = "cardprobe"
# Header names that may carry credentials; matched case-insensitively as substrings.
_SECRET_HEADER = re.compile(r"authorization|cookie|api[-_]?key|token|secret|session", re.I)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def fingerprint(request: ChatRequest) -> dict[str, str]:
    """Short hashes of each part of a request, so a stale recording can say what changed."""
    system = [m for m in request.messages if m.get("role") == "system"]
    rest = [m for m in request.messages if m.get("role") != "system"]
    return {
        "model": request.model,
        "system prompt": _digest(system),
        "history": _digest(rest[:-1]),
        "question": _digest(rest[-1:]),
        "tool declaration": _digest(request.tools),
        "options": _digest(request.options),
    }


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


def fixture_cassette_path(root: Path, nodeid: str) -> Path:
    """Where the one cassette of an ordinary test using the ``cardprobe`` fixture lives."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")
    return root / "_tests" / f"{safe}.yaml"


def _parsed_body(body: str | bytes | None) -> Any:
    """A request body as parsed JSON (key order and whitespace do not matter), else as text."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        return json.loads(body) if body else None
    except ValueError:
        return body


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
        if self.recording.keep:
            write_atomically(Path(cassette_path), serialize_cassette(cassette_dict))
            self.recording.written = True


def serialize_cassette(cassette_dict: Mapping[str, Any]) -> str:
    """The file text of a recording vcrpy hands over (its requests, responses and metadata)."""
    from vcr.serialize import serialize
    from vcr.serializers import yamlserializer

    try:
        return str(serialize(cassette_dict, _JsonAsYaml))
    except (TypeError, ValueError):
        # A body that is not text (vcrpy keeps undecodable bytes as bytes) has no JSON
        # form; vcrpy's own YAML writer stores it as !!binary.
        return str(serialize(cassette_dict, yamlserializer))


# Characters a JSON encoder leaves raw (with ensure_ascii off) that a YAML 1.1 reader refuses
# (C1 controls, lone surrogates, U+FFFE/U+FFFF) or reads as a line break and folds into a
# space (U+0085, U+2028, U+2029). Escaped, they mean the same to both readers.
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")


def dump_cassette(data: Mapping[str, Any]) -> str:
    """A cassette as JSON text that is also YAML meaning the same, so vcrpy's reader reads it.

    vcrpy's YAML serializer reads these files as they are (JSON is YAML's flow style), and
    replay reads them with :func:`json.loads`, several times faster than a YAML parser (see
    BENCHMARKS.md, "Cassette replay"). Text is kept as UTF-8, not ``\\u`` escapes: a YAML
    reader would turn an escaped surrogate pair into two lone surrogates.
    """
    text = json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False)
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


class _JsonAsYaml:
    """vcrpy's serializer interface around :func:`dump_cassette`."""

    @staticmethod
    def serialize(cassette_dict: Mapping[str, Any]) -> str:
        return dump_cassette(cassette_dict)


class _Player:
    """Serves one cassette's recorded responses, each at most once.

    A request gets the first unplayed interaction whose method, path and JSON body match it,
    as vcrpy plays a cassette; anything else is a stale cassette.
    """

    def __init__(self, path: Path, data: Mapping[str, Any], hint: str) -> None:
        self.path = path
        self.hint = hint
        self.interactions: list[dict[str, Any]] = list(data["interactions"])
        self.played = [False] * len(self.interactions)
        self._bodies: dict[int, Any] = {}

    def _matches(self, index: int, method: str, path: str, content: str) -> bool:
        recorded = self.interactions[index]["request"]
        if str(recorded.get("method", "")).upper() != method:
            return False
        if urllib.parse.urlsplit(str(recorded.get("uri", ""))).path != path:
            return False
        raw = recorded.get("body")
        if raw == content:
            return True  # the same text: the same JSON, without parsing either
        if index not in self._bodies:
            self._bodies[index] = _parsed_body(raw)
        return bool(self._bodies[index] == _parsed_body(content))

    def response_for(self, method: str, path: str, content: str) -> dict[str, Any] | None:
        """The recorded response for a request, or ``None`` when nothing here matches."""
        count = len(self.interactions)
        matching = [i for i in range(count) if self._matches(i, method, path, content)]
        for index in matching:
            if not self.played[index]:
                self.played[index] = True
                return dict(self.interactions[index]["response"])
        if matching:
            raise StaleCassette(
                f"stale cassette {shown(self.path)}: it holds {sum(self.played)} recorded call(s) "
                f"and the test asked for more; re-record with: {self.hint}"
            )
        return None

    def mismatch(self, method: str, path: str, content: str) -> StaleCassette:
        """The error for a request that matches no interaction, naming the first difference."""
        why = "the request no longer matches the recording"
        if self.interactions:
            recorded = self.interactions[0]["request"]
            want = (
                str(recorded.get("method", "")).upper(),
                urllib.parse.urlsplit(str(recorded.get("uri", ""))).path,
            )
            if want != (method, path):
                why += f" (recorded {want[0]} {want[1]}, asked {method} {path})"
            else:
                diff = _first_difference(_parsed_body(content), _parsed_body(recorded.get("body")))
                why += f" ({diff[:200]})"
        where = shown(self.path)
        return StaleCassette(f"stale cassette {where}: {why}; re-record with: {self.hint}")


def _recorded_body(response: Mapping[str, Any]) -> bytes:
    body = (response.get("body") or {}).get("string", b"")
    if isinstance(body, str):
        return body.encode("utf-8")
    return bytes(body or b"")


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


def _load(text: str) -> Any:
    """A cassette's data: JSON when it is (what this plugin writes), else YAML."""
    if text.startswith("{"):
        try:
            return json.loads(text)
        except ValueError:
            pass  # YAML's flow style but not JSON: the YAML reader decides, naming the line
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
        data = _load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise CorruptCassette(
            f"corrupt cassette {shown(path)}:{where} not valid YAML; re-record it: {hint}"
        ) from None
    interactions = data.get("interactions") if isinstance(data, dict) else None
    if not isinstance(interactions, list):
        raise CorruptCassette(
            f"corrupt cassette {shown(path)}: no list of request/response interactions; "
            f"re-record it: {hint}"
        )
    for index, interaction in enumerate(interactions):
        problem = _interaction_problem(interaction)
        if problem:
            raise CorruptCassette(
                f"corrupt cassette {shown(path)}: interaction {index + 1}: {problem}; "
                f"re-record it: {hint}"
            )
    assert isinstance(data, dict)
    return data


def _interaction_problem(interaction: Any) -> str | None:
    """What is missing from one recorded interaction for replay to serve it, if anything."""
    if not isinstance(interaction, dict):
        return "not a mapping"
    request, response = interaction.get("request"), interaction.get("response")
    if not isinstance(request, dict) or not all(
        isinstance(request.get(k), str) for k in ("method", "uri")
    ):
        return "request needs a method and a uri"
    if not isinstance(response, dict):
        return "response is not a mapping"
    status = response.get("status")
    if not isinstance(status, dict) or not isinstance(status.get("code"), int):
        return "response has no status code"
    body = response.get("body")
    if not isinstance(body, dict) or not isinstance(body.get("string"), (str, bytes)):
        return "response has no body string"
    return None


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


class Replay:
    """The replay backend: serves recorded responses; the client built on it has no network.

    Replay reads vcrpy's cassette format but does not go through vcrpy's patching, which
    costs more per test than pytest's own handling of a test (see BENCHMARKS.md). One
    instance per session holds the cassettes being replayed, innermost last.
    """

    live = False

    def __init__(self) -> None:
        self._playing: list[_Player] = []

    def player(self) -> Player:
        """What the replay client sends its requests to instead of a network."""
        return self.play

    def play(self, method: str, path: str, content: str) -> tuple[int, bytes]:
        """The recorded status and body for a request, from the cassettes being replayed.

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
            response = player.response_for(method, path, content)
            if response is not None:
                break
        else:
            raise self._playing[-1].mismatch(method, path, content)
        status = response.get("status") or {}
        return int(status.get("code", 200)), _recorded_body(response)

    @contextlib.contextmanager
    def open(
        self, path: Path, *, fingerprint: Mapping[str, str] | None, rerecord_hint: str
    ) -> Iterator[Recording]:
        """Replay one test from ``path``: missing, corrupt or stale cassettes raise first."""
        rec = Recording(path=path, live=False)
        data = read_cassette(path, rerecord_hint)
        try:
            if fingerprint is not None:
                check_fingerprint(path, data, fingerprint)
        except StaleCassette as exc:
            raise StaleCassette(f"{exc}; re-record with: {rerecord_hint}") from None
        rec.metadata = dict((data.get("metadata") or {}).get(METADATA_KEY) or {})
        rec.samples = len(data["interactions"])
        player = _Player(path, data, rerecord_hint)
        self._playing.append(player)
        try:
            yield rec
        finally:
            self._playing.remove(player)


class Record:
    """The recording backend: real calls through vcrpy, written atomically when a test ends."""

    live = True

    def player(self) -> None:
        """None: the client uses the network, and vcrpy records what passes."""
        return None

    @contextlib.contextmanager
    def open(
        self, path: Path, *, fingerprint: Mapping[str, str] | None, rerecord_hint: str
    ) -> Iterator[Recording]:
        """Record one test to ``path``; nothing is written if ``keep`` was cleared."""
        import vcr

        rec = Recording(path=path, live=True)
        config = vcr.VCR(
            decode_compressed_response=True,
            before_record_request=_scrub_request,
            before_record_response=_scrub_response,
        )
        with config.use_cassette(
            str(path), record_mode="all", persister=_LivePersister(rec), drop_unused_requests=True
        ) as cassette:
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


Backend = Replay | Record
"""How a session reaches its model: chosen once from the settings, handed to the runtime."""


def backend_for(live: bool) -> Backend:
    """The backend a session uses: recording with ``--live``, else replay."""
    return Record() if live else Replay()
