"""What one capture file holds: one chat exchange, as the application and its server had it.

A capture file is a JSON object (docs/design.md §4, "The capture proxy")::

    {"cardprobe_capture": 1, "api": "ollama" | "openai", "method": "POST",
     "path": "/api/chat", "upstream": URL, "started": ISO time, "seconds": float,
     "first_byte_seconds": float | null,
     "request": {"headers": {...}, "body": object | null, "bytes": int,
                 "content_type": str, "dropped": str | null},
     "reply": {"status": int | null, "headers": {...}, "content_type": str,
               "body": str, "bytes": int, "truncated": bool},
     "error": str | null}

``request.body`` is the request's JSON object; a body that is not one (form fields, text, a
JSON string or list) is not kept at all, since the redaction finds secrets by key only:
``body`` is null and ``dropped`` says why (``"not JSON"``, ``"JSON, not an object"``), with
the body's size in ``bytes`` and its ``content_type`` beside it (files written before this
kept up to 10,000 characters of such a body as ``text``; the reader reads neither). ``reply.body``
the reply's text as the server sent it after gzip is undone (an NDJSON or SSE stream whole),
``reply.bytes`` how many bytes the server sent, and ``truncated`` whether the file holds less
than that (the capture keeps at most a set number of bytes of a reply; the application still
gets all of it). ``error`` says why an exchange ended early (the server did not answer, the
connection was cut, the client went away). Everything passes through the one redaction
(``wire/redact.py``) before it is written: header values, URL credentials and the redacted
body keys, in the request and in every JSON document of the reply.

The reader refuses what capture never writes — a symbolic link, a file over the size cap,
bytes that are not UTF-8, JSON that does not parse or that lacks a key — with a
:class:`CaptureProblem` naming the file, so a file someone else put in the folder is skipped
with a reason, never followed or half-read.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import FileRefused, read_capped, shown
from pytest_cardprobe.jsonread import load_json
from pytest_cardprobe.wire.redact import redact_fields

CAPTURE_KEY = "cardprobe_capture"
CAPTURE_VERSION = 1
#: The chat routes whose exchanges are written down, and the API each belongs to; every other
#: route passes through unrecorded.
CHAT_ROUTES: dict[str, str] = {"/api/chat": "ollama", "/v1/chat/completions": "openai"}


def chat_api(method: str, path: str) -> str | None:
    """The API of a chat request (``POST /api/chat`` -> ``ollama``), else None. The route
    may follow a prefix of the application's own (``/ollama/api/chat``, an OpenAI client
    whose ``base_url`` is ``http://proxy/gw/v1``): the proxy passes the whole path on."""
    if method.upper() != "POST":
        return None
    route = path.split("?", 1)[0].rstrip("/")
    for known, api in CHAT_ROUTES.items():
        if route == known or route.endswith(known):
            return api
    return None


def _redacted_json(text: str, fields: Sequence[str]) -> str:
    """``text`` with redacted keys blanked when it is a JSON document holding one; otherwise
    (not JSON, or nothing to redact) exactly as it was."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    cleaned = redact_fields(value, fields)
    if cleaned == value:
        return text
    return json.dumps(cleaned, ensure_ascii=False, separators=(",", ":"))


def redact_reply(text: str, fields: Sequence[str]) -> str:
    """A reply's text with the redacted body keys blanked in each JSON document it holds: the
    whole body, each NDJSON line, or each SSE ``data:`` line."""
    if not fields:
        return text
    whole = _redacted_json(text, fields)
    if whole is not text:
        return whole
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("data:"):
            head = "data: " if line.startswith("data: ") else "data:"
            lines[i] = head + _redacted_json(line[len(head) :], fields)
        elif line.startswith("{"):
            lines[i] = _redacted_json(line, fields)
    return "\n".join(lines)


def is_stream(content_type: str, text: str) -> bool:
    """A reply that came as NDJSON or SSE rather than one JSON document."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind in ("text/event-stream", "application/x-ndjson"):
        return True
    return text.lstrip().startswith("data:")


class CaptureProblem(Exception):
    """A file of a capture folder that cannot be read as a capture; the message names it."""


