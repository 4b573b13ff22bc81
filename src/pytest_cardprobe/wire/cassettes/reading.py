"""Reading a cassette file into checked data, or a :class:`CassetteProblem` naming the file.

Beyond vcrpy's fields, each recorded 2xx chat reply must have the shape of the API it came
from (``wire.shapes``), so the judge never gives a verdict on bytes no server sent; that
check parses a whole reply once and hands the JSON on, so replay does not parse it again.
"""

from __future__ import annotations

import functools
import json
import re
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pytest_cardprobe.files import DEFAULT_MAX_FILE_MB, MB, FileRefused, read_capped, shown
from pytest_cardprobe.jsonread import MAX_JSON_DEPTH, long_number, too_deep
from pytest_cardprobe.wire.body import parsed_body
from pytest_cardprobe.wire.cassettes.format import VCR_VERSION
from pytest_cardprobe.wire.cassettes.metadata import METADATA_KEY, CassetteMeta
from pytest_cardprobe.wire.errors import CassetteProblem, CorruptCassette, NotRecorded
from pytest_cardprobe.wire.shapes import StreamLimits, chat_api, check_reply

_BASE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


#: The most nodes a YAML cassette may stand for once its aliases are expanded: a few nested
#: aliases (an alias bomb) make a 9 KB file a structure of billions of nodes once anything
#: walks it. A real cassette has tens of nodes per interaction (its bodies are single
#: strings), and yaml.safe_dump writes an alias for an interaction listed twice.
MAX_YAML_NODES = 200_000


class _BoundedAliases(_BASE_LOADER):  # type: ignore[misc]
    """PyYAML's safe loader that refuses a document whose aliases expand past
    :data:`MAX_YAML_NODES` (or that refers to itself), measured on the composed node graph
    before anything is built. The plugin writes cassettes as JSON, which has no aliases."""

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        if _expanded_size(node) > MAX_YAML_NODES:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"its aliases (*name) expand to more than {MAX_YAML_NODES:,} values (an alias "
                "bomb)",
                node.start_mark,
            )
        return self.construct_document(node)


def _expanded_size(root: Any) -> int:
    """How many nodes ``root`` stands for with every alias expanded (one pass per distinct
    node; a node on its own path, an alias of itself, counts as unbounded)."""
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        children = _children(node)
        if children_done:
            on_path.discard(key)
            size[key] = min(1 + sum(size[id(c)] for c in children), MAX_YAML_NODES + 1)
            continue
        if key in size:
            continue
        if key in on_path:
            return MAX_YAML_NODES + 1  # a recursive structure
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in size)
    return size[id(root)]


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _load(text: str) -> Any:
    """A cassette's data: JSON when it is (what this plugin writes), else YAML whose aliases
    stay within :data:`MAX_YAML_NODES`."""
    if text.startswith("{"):
        try:
            return json.loads(text)
        except ValueError:
            pass  # YAML's flow style but not JSON: the YAML reader decides, naming the line
    return yaml.load(text, Loader=_BoundedAliases)


def read_cassette(
    path: Path,
    hint: str = "pytest --live",
    max_bytes: int = DEFAULT_MAX_FILE_MB * MB,
    limits: StreamLimits | None = None,
) -> dict[str, Any]:
    """Read and check one cassette file; raise :class:`CassetteProblem` with the file named."""
    return checked_cassette(path, hint, max_bytes, limits)[0]


def checked_cassette(
    path: Path,
    hint: str = "pytest --live",
    max_bytes: int = DEFAULT_MAX_FILE_MB * MB,
    limits: StreamLimits | None = None,
) -> tuple[dict[str, Any], list[Any]]:
    """:func:`read_cassette`, and each interaction's reply JSON as checked (None for a stream
    or an error status), so that replay does not parse a reply twice. A recorded stream is
    held to ``limits`` as a live one is (the defaults when None)."""
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
    except ValueError:
        # A number longer than Python converts (YAML's reader raises this itself).
        long = long_number(text)
        why = f"line {long[0]}: {long[1]}" if long else "a value cannot be read"
        message = f"corrupt cassette {shown(path)}: {why}; re-record it: {hint}"
        raise CorruptCassette(message) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None)
        why = problem if isinstance(problem, str) and "alias" in problem else "not valid YAML"
        raise CorruptCassette(
            f"corrupt cassette {shown(path)}:{where} {why}; re-record it: {hint}"
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
    problem = CassetteMeta.of(data).problem()
    if problem:
        raise CorruptCassette(f"corrupt cassette {shown(path)}: {problem}; re-record it: {hint}")
    interactions = data.get("interactions")
    if not isinstance(interactions, list):
        raise CorruptCassette(
            f"corrupt cassette {shown(path)}: no list of request/response interactions; "
            f"re-record it: {hint}"
        )
    replies = []
    asked_to_stream = _stream_memo()
    for index, interaction in enumerate(interactions):
        problem, reply = _interaction_problem(interaction, asked_to_stream, limits)
        if problem:
            raise CorruptCassette(
                f"corrupt cassette {shown(path)}: interaction {index + 1}: {problem}; "
                f"re-record it: {hint}"
            )
        replies.append(reply)
    return data, replies


def _interaction_problem(
    interaction: Any, asked_to_stream: Callable[[Any], bool], limits: StreamLimits | None = None
) -> tuple[str | None, Any]:
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
    api = _api_of(request["uri"])
    if api is None or not 200 <= code < 300:
        return None, None
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8")  # _shape_problem made sure it is UTF-8
    return check_reply(api, asked_to_stream(request.get("body")), raw, limits)


@functools.lru_cache(maxsize=256)
def _api_of(uri: str) -> str | None:
    # A cassette's requests go to one or two URIs, the same for every test of a server.
    return chat_api(urllib.parse.urlsplit(uri).path)


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
    elif not raw.isascii():
        try:
            raw.encode("utf-8")  # text a YAML or JSON escape made: a lone surrogate is none
        except UnicodeEncodeError as exc:
            return f"response body is not text (a lone surrogate at character {exc.start})"
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


def _stream_memo() -> Callable[[Any], bool]:
    """:func:`_asked_to_stream` that answers without another scan for the same body as the
    one before: a test asks its request once per sample, so its cassette repeats the text."""
    last: list[Any] = [None, False]

    def asked(body: Any) -> bool:
        if body != last[0]:
            last[0], last[1] = body, _asked_to_stream(body)
        return bool(last[1])

    return asked


def _asked_to_stream(body: Any) -> bool:
    """True when a recorded request body asked for a streamed reply (``"stream": true``)."""
    if isinstance(body, str) and "\\u" not in body and not _STREAM_TRUE.search(body):
        return False
    sent = parsed_body(body)
    return isinstance(sent, dict) and sent.get("stream") is True


def recorded_identity(path: Path) -> dict[str, dict[str, str]]:
    """What an existing cassette says it was recorded against: ``model`` (digest or id) and
    ``server`` (kind and version), each empty when unknown or unreadable."""
    try:
        meta = CassetteMeta.of(read_cassette(path))
    except CassetteProblem:
        return {"model": {}, "server": {}}
    return {"model": meta.model, "server": meta.server}
