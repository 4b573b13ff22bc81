"""What ``draft`` reads: recorded chat exchanges, whatever recorded them.

* A capture folder (``python -m pytest_cardprobe capture``): one JSON file per exchange,
  request and reply (``wire/capture/format.py``).
* Ollama's own request logs (``OLLAMA_DEBUG_LOG_REQUESTS=1``, Ollama 0.18.3 and later): a
  folder of ``<UTC time>-<counter>_<route>_body.json`` files, requests only (``api_chat``
  and ``v1_chat_completions`` are read; the curl scripts beside them and other routes are
  not).
* OpenAI-shaped JSONL: one ``{"input": request, "output": reply}`` per line, the reply an
  OpenAI chat completion or an Ollama ``/api/chat`` reply, or absent.

A folder is read file by file (not recursively) in name order, which is time order for both
kinds of folder. Anything that is not such a file — a symbolic link, a file over the size
cap, bytes that are not UTF-8, a truncated or malformed document, a JSONL line that is not
an object — is skipped with a reason naming the file (and line), and the rest is read.
Request bodies and replies pass through the one redaction (``wire/redact.py``) first.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import FileRefused, read_capped, shown
from pytest_cardprobe.jsonread import load_json
from pytest_cardprobe.types import ChatReply
from pytest_cardprobe.wire.capture.format import CaptureProblem, is_stream, read_capture
from pytest_cardprobe.wire.errors import InfraError
from pytest_cardprobe.wire.ollama import parse_ollama_reply
from pytest_cardprobe.wire.ollama_stream import parse_ollama_stream
from pytest_cardprobe.wire.openai import parse_openai_reply
from pytest_cardprobe.wire.openai_stream import parse_openai_stream
from pytest_cardprobe.wire.redact import redact_fields
from pytest_cardprobe.wire.shapes import read_stream, reply_problem

#: Ollama's request-log file names: ``20260509T003012.123456789Z-000001_api_chat_body.json``.
OLLAMA_LOG = re.compile(r"^\d{8}T\d{6}(?:\.\d+)?Z-\d+_([A-Za-z0-9_]+)_body\.json$")
#: The log routes that are chat requests, and their API.
OLLAMA_LOG_ROUTES = {"api_chat": "ollama", "v1_chat_completions": "openai"}


class SourceProblem(Exception):
    """A SOURCE argument that cannot be read at all (missing, not a file or folder)."""


@dataclass
class Seen:
    """One recorded chat exchange: where it came from, its API, the request, and the reply
    when the source has one (None for a request-only source, or an unreadable reply)."""

    source: str
    api: str
    request: dict[str, Any]
    reply: ChatReply | None = None
    streamed: bool = False
    upstream: str | None = None  # the server a capture file says it went to


@dataclass
class Read:
    """Everything read from the sources, and what was skipped (one line each)."""

    seen: list[Seen] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    not_chat: int = 0  # Ollama log files of other routes (generate, embeddings, ...)


def reply_of(api: str, text: str, content_type: str = "") -> ChatReply:
    """A recorded reply (a whole body or an NDJSON/SSE stream) read by the wire's parsers;
    ValueError when it is none."""
    try:
        if is_stream(content_type, text):
            problem, stream = read_stream(api, text)
            if stream is None:
                raise ValueError(problem)
            return parse_ollama_stream(stream) if api == "ollama" else parse_openai_stream(stream)
        body = load_json(text)
        if not isinstance(body, dict):
            raise ValueError("the reply is not a JSON object")
        return whole_reply(body)
    except InfraError as exc:
        raise ValueError(str(exc)) from None


def whole_reply(body: dict[str, Any]) -> ChatReply:
    """A whole reply of either API, told apart by its shape (``choices`` or ``message``)."""
    if "choices" in body:
        api = "openai"
    elif "message" in body:
        api = "ollama"
    else:
        raise ValueError("the reply is neither an OpenAI chat completion nor an Ollama chat reply")
    # Checked as the runtime checks a reply (``wire/shapes.py``): the parsers trust the shape.
    problem = reply_problem(api, False, json.dumps(body))
    if problem:
        raise ValueError(problem)
    try:
        return parse_openai_reply(body) if api == "openai" else parse_ollama_reply(body)
    except InfraError as exc:
        raise ValueError(str(exc)) from None


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def _document(path: Path, max_bytes: int) -> Any:
    raw = read_capped(path, max_bytes)
    return load_json(raw.decode("utf-8"))


class Reader:
    """Reads SOURCE paths into a :class:`Read`, redacting ``fields`` everywhere."""

    def __init__(self, redact: Sequence[str], max_bytes: int) -> None:
        self.redact = tuple(redact)
        self.max_bytes = max_bytes
        self.read = Read()
        self._folders: dict[Path, str] = {}

    def source(self, path: Path) -> None:
        """Read one SOURCE argument (a folder, a capture or log file, or a JSONL file)."""
        if path.is_dir():
            try:
                entries = sorted(os.listdir(path))
            except OSError as exc:
                raise SourceProblem(f"cannot list {shown(path)}: {exc.strerror or exc}") from None
            for name in entries:
                self._file(path / name, in_folder=True)
        elif path.exists():
            self._file(path, in_folder=False)
        else:
            raise SourceProblem(f"{shown(path)} does not exist")

    def shown(self, path: Path) -> str:
        """``path`` as messages show it: relative to the working folder, worked out once per
        folder (``files.shown`` asks for the working folder on every call)."""
        folder = self._folders.get(path.parent)
        if folder is None:
            folder = self._folders[path.parent] = shown(path.parent)
        return path.name if folder == "." else f"{folder}/{path.name}"

    def _skip(self, where: str, why: str) -> None:
        self.read.skipped.append(f"{where}: {why}")

    def _file(self, path: Path, in_folder: bool) -> None:
        name = path.name
        if name == ".gitignore" or name.endswith("_request.sh"):
            return  # capture's own .gitignore; Ollama's curl scripts beside its bodies
        if in_folder and _is_link(path):
            self._skip(shown(path), "is a symbolic link; it is not followed")
            return
        log = OLLAMA_LOG.match(name)
        if log:
            self._ollama_log(path, log.group(1))
        elif name.endswith(".jsonl"):
            self._jsonl(path)
        elif name.endswith(".json"):
            self._capture(path, self.shown(path))
        else:
            self._skip(shown(path), "is not a capture file, an Ollama request log or a .jsonl file")

    def _capture(self, path: Path, where: str) -> None:
        try:
            found = read_capture(path, self.max_bytes, where)
        except CaptureProblem as exc:
            self.read.skipped.append(str(exc))
            return
        if found.unread_request is not None:
            # Nothing to draft from: no question, no tools (not "an exchange without tools").
            self._skip(where, f"{found.unread_request}; left out")
            return
        seen = Seen(where, found.api, redact_fields(found.request, self.redact))
        seen.streamed = found.stream
        seen.upstream = found.upstream
        if found.status is None or not 200 <= found.status < 300:
            answer = f"answered {found.status}" if found.status else "was not answered"
            why = f" ({found.error})" if found.error else ""
            self._skip(seen.source, f"{answer}{why}; left out")
            return
        if found.error:
            # Cut short (the client left, capture stopped): the question stands, the reply
            # is not whole, so it drafts nothing.
            self._skip(seen.source, f"its reply was cut short ({found.error}); the request is kept")
        else:
            try:
                seen.reply = reply_of(found.api, found.reply, found.content_type)
            except ValueError as exc:
                self._skip(seen.source, f"its reply was not read ({exc}); the request is kept")
        self.read.seen.append(seen)

    def _ollama_log(self, path: Path, route: str) -> None:
        api = OLLAMA_LOG_ROUTES.get(route)
        if api is None:
            self.read.not_chat += 1
            return
        try:
            body = _document(path, self.max_bytes)
        except (FileRefused, OSError, UnicodeDecodeError, ValueError) as exc:
            self._skip(shown(path), _why(exc))
            return
        if not isinstance(body, dict):
            self._skip(shown(path), "is not a JSON object")
            return
        self.read.seen.append(Seen(shown(path), api, redact_fields(body, self.redact)))

    def _jsonl(self, path: Path) -> None:
        where = shown(path)
        try:
            lines = _lines(path, self.max_bytes)
            for number, line in lines:
                self._jsonl_line(f"{where}:{number}", line)
        except (FileRefused, OSError) as exc:
            self._skip(where, _why(exc))

    def _jsonl_line(self, where: str, line: bytes | None) -> None:
        if line is None:
            self._skip(where, f"a line longer than the {self.max_bytes:,}-byte cap")
            return
        if not line.strip():
            return
        try:
            entry = load_json(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            self._skip(where, _why(exc))
            return
        request = entry.get("input") if isinstance(entry, dict) else None
        if not isinstance(request, dict):
            self._skip(where, 'is not {"input": request, "output": reply}')
            return
        output = entry.get("output")
        api = _jsonl_api(request, output)
        seen = Seen(where, api, redact_fields(request, self.redact))
        if isinstance(output, dict):
            try:
                seen.reply = whole_reply(redact_fields(output, self.redact))
            except ValueError as exc:
                self._skip(where, f"its output was not read ({exc}); the request is kept")
        self.read.seen.append(seen)


def _jsonl_api(request: dict[str, Any], output: Any) -> str:
    """The API of a JSONL line: OpenAI's unless its reply or request has Ollama's shape (a
    ``message`` reply, an ``options`` mapping, ``think`` or ``keep_alive``)."""
    if isinstance(output, dict) and "message" in output and "choices" not in output:
        return "ollama"
    if isinstance(request.get("options"), dict) or "think" in request or "keep_alive" in request:
        return "ollama"
    return "openai"


def _why(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"is not UTF-8 text (byte {exc.start})"
    if isinstance(exc, OSError):
        return f"cannot be read: {exc.strerror or exc}"
    return f"is not read: {exc}"


def _lines(path: Path, max_line: int) -> Iterator[tuple[int, bytes | None]]:
    """The lines of a regular file, numbered from 1; a line over ``max_line`` bytes is None
    (and skipped over without holding it in memory)."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise FileRefused("is not a regular file")
    with open(path, "rb") as handle:
        number = 0
        while True:
            line = handle.readline(max_line + 1)
            if not line:
                return
            number += 1
            if len(line) > max_line and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):
                    line = handle.readline(1 << 20)
                yield number, None
                continue
            yield number, line
