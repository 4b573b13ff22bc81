"""Record raw model replies to vcrpy cassettes with ``--live``; replay them otherwise.

One cassette per test holds that test's samples in order. A cassette also stores a
fingerprint of the request (hashes of system prompt, history, question, tools, options,
model) so that a recording which no longer fits is reported as stale, naming what changed.
Writes are atomic: a killed run leaves the old file or the new one, never half of one.
Only model behaviour is recorded: a test whose calls hit infra errors writes nothing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_cardprobe.files import (
    DEFAULT_MAX_FILE_MB,
    MB,
    FileRefused,
    read_capped,
    shown,
    write_atomically,
)
from pytest_cardprobe.types import ChatRequest
from pytest_cardprobe.wire.client import (
    CHAT_PATHS,
    MAX_JSON_DEPTH,
    Player,
    check_reply,
    redact_url,
    too_deep,
)

FORMAT = 1
METADATA_KEY = "cardprobe"
# Deny by default: a header reaches a cassette only when replay needs it. Credentials come
# under too many names (X-Auth, X-Access-Key, Ocp-Apim-Subscription-Key, OpenAI-Organization,
# WWW-Authenticate...) for a list of bad names to keep up.
KEPT_HEADERS = frozenset({"content-type"})


REDACTED = "[redacted]"


def redact_fields(value: Any, fields: Sequence[str]) -> Any:
    """``value`` with every mapping entry whose key is in ``fields`` (any case) redacted."""
    if not fields:
        return value
    names = {f.lower() for f in fields}

    def walk(item: Any) -> Any:
        if isinstance(item, dict):
            return {k: REDACTED if str(k).lower() in names else walk(v) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v) for v in item]
        return item

    return walk(value)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def fingerprint(
    request: ChatRequest, tools_label: str = "tool declaration", redact: Sequence[str] = ()
) -> dict[str, str]:
    """Short hashes of each part of a request, so a stale recording can say what changed.

    ``tools_label`` names the tools part: call suites say ``tools`` (their declared tool
    list); card suites keep ``tool declaration``, which their recorded cassettes carry.
    Redacted fields are hashed as redacted: a hash of a short secret is a secret too.
    """
    system = [m for m in request.messages if m.get("role") == "system"]
    rest = [m for m in request.messages if m.get("role") != "system"]
    parts = {
        "model": request.model,
        "system prompt": _digest(system),
        "history": _digest(rest[:-1]),
        "question": _digest(rest[-1:]),
        tools_label: _digest(request.tools),
        "options": _digest(redact_fields(request.options, redact)),
    }
    if request.think != "off":
        # Only when asked for: recordings made before thinking existed stay valid.
        parts["thinking"] = request.think
    return parts


Prints = Callable[[], Mapping[str, str]]
"""A request's fingerprint, computed when first asked for (replay rarely needs it)."""


class CassetteProblem(Exception):
    """A recording that cannot be replayed; the message says what to do."""


class NotRecorded(CassetteProblem):
    """No cassette exists for this test."""


class StaleCassette(CassetteProblem):
    """The cassette was recorded for a different request."""


class CorruptCassette(CassetteProblem):
    """The cassette file cannot be read."""


@functools.lru_cache(maxsize=4096)
def path_part(name: str) -> str:
    """``name`` as one safe, reversible path component: ``smollm2:135m`` -> ``smollm2%3A135m``.

    Suite names, model names and case ids become folders and file names. Percent-encoding
    everything but letters, digits, ``-``, ``_`` and ``.`` leaves no separator, and a leading
    dot is encoded too, so neither ``..`` nor a hidden file can come out; an empty name
    becomes ``%`` followed by nothing a decoder would accept, so it cannot vanish either.
    """
    quoted = urllib.parse.quote(name, safe="-_.")
    if quoted.startswith("."):
        quoted = "%2E" + quoted[1:]
    return quoted or "%"


def safe_model_name(model: str) -> str:
    """Filesystem-safe, reversible model name (see :func:`path_part`)."""
    return path_part(model)


def _folder_inside(folder: str, root: str) -> bool:
    if os.path.isabs(folder) and os.path.isdir(folder):
        # An existing folder is resolved once per session: a run has a folder per suite and
        # model, and resolving costs a system call per path component. (A folder swapped
        # for a link during the session is not noticed.)
        return _existing_folder_inside(folder, root)
    return _resolved_inside(folder, root)


