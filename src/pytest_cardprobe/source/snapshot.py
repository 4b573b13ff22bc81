"""Source stage: the committed snapshot of what a suite's sources gave when it was recorded.

A recording run writes ``<cassette dir>/<suite>/@sources.json`` (the ``@`` keeps it apart
from every model folder: cassette paths percent-encode ``@``). It sits with the suite's
cassettes because it is part of the same recording: the requests in those cassettes carry
these declarations, it is written by the runs that write them and only there, and replay,
which reads the cassette folder anyway, needs nothing else. Each entry (``tools``,
``prompts.call``, …) holds what went on the wire, the source it came from (named without
secrets), a fingerprint of the suite's spec of it, who converted it (the client library and its
version, or the MCP server's name and version), when, and a digest of the value: a snapshot
edited by hand no longer matches its digest and is refused rather than trusted.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import FileRefused, inside, read_capped, shown, write_atomically
from pytest_cardprobe.jsonread import load_json
from pytest_cardprobe.source.listing import checked
from pytest_cardprobe.suite.sources import SourceProblem
from pytest_cardprobe.wire.cassettes.paths import path_part

FILE_NAME = "@sources.json"
FORMAT = 1
_KEYS = ("source", "spec", "identity", "recorded", "digest", "value")


def snapshot_path(cassette_dir: Path, suite: str) -> Path:
    """Where the snapshot of suite ``suite`` lives; a SourceProblem when that is a link (or
    in a linked folder) leading out of the cassette folder. As with a cassette, a recording
    writes through a link, and one out of the folder (or a dangling one, which would create
    its target) would write outside the project."""
    path = cassette_dir / path_part(suite) / FILE_NAME
    if not inside(path, [cassette_dir]):
        raise SourceProblem(
            f"the sources snapshot {shown(path)} leads outside the cassette folder "
            f"{shown(cassette_dir)} (a symbolic link); cardprobe neither reads nor records "
            "through it: remove the link"
        )
    return path


def digest(value: Any) -> str:
    """``sha256:<hex>`` of ``value`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Entry:
    """One source's recorded result."""

    source: str
    spec: str
    value: Any
    identity: dict[str, str] = field(default_factory=dict)
    recorded: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "spec": self.spec,
            "identity": dict(self.identity),
            "recorded": self.recorded,
            "digest": digest(self.value),
            "value": self.value,
        }

    def same_as(self, other: Entry) -> bool:
        """The same result from the same spec and converter (the time aside)."""
        return (self.source, self.spec, self.value, self.identity) == (
            other.source,
            other.spec,
            other.value,
            other.identity,
        )


def read_snapshot(path: Path, max_bytes: int) -> dict[str, Entry] | None:
    """The entries of the snapshot at ``path``; None when there is none. A snapshot that
    cannot be trusted is a :class:`SourceProblem` naming the file and what to do."""
    try:
        raw = read_capped(path, max_bytes)
    except FileNotFoundError:
        return None
    except (FileRefused, OSError) as exc:
        raise _broken(path, str(exc)) from None
    try:
        data = load_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _broken(path, f"not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("cardprobe_sources") != FORMAT:
        raise _broken(path, f"not a cardprobe sources snapshot of format {FORMAT}")
    entries = data.get("entries")
    if not isinstance(entries, dict):
        raise _broken(path, "no `entries` mapping")
    found: dict[str, Entry] = {}
    for name, item in entries.items():
        found[name] = _entry(path, name, item)
    return found


def _entry(path: Path, name: str, item: Any) -> Entry:
    if not isinstance(item, dict) or set(item) != set(_KEYS):
        raise _broken(path, f"entries.{name}: expected exactly the keys {', '.join(_KEYS)}")
    for key in ("source", "spec", "recorded", "digest"):
        if not isinstance(item[key], str):
            raise _broken(path, f"entries.{name}.{key}: expected a string")
    identity = item["identity"]
    if not isinstance(identity, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in identity.items()
    ):
        raise _broken(path, f"entries.{name}.identity: expected a mapping of strings")
    value = item["value"]
    if item["digest"] != digest(value):
        raise _broken(
            path, f"entries.{name}: the value does not match its digest (edited by hand?)"
        )
    if name == "tools":
        try:
            checked(value)
        except SourceProblem as exc:
            raise _broken(path, f"entries.{name}: {exc}") from None
    elif not isinstance(value, str) or not value.strip():
        raise _broken(path, f"entries.{name}.value: expected the prompt's text")
    return Entry(item["source"], item["spec"], value, dict(identity), item["recorded"])


def _broken(path: Path, problem: str) -> SourceProblem:
    return SourceProblem(
        f"the sources snapshot {shown(path)} cannot be used: {problem}; delete it and record "
        "again where the source can be read (pytest --live)"
    )


def write_entry(path: Path, suite_file: str, name: str, entry: Entry, max_bytes: int) -> bool:
    """Put ``entry`` into the snapshot at ``path`` (written atomically); False when the file
    already held the same result (it is then left as it is, time included)."""
    try:
        entries = read_snapshot(path, max_bytes) or {}
    except SourceProblem:
        entries = {}  # a broken snapshot is replaced by this recording's
    old = entries.get(name)
    if old is not None and old.same_as(entry):
        return False
    entries[name] = entry
    document = {
        "cardprobe_sources": FORMAT,
        "suite_file": suite_file,
        "entries": {key: entries[key].to_dict() for key in sorted(entries)},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return True
