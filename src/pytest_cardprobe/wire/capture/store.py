"""The capture folder: one file per chat exchange, named, redacted and written atomically,
the bounded copy of a reply kept for it, and the counts the one-line summary gives when
capture ends."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import shown, write_atomically
from pytest_cardprobe.wire.capture.format import CAPTURE_KEY, CAPTURE_VERSION, redact_reply
from pytest_cardprobe.wire.redact import redact_fields, redact_headers, redact_url

#: Written into a capture folder capture creates: a capture holds users' real prompts.
GITIGNORE = (
    "# Written by `python -m pytest_cardprobe capture`: these files hold the prompts your\n"
    "# application's users really sent, which may be personal data. Delete this file only if\n"
    "# you mean to commit them.\n*\n"
)


def utc_stamp(seconds: float, compact: bool = False) -> str:
    """``2026-05-09T00:30:12.123456Z``, or ``20260509T003012.123456Z`` for a file name."""
    whole = time.gmtime(seconds)
    micro = f"{int(seconds % 1 * 1_000_000):06d}"
    if compact:
        return time.strftime("%Y%m%dT%H%M%S", whole) + f".{micro}Z"
    return time.strftime("%Y-%m-%dT%H:%M:%S", whole) + f".{micro}Z"


def tool_set_key(tools: Any) -> str | None:
    """A short digest of a request's tool declarations, the same whatever the order of the
    tools or of the keys inside them; None when the request declares none."""
    if not isinstance(tools, list) or not tools:
        return None
    texts = sorted(json.dumps(t, sort_keys=True, ensure_ascii=False) for t in tools)
    return hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()[:16]


def write_new(path: Path, text: str) -> None:
    """Write a file that does not exist yet, whole or not at all: a hidden temporary file
    beside it (created exclusively), then renamed. ``files.write_atomically`` does the same
    for files that may exist, and first looks through the folder for leftovers of earlier
    runs, which in a folder of thousands of captures would cost every write a listing of it.

    Not synced: a capture is a log, and an fsync cost each exchange three times the CPU of
    the write and ten times its time (0.65 against 0.23 ms, 7.3 against 0.7 ms on the
    project's machine). What a power cut can cost is the last exchanges, which the reader
    then skips as empty or cut files; never a half-written file under its own name while
    the machine runs."""
    temporary = path.with_name(f".{path.name}.tmp")
    fd = os.open(
        temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666
    )
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.rename(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def request_body(raw: bytes, fields: Sequence[str]) -> tuple[Any, str | None]:
    """A chat request's body as its capture file keeps it: the JSON object with the redacted
    keys blanked, and None; or None and why nothing of it is kept. Only a JSON object has
    keys the redaction can find, so a body that is not one (form fields, text, a JSON string
    or list) is not kept at all: the file says so, with its size and content type, and holds
    none of its bytes (docs/design.md §4, "capture/"). An empty body is None and None."""
    if not raw:
        return None, None
    try:
        value = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None, "not JSON"
    if not isinstance(value, dict):
        return None, "JSON, not an object"
    return redact_fields(value, fields), None


class Tee:
    """The bounded copy of a reply kept for the capture file."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.chunks: list[bytes] = []
        self.kept = 0
        self.seen = 0

    def add(self, chunk: bytes) -> None:
        self.seen += len(chunk)
        room = self.cap - self.kept
        if room > 0:
            piece = chunk[:room]
            self.chunks.append(piece)
            self.kept += len(piece)

    def text(self, encoding: str) -> tuple[str, bool]:
        """The kept bytes as text with gzip or deflate undone (bounded by the cap too), and
        whether that is less than the whole reply."""
        data = b"".join(self.chunks)
        truncated = self.seen > self.kept
        coding = encoding.strip().lower()
        if coding in ("gzip", "x-gzip", "deflate"):
            inflater = zlib.decompressobj(47 if coding != "deflate" else 15)
            try:
                data = inflater.decompress(data, self.cap)
            except zlib.error as exc:
                return f"[cardprobe: the {coding} body could not be decoded: {exc}]", True
            truncated = truncated or bool(inflater.unconsumed_tail)
        elif coding and coding != "identity":
            return f"[cardprobe: a {coding}-encoded body is not decoded]", True
        return data.decode("utf-8", "replace"), truncated


class FolderProblem(Exception):
    """The capture folder cannot be used; the message says why and names it."""


@dataclass
class Exchange:
    """One chat exchange as it happens; :meth:`CaptureStore.document` turns it into a file."""

    api: str
    method: str
    path: str
    started: float  # time.perf_counter() when the request arrived
    request_headers: dict[str, str]
    request_body: bytes
    status: int | None = None
    reply_headers: dict[str, str] = field(default_factory=dict)
    reply_text: str = ""
    reply_bytes: int = 0
    truncated: bool = False
    first_byte: float | None = None
    ended: float | None = None
    error: str | None = None
    wall: float = field(default_factory=time.time)  # the same moment, as a wall-clock time


class CaptureStore:
    """Writes the exchanges of one capture session into ``folder`` and counts them."""

    def __init__(self, folder: Path, upstream: str, redact: Sequence[str]) -> None:
        self.folder = folder
        self.upstream = redact_url(upstream)
        self.redact = tuple(redact)
        self.session = utc_stamp(time.time(), compact=True)
        self.numbered = 0
        self.written = 0
        self.streamed = 0
        self.failed = 0
        self.cut = 0
        self.passed_through = 0
        self.unwritten: list[str] = []
        self.tool_sets: set[str] = set()
        self._lock = threading.Lock()

    def prepare(self) -> None:
        """Create the folder (with a ``.gitignore`` that keeps it out of git) or check the one
        there; FolderProblem when it is no folder or cannot be written."""
        folder = self.folder
        try:
            info = os.lstat(folder)
        except FileNotFoundError:
            try:
                folder.mkdir(parents=True)
                write_atomically(folder / ".gitignore", GITIGNORE)
            except OSError as exc:
                raise FolderProblem(
                    f"cannot create the capture folder {shown(folder)}: {exc.strerror or exc}"
                ) from None
            return
        if stat.S_ISLNK(info.st_mode):
            raise FolderProblem(
                f"the capture folder {shown(folder)} is a symbolic link; give the folder itself"
            )
        if not stat.S_ISDIR(info.st_mode):
            raise FolderProblem(f"{shown(folder)} is not a folder; --out wants a folder")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise FolderProblem(f"the capture folder {shown(folder)} cannot be written")

    def next_path(self) -> Path:
        """The file of the next exchange: ``<session start>-<number>.json``, never an existing
        file's name."""
        while True:
            self.numbered += 1
            path = self.folder / f"{self.session}-{self.numbered:06d}.json"
            if not os.path.lexists(path):
                return path

    def document(self, exchange: Exchange) -> dict[str, Any]:
        """The capture file of ``exchange``, every secret through the one redaction."""
        body, dropped = request_body(exchange.request_body, self.redact)
        content_type = exchange.reply_headers.get("content-type", "")
        seconds = (exchange.ended or exchange.started) - exchange.started
        first = None if exchange.first_byte is None else exchange.first_byte - exchange.started
        return {
            CAPTURE_KEY: CAPTURE_VERSION,
            "api": exchange.api,
            "method": exchange.method,
            "path": redact_url(exchange.path),
            "upstream": self.upstream,
            "started": utc_stamp(exchange.wall),
            "seconds": round(seconds, 6),
            "first_byte_seconds": None if first is None else round(first, 6),
            "request": {
                "headers": redact_headers(exchange.request_headers),
                "body": body,
                "bytes": len(exchange.request_body),
                "content_type": exchange.request_headers.get("content-type", "")[:200],
                "dropped": dropped,
            },
            "reply": {
                "status": exchange.status,
                "headers": redact_headers(exchange.reply_headers),
                "content_type": content_type,
                "body": redact_reply(exchange.reply_text, self.redact),
                "bytes": exchange.reply_bytes,
                "truncated": exchange.truncated,
            },
            "error": exchange.error,
        }

    def write(self, exchange: Exchange) -> Path | None:
        """Write ``exchange``'s file and count it; None (and a note) when it cannot be written."""
        document = self.document(exchange)
        body = document["request"]["body"]
        key = tool_set_key(body.get("tools")) if isinstance(body, dict) else None
        # Exchanges end on the relay's worker threads, several at once: one number each.
        with self._lock:
            path = self.next_path()
        try:
            text = json.dumps(document, ensure_ascii=False, indent=1) + "\n"
            write_new(path, text)
        except (OSError, ValueError) as exc:
            with self._lock:
                self.unwritten.append(f"{shown(path)}: {getattr(exc, 'strerror', None) or exc}")
            return None
        with self._lock:
            self._count(exchange, document, key)
        return path

    def _count(self, exchange: Exchange, document: dict[str, Any], key: str | None) -> None:
        self.written += 1
        if document["reply"]["content_type"].startswith(
            ("text/event-stream", "application/x-ndjson")
        ):
            self.streamed += 1
        if not (exchange.status and 200 <= exchange.status < 300):
            self.failed += 1
        elif exchange.error:
            self.cut += 1
        if key:
            self.tool_sets.add(key)

    def summary(self) -> str:
        """The one line capture prints when it ends."""
        plural = "" if self.written == 1 else "s"
        parts = [f"capture: {self.written} chat exchange{plural}"]
        detail = []
        if self.streamed:
            detail.append(f"{self.streamed} streamed")
        if self.failed:
            detail.append(f"{self.failed} not answered 2xx")
        if self.cut:
            detail.append(f"{self.cut} cut short")
        if detail:
            parts.append(f"({', '.join(detail)})")
        sets = len(self.tool_sets)
        parts.append(f"with {sets} distinct tool set{'' if sets == 1 else 's'},")
        parts.append(f"{self.passed_through} other request(s) passed through;")
        parts.append(f"written to {shown(self.folder)}")
        if self.unwritten:
            parts.append(f"({len(self.unwritten)} could not be written: {self.unwritten[0]})")
        return " ".join(parts)