@functools.lru_cache(maxsize=1024)
def _existing_folder_inside(folder: str, root: str) -> bool:
    return _resolved_inside(folder, root)


def _resolved_inside(folder: str, root: str) -> bool:
    return Path(os.path.realpath(folder)).is_relative_to(os.path.realpath(root))


def _below(root: Path, *parts: str) -> Path:
    path = root.joinpath(*parts)
    # path_part makes this impossible; the check is the last line of defence if it changes.
    # The folder is resolved, not the file: a cassette may be a link the user made.
    if path.name in ("", ".", "..") or not _folder_inside(str(path.parent), str(root)):
        raise CassetteProblem(f"cassette path {path} would leave the cassette folder {root}")
    return path


def cassette_path(root: Path, suite: str, model: str, case: str, channel: str, cond: str) -> Path:
    """Where the cassette of one test lives (always inside ``root``)."""
    return _below(
        root,
        path_part(suite),
        path_part(model),
        path_part(f"{case}-{channel}-{cond}") + ".yaml",
    )


def fixture_cassette_path(root: Path, nodeid: str) -> Path:
    """Where the one cassette of an ordinary test using the ``cardprobe`` fixture lives."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")
    return _below(root, "_tests", path_part(safe) + ".yaml")


def _parsed_body(body: str | bytes | None) -> Any:
    """A request body as parsed JSON (key order and whitespace do not matter), else as text."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        return json.loads(body) if body else None
    except (ValueError, RecursionError):
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
            parsed = _parsed_body(body)
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
        # Redacted as it was when recorded, so a secret a hook adds still matches.
        if self._bodies[index] == redact_fields(_parsed_body(content), self.redact):
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
        count = len(self.interactions)
        matching = [i for i in range(count) if self._matches(i, method, path, content)]
        for index in matching:
            if not self.played[index]:
                if index in self._loose and self.prints is not None and not self._prints_checked:
                    self._prints_checked = True
                    try:
                        check_fingerprint(self.path, self.data, self.prints())
                    except StaleCassette as exc:
                        raise StaleCassette(f"{exc}; re-record with: {self.hint}") from None
                self.played[index] = True
                return index
        if matching:
            raise StaleCassette(
                f"stale cassette {shown(self.path)}: it holds {sum(self.played)} recorded call(s) "
                f"and the test asked for more; re-record with: {self.hint}"
            )
        return None

    def mismatch(self, method: str, path: str, content: str) -> StaleCassette:
        """The error for a request that matches no interaction: the parts of the request that
        changed since recording when the fingerprint tells, else the first difference."""
        if self.prints is not None:
            try:
                check_fingerprint(self.path, self.data, self.prints())
            except StaleCassette as exc:
                return StaleCassette(f"{exc}; re-record with: {self.hint}")
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
                diff = _first_difference(
                    redact_fields(_parsed_body(content), self.redact),
                    _parsed_body(recorded.get("body")),
                )
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


def read_cassette(
    path: Path, hint: str = "pytest --live", max_bytes: int = DEFAULT_MAX_FILE_MB * MB
) -> dict[str, Any]:
    """Read and check one cassette file; raise :class:`CassetteProblem` with the file named."""
    return checked_cassette(path, hint, max_bytes)[0]