@dataclass(frozen=True)
class CapturedExchange:
    """One capture file as the drafter reads it."""

    path: Path
    api: str
    request: dict[str, Any]
    status: int | None
    reply: str
    content_type: str
    truncated: bool
    error: str | None
    #: The server the exchange went to (credentials already blanked), when the file says.
    upstream: str | None = None
    #: Why the request has no body to draft from (it was not a JSON object), else None.
    unread_request: str | None = None

    @property
    def stream(self) -> bool:
        """The reply came as a stream (NDJSON or SSE)."""
        return is_stream(self.content_type, self.reply)


def _field(
    data: Mapping[str, Any], key: str, ok: Callable[[Any], bool], wants: str, where: str
) -> Any:
    value = data.get(key)
    if not ok(value):
        raise CaptureProblem(f"{where}: key {key!r} must be {wants}")
    return value


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_dict(v: Any) -> bool:
    return isinstance(v, dict)


def _is_status(v: Any) -> bool:
    return v is None or (type(v) is int and 100 <= v <= 599)


def read_capture(path: Path, max_bytes: int, where: str | None = None) -> CapturedExchange:
    """One capture file, checked key by key; :class:`CaptureProblem` naming it otherwise
    (as ``where`` says, else relative to the working folder)."""
    where = where or shown(path)
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise CaptureProblem(
                f"{where}: is a symbolic link; capture writes regular files only, "
                "so it is not followed"
            )
        raw = read_capped(path, max_bytes)
    except FileRefused as exc:
        raise CaptureProblem(f"{where}: {exc}") from None
    except OSError as exc:
        raise CaptureProblem(f"{where}: cannot read it: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CaptureProblem(
            f"{where}: not UTF-8 text (byte {exc.start}); not a capture file"
        ) from None
    try:
        data = load_json(text)
    except ValueError as exc:
        raise CaptureProblem(f"{where}: not a whole JSON document ({exc})") from None
    if not isinstance(data, dict) or CAPTURE_KEY not in data:
        raise CaptureProblem(f"{where}: not a capture file (no {CAPTURE_KEY!r} key)")
    version = data[CAPTURE_KEY]
    if type(version) is not int or version != CAPTURE_VERSION:  # true and 1.0 equal 1
        raise CaptureProblem(
            f"{where}: capture format {version!r}; this pytest-cardprobe reads format "
            f"{CAPTURE_VERSION}"
        )
    api = _field(data, "api", lambda v: v in ("ollama", "openai"), "'ollama' or 'openai'", where)
    request = _field(data, "request", _is_dict, "a mapping", where)
    reply = _field(data, "reply", _is_dict, "a mapping", where)
    body = request.get("body")
    unread = None
    if not isinstance(body, dict):
        body, unread = {}, _unread_request(request)
    error = data.get("error")
    return CapturedExchange(
        path=path,
        api=api,
        request=body,
        status=_field(reply, "status", _is_status, "an HTTP status or null", f"{where}: reply"),
        reply=_field(reply, "body", _is_str, "a string", f"{where}: reply"),
        content_type=str(reply.get("content_type") or ""),
        truncated=reply.get("truncated") is True,
        error=error if isinstance(error, str) else None,
        upstream=_upstream(data.get("upstream")),
        unread_request=unread,
    )


def _unread_request(request: Mapping[str, Any]) -> str:
    """Why a capture holds no request body, in words: what capture wrote down of it (its
    size and content type, never its content), or what the file says."""
    dropped, size, kind = request.get("dropped"), request.get("bytes"), request.get("content_type")
    if type(size) is int and size == 0:
        return "its request had no body"
    why = dropped if dropped in ("not JSON", "JSON, not an object") else "not a JSON object"
    detail = [f"{size:,} bytes"] if type(size) is int and size > 0 else []
    if isinstance(kind, str) and kind and len(kind) <= 200 and kind.isprintable():
        detail.append(f"content type {kind!r}")
    said = f" ({', '.join(detail)})" if detail else ""
    return f"its request body was {why}{said}, so capture kept none of it"


def _upstream(value: Any) -> str | None:
    """A capture's ``upstream`` as a server URL a command may name, or None (not an http(s)
    URL, or one holding what a shell or a terminal would read as something else)."""
    from pytest_cardprobe.wire.redact import redact_url

    if not isinstance(value, str) or len(value) > 2000 or not value.isprintable():
        return None
    if not value.startswith(("http://", "https://")) or any(c.isspace() for c in value):
        return None
    return redact_url(value)