def checked_cassette(
    path: Path, hint: str = "pytest --live", max_bytes: int = DEFAULT_MAX_FILE_MB * MB
) -> tuple[dict[str, Any], list[Any]]:
    """:func:`read_cassette`, and each interaction's reply JSON as checked (None for a stream
    or an error status), so that replay does not parse a reply twice."""
    try:
        text = read_capped(path, max_bytes).decode("utf-8")
    except FileNotFoundError:
        raise NotRecorded(
            f"not recorded — run with --live to record it: {hint} (no cassette {shown(path)})"
        ) from None
    except FileRefused as exc:
        raise CorruptCassette(f"corrupt cassette {shown(path)}: the cassette {exc}") from None
    except UnicodeDecodeError as exc:
        raise CorruptCassette(
            f"corrupt cassette {shown(path)}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
            f"re-record it: {hint}"
        ) from None
    except OSError as exc:
        raise CorruptCassette(
            f"corrupt cassette {shown(path)}: cannot read it ({exc.strerror or exc})"
        ) from None
    try:
        data = _load(text)
    except RecursionError:
        raise CorruptCassette(
            f"corrupt cassette {shown(path)}: nested too deeply; re-record it: {hint}"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise CorruptCassette(
            f"corrupt cassette {shown(path)}:{where} not valid YAML; re-record it: {hint}"
        ) from None
    if not isinstance(data, dict):
        raise CorruptCassette(
            f"corrupt cassette {shown(path)}: not a vcrpy cassette (a mapping with "
            f"interactions); re-record it: {hint}"
        )
    version = data.get("version")
    if version != VCR_VERSION:
        raise CorruptCassette(
            f"corrupt cassette {shown(path)}: unknown vcrpy cassette version {version!r} "
            f"(this plugin reads version {VCR_VERSION}); re-record it: {hint}"
        )
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict) or not isinstance(metadata.get(METADATA_KEY) or {}, dict):
        raise CorruptCassette(
            f"corrupt cassette {shown(path)}: its metadata is not a mapping with a "
            f"{METADATA_KEY} mapping; re-record it: {hint}"
        )
    interactions = data.get("interactions")
    if not isinstance(interactions, list):
        raise CorruptCassette(
            f"corrupt cassette {shown(path)}: no list of request/response interactions; "
            f"re-record it: {hint}"
        )
    replies = []
    for index, interaction in enumerate(interactions):
        problem, reply = _interaction_problem(interaction)
        if problem:
            raise CorruptCassette(
                f"corrupt cassette {shown(path)}: interaction {index + 1}: {problem}; "
                f"re-record it: {hint}"
            )
        replies.append(reply)
    return data, replies


VCR_VERSION = 1  # the cassette format vcrpy writes (``version: 1``)


def _interaction_problem(interaction: Any) -> tuple[str | None, Any]:
    """What is wrong with one recorded interaction for replay to serve it (None when
    nothing is), and the JSON of its reply when that is a whole 2xx chat reply.

    Beyond the fields replay needs, the recorded reply must have the shape of the API it
    came from, so the judge never gives a verdict on bytes no server sent.
    """
    problem = _shape_problem(interaction)
    if problem:
        return problem, None
    request, response = interaction["request"], interaction["response"]
    code, raw = response["status"]["code"], response["body"]["string"]
    api = CHAT_PATHS.get(urllib.parse.urlsplit(request["uri"]).path)
    if api is None or not 200 <= code < 300:
        return None, None
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8")  # _shape_problem made sure it is UTF-8
    return check_reply(api, _asked_to_stream(request.get("body")), raw)


def _shape_problem(interaction: Any) -> str | None:
    """What is wrong with the fields of one interaction, whatever API recorded it."""
    if not isinstance(interaction, dict):
        return "not a mapping"
    request, response = interaction.get("request"), interaction.get("response")
    if not isinstance(request, dict) or not all(
        isinstance(request.get(k), str) for k in ("method", "uri")
    ):
        return "request needs a method and a uri"
    sent = request.get("body")
    if sent is not None and not isinstance(sent, (str, bytes)):
        return f"request body is {type(sent).__name__}, not text"
    if not isinstance(response, dict):
        return "response is not a mapping"
    status = response.get("status")
    if not isinstance(status, dict) or not isinstance(status.get("code"), int):
        return "response has no status code"
    body = response.get("body")
    if not isinstance(body, dict) or not isinstance(body.get("string"), (str, bytes)):
        return "response has no body string"
    headers = response.get("headers") or {}
    if not isinstance(headers, dict):
        return "response headers are not a mapping"
    for name, values in headers.items():
        listed = values if isinstance(values, list) else [values]
        if not isinstance(name, str) or not all(isinstance(v, str) for v in listed):
            return f"response header {name!r} is not text"
        if name.lower() == "content-encoding" and any(v.strip() != "identity" for v in listed):
            # Recording stores bodies decoded; a compression header on one would make the
            # client try to unzip plain text.
            return f"response header content-encoding: {', '.join(listed)} on a stored body"
    raw = body["string"]
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return f"response body is not UTF-8 ({exc.reason} at byte {exc.start})"
    code = status["code"]
    if not 100 <= code <= 599:
        return f"response status {code} is not an HTTP status"
    if too_deep(raw):
        return f"response body is JSON nested more than {MAX_JSON_DEPTH} levels deep"
    return None


# In JSON text a quote inside a string is escaped, so an unescaped "stream" followed by a
# colon can only be a key. A body without this match (and without \u escapes, which could
# spell the key otherwise) has no "stream": true and need not be parsed: the request is
# most of a cassette's bytes.
_STREAM_TRUE = re.compile(r'"stream"\s*:\s*true')


def _asked_to_stream(body: Any) -> bool:
    """True when a recorded request body asked for a streamed reply (``"stream": true``)."""
    if isinstance(body, str) and "\\u" not in body and not _STREAM_TRUE.search(body):
        return False
    sent = _parsed_body(body)
    return isinstance(sent, dict) and sent.get("stream") is True


def _recorded_prints(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """The fingerprint a cassette was recorded with; None when it has none (or an empty one)."""
    found = ((data.get("metadata") or {}).get(METADATA_KEY) or {}).get("fingerprint")
    return found if isinstance(found, dict) and found else None


def check_fingerprint(path: Path, data: Mapping[str, Any], expected: Mapping[str, str]) -> None:
    """Raise :class:`StaleCassette` naming every part of the request that changed."""
    recorded = _recorded_prints(data)
    if recorded is None:
        raise StaleCassette(f"stale cassette {shown(path)}: it has no cardprobe fingerprint")
    changed = [k for k in expected if recorded.get(k) != expected[k]]
    changed += [k for k in ("thinking",) if k in recorded and k not in expected]
    if changed:
        what = ", ".join(changed)
        raise StaleCassette(f"stale cassette {shown(path)}: {what} changed since recording")


def recorded_model(path: Path) -> dict[str, str]:
    """The model identity an existing cassette was recorded with (empty when unknown)."""
    try:
        data = read_cassette(path)
    except CassetteProblem:
        return {}
    model = ((data.get("metadata") or {}).get(METADATA_KEY) or {}).get("model")
    return {str(k): str(v) for k, v in model.items()} if isinstance(model, dict) else {}


class Replay:
    """The replay backend: serves recorded responses; the client built on it has no network.

    Replay reads vcrpy's cassette format but does not go through vcrpy's patching, which
    costs more per test than pytest's own handling of a test (see BENCHMARKS.md). One
    instance per session holds the cassettes being replayed, innermost last.
    """

    live = False

    def __init__(
        self, max_bytes: int = DEFAULT_MAX_FILE_MB * MB, redact: Sequence[str] = ()
    ) -> None:
        self._playing: list[_Player] = []
        self.max_bytes = max_bytes
        self.redact = tuple(redact)

    def records(self, path: Path, fingerprint: Prints | None) -> bool:
        """Replay never records."""
        return False

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
        when one matches only as parsed JSON (see :meth:`_Player.response_for`), or up front
        when no request will be matched: a cassette that holds none, or one recorded as
        unsupported (the test is answered from its metadata). A cassette without a
        fingerprint is refused up front.
        """
        rec = Recording(path=path, live=False)
        data, replies = checked_cassette(path, rerecord_hint, self.max_bytes)
        meta = (data.get("metadata") or {}).get(METADATA_KEY) or {}
        try:
            if fingerprint is not None:
                if not data["interactions"] or meta.get("unsupported"):
                    check_fingerprint(path, data, fingerprint())
                elif not _recorded_prints(data):
                    check_fingerprint(path, data, {})  # refused: it has no fingerprint
        except StaleCassette as exc:
            raise StaleCassette(f"{exc}; re-record with: {rerecord_hint}") from None
        rec.metadata = dict(meta)
        rec.samples = len(data["interactions"])
        player = _Player(path, data, rerecord_hint, self.redact, fingerprint, replies)
        self._playing.append(player)
        try:
            yield rec
        finally:
            self._playing.remove(player)


class Record:
    """The recording backend: real calls through vcrpy, written atomically when a test ends."""

    live = True

    def __init__(self, redact: Sequence[str] = ()) -> None:
        self.redact = tuple(redact)

    def records(self, path: Path, fingerprint: Prints | None) -> bool:
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
