"""Source stage: which of source and snapshot a run uses, and the drift check between them.

:class:`SourceReader` is what the suite loader asks (``suite.sources.Sources``). Per suite
and entry (``tools``, ``prompts.call``) it decides once per run:

* a recording run reads the source (it must be readable: the recording is of it) and writes
  the snapshot when the result changed;
* a replay reads the source when it can (``check`` ``auto``) or must (``always``, for CI;
  a source that cannot be read is then a usage error) or never (``never``), and compares it
  with the snapshot: the same is fine, a difference makes every test of the suite stale with
  the per-tool diff and the command that re-records;
* a replay that did not read the source uses the snapshot unchecked and says so in the
  run's header; without a snapshot it has nothing to replay from, which is a usage error.

Outcomes are plain data (:meth:`SourceReader.export`), so an xdist controller reads each
source once and hands its outcomes to the workers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import shown
from pytest_cardprobe.source import mcp as mcp_source
from pytest_cardprobe.source.listing import checked, from_mcp, named, within_wire_limit
from pytest_cardprobe.source.python import Bounds, Read, convert_items, read_python
from pytest_cardprobe.source.snapshot import (
    Entry,
    digest,
    read_snapshot,
    snapshot_path,
    write_entry,
)
from pytest_cardprobe.suite.declarations import text_change, tool_changes
from pytest_cardprobe.suite.sources import (
    PromptSource,
    SourceInvalid,
    SourceProblem,
    ToolSource,
    map_names,
    select,
)
from pytest_cardprobe.text import escape_control
from pytest_cardprobe.wire.redact import redact_url


@dataclass(frozen=True)
class SourcePolicy:
    """How a run treats sources (from its settings)."""

    cassette_dir: Path
    root: Path
    check: str = "auto"
    recording: bool = False
    #: Whether this process writes snapshots (not an xdist worker, not --collect-only).
    write: bool = True
    timeout: float = 60.0
    max_bytes: int = 8 * 1024 * 1024
    #: The suite file as a cassette names it (relative to the rootdir).
    suite_file: Callable[[Path], str] = lambda path: path.name
    #: The command that re-records a suite file (for the drift message).
    rerecord: Callable[[Path], str] = lambda path: f"pytest --live {path}"


@dataclass(frozen=True)
class Outcome:
    """What one suite's entry resolved to in this run (plain data, crosses xdist)."""

    suite: str
    entry: str
    source: str
    state: str  # recorded | unchanged | changed | unchecked | unrecorded | error
    value: Any = None
    problem: str = ""  # state error: the usage error
    detail: str = ""  # why unchecked; what changed (state changed)
    #: State changed: each change in words, naming its source (``tools changed at the source
    #: (python: app:TOOLS): read_file: description changed``), for one-line summaries.
    changes: tuple[str, ...] = ()


class SourceReader:
    """The run's sources: read, compared with the snapshot, each once (see the module)."""

    def __init__(self, policy: SourcePolicy) -> None:
        self.policy = policy
        self.outcomes: dict[tuple[str, str], Outcome] = {}
        # Snapshot entries a recording writes when it ends (flush): a run stopped before it
        # asked anything (a usage error, a failed preflight) records nothing, snapshot included.
        self._pending: list[tuple[Path, str, str, Entry]] = []

    # -- what the loader asks (suite.sources.Sources)

    def tools(self, suite: str, path: Path, entry: str, source: ToolSource) -> list[dict[str, Any]]:
        """The declarations of a call suite's ``tools:`` source."""
        value = self._resolve(
            suite, path, entry, _tool_label(source), _spec(source), lambda: self._tools(source)
        )
        assert isinstance(value, list)
        return value

    def prompt(self, suite: str, path: Path, entry: str, source: PromptSource) -> str:
        """The text of a ``prompts:`` entry read from the application's code."""
        value = self._resolve(
            suite,
            path,
            entry,
            f"python: {source.python}",
            _spec(source),
            lambda: read_python(source.python, "prompt", None, self._bounds()),
        )
        assert isinstance(value, str)
        return value

    # -- what the glue asks

    def drift(self, suite: str) -> tuple[str, list[str]] | None:
        """The stale message of ``suite`` when a source changed since its snapshot, with each
        change in words; None when none did."""
        found = [o for o in self.outcomes.values() if o.suite == suite and o.state == "changed"]
        if not found:
            return None
        return "\n".join(o.detail for o in found), [c for o in found for c in o.changes]

    def header_lines(self) -> list[str]:
        """One line per suite entry that names a source: what this run did with it."""
        words = {
            "recorded": "read from the source",
            "unchanged": "checked against the source: unchanged",
            "changed": "CHANGED at the source since the snapshot (its tests are stale)",
            "unchecked": "snapshot used unchecked",
            "unrecorded": "read from the source; no snapshot yet (record with --live)",
            "error": "cannot be used",
        }
        lines = []
        for o in sorted(self.outcomes.values(), key=lambda o: (o.suite, o.entry)):
            why = f" ({o.detail})" if o.state in ("unchecked", "recorded") and o.detail else ""
            line = f"{o.suite}: {o.entry} from {o.source}: {words[o.state]}{why}"
            lines.append(escape_control(line))  # suite names and commands are shown as text
        return lines

    def flush(self) -> list[Path]:
        """Write the snapshot entries this recording read; the files that changed."""
        written = []
        for where, suite_file, entry, new in self._pending:
            if write_entry(where, suite_file, entry, new, self.policy.max_bytes):
                written.append(where)
        self._pending.clear()
        return sorted(set(written))

    def export(self) -> list[dict[str, Any]]:
        """The outcomes as plain data (for xdist's workerinput)."""
        return [asdict(o) for o in self.outcomes.values()]

    def load(self, data: Any) -> None:
        """Take outcomes another process resolved (an xdist controller's)."""
        for item in data if isinstance(data, list) else ():
            outcome = Outcome(**{**item, "changes": tuple(item.get("changes", ()))})
            self.outcomes[(outcome.suite, outcome.entry)] = outcome

    # -- reading

    def _bounds(self) -> Bounds:
        return Bounds(self.policy.timeout, self.policy.max_bytes, self.policy.root)

    def _tools(self, source: ToolSource) -> Read:
        # Picked first (only:), then checked in full: a tool the application does not send
        # needs no valid schema, and a long listing costs one name check per tool.
        # Every check of what a source gave is SourceInvalid: it was read (see _decide).
        bounds = self._bounds()
        if source.mcp is not None:
            server = source.mcp
            listed = mcp_source.list_tools(server, bounds)
            value: Any = _judged(
                lambda: select(map_names(named(from_mcp(listed.value)), server), source.only)
            )
            identity = dict(listed.identity)
            if source.convert is not None:
                converted = convert_items(value, source.convert, bounds)
                value, identity = converted.value, {**identity, **converted.identity}
        else:
            assert source.python is not None
            read = read_python(source.python, "tools", source.convert, bounds)
            value, identity = _judged(lambda: select(named(read.value), source.only)), read.identity
        given = value
        return Read(_judged(lambda: checked(within_wire_limit(given))), identity)

    def _resolve(
        self,
        suite: str,
        path: Path,
        entry: str,
        label: str,
        spec: str,
        read: Callable[[], Read],
    ) -> Any:
        key = (suite, entry)
        if key not in self.outcomes:
            self.outcomes[key] = self._decide(suite, path, entry, label, spec, read)
        outcome = self.outcomes[key]
        if outcome.state == "error":
            raise SourceProblem(outcome.problem)
        return outcome.value

    def _decide(
        self,
        suite: str,
        path: Path,
        entry: str,
        label: str,
        spec: str,
        read: Callable[[], Read],
    ) -> Outcome:
        policy = self.policy
        done = _Outcomes(suite, entry, label)
        try:
            where = snapshot_path(policy.cassette_dir, suite)
        except SourceProblem as exc:
            return done.error(str(exc))
        try:
            entries = read_snapshot(where, policy.max_bytes) or {}
        except SourceProblem as exc:
            if not policy.recording:
                return done.error(str(exc))
            entries = {}  # a recording replaces it
        old = entries.get(entry)
        required = policy.recording or policy.check == "always"
        fresh: Read | None = None
        cause = "not read (--cardprobe-source-check never)"
        if policy.recording or policy.check != "never":
            try:
                fresh = read()
            except SourceInvalid as exc:
                # Read, and changed into something unusable: the snapshot does not stand in.
                return done.error(self._invalid(path, entry, _prefixed(label, str(exc))))
            except SourceProblem as exc:
                cause = _prefixed(label, str(exc))
        if fresh is None:
            if required:
                why = (
                    "a recording run reads its sources"
                    if policy.recording
                    else "--cardprobe-source-check always requires it"
                )
                return done.error(f"{cause}; {why}")
            if old is None:
                return done.error(
                    f"{cause}; and there is no snapshot of it ({shown(where)}) to replay from: "
                    "record the suite where the source can be read (pytest --live)"
                )
            if old.spec != spec:
                return done.error(
                    f"{entry} changed in the suite since the snapshot {shown(where)} was "
                    f"recorded, and {cause}: record the suite again where it can be read"
                )
            short = cause if len(cause) <= 240 else cause[:237] + "..."
            return done.made("unchecked", old.value, short)
        if policy.recording:
            new = Entry(label, spec, fresh.value, fresh.identity, _now())
            if old is not None and old.same_as(new):
                return done.made("recorded", fresh.value, "snapshot unchanged")
            if policy.write:
                self._pending.append((where, policy.suite_file(path), entry, new))
            return done.made("recorded", fresh.value, "the snapshot is written when the run ends")
        if old is None:
            return done.made("unrecorded", fresh.value)
        if digest(old.value) == digest(fresh.value):
            return done.made("unchanged", old.value)
        detail, changes = self._drift(path, entry, label, old, fresh)
        return done.made("changed", old.value, detail, changes)

    def _invalid(self, path: Path, entry: str, cause: str) -> str:
        fix = f"fix the suite's `{entry}` or the application"
        if self.policy.recording:
            return f"{cause}; {fix}"
        return (
            f"{cause}; the source was read, so the snapshot does not stand in for it: {fix}, "
            f"then record the suite again: {self.policy.rerecord(path)}"
        )

    def _drift(
        self, path: Path, entry: str, label: str, old: Entry, fresh: Read
    ) -> tuple[str, tuple[str, ...]]:
        if isinstance(old.value, str):
            changes = [text_change(old.value, str(fresh.value)) or "the text changed"]
        else:
            changes = tool_changes(old.value, fresh.value) or ["the declarations changed"]
        was, now = _converter(old.identity), _converter(fresh.identity)
        upgrade = f" — the converter changed: {was} → {now}" if was != now else ""
        lines = [
            f"stale: {entry} changed at the source ({escape_control(label)}) since the "
            f"snapshot was recorded{escape_control(upgrade)}:",
            *(f"  {line}" for line in changes[:20]),
        ]
        if len(changes) > 20:
            lines.append(f"  … and {len(changes) - 20} more")
        lines.append(f"re-record the suite: {self.policy.rerecord(path)}")
        where = f"{entry} changed at the source ({escape_control(label)})"
        said = [f"{where}: {escape_control(change)}" for change in changes]
        if was != now:
            said.append(f"{where}: {escape_control(upgrade.removeprefix(' — '))}")
        return "\n".join(lines), tuple(said)


@dataclass(frozen=True)
class _Outcomes:
    suite: str
    entry: str
    source: str

    def error(self, problem: str) -> Outcome:
        return Outcome(self.suite, self.entry, self.source, "error", problem=problem)

    def made(
        self, state: str, value: Any, detail: str = "", changes: tuple[str, ...] = ()
    ) -> Outcome:
        return Outcome(
            self.suite, self.entry, self.source, state, value, detail=detail, changes=changes
        )


def _judged(check: Callable[[], Any]) -> Any:
    """``check()``, its problem raised as :class:`SourceInvalid`: what it judges was read."""
    try:
        return check()
    except SourceInvalid:
        raise
    except SourceProblem as exc:
        raise SourceInvalid(str(exc)) from None


def _prefixed(label: str, problem: str) -> str:
    """``problem`` naming its source: a reader's own messages already start with it."""
    return problem if problem.startswith(("python: ", "mcp: ")) else f"{label}: {problem}"


def _converter(identity: dict[str, str]) -> str:
    parts = [f"{identity[k]}" for k in ("mcp_server",) if k in identity]
    if "converter" in identity:
        parts.append(f"{identity['converter']} {identity.get('version', '')}".strip())
    return ", ".join(parts) or "none"


def _tool_label(source: ToolSource) -> str:
    if source.mcp is not None:
        shown_as = mcp_source.label(source.mcp)
    else:
        shown_as = f"python: {source.python}"
    return shown_as + (f" (convert: {source.convert})" if source.convert else "")


def _spec(source: ToolSource | PromptSource) -> str:
    """A fingerprint of what the suite says about a source, without its secrets."""
    if isinstance(source, PromptSource):
        shape: Any = {"python": source.python}
    else:
        server = source.mcp
        shape = {
            "python": source.python,
            "convert": source.convert,
            "only": source.only,
            "mcp": None
            if server is None
            else {
                "command": server.command,
                "url": redact_url(server.url) if server.url else None,
                "prefix": server.prefix,
                "replace": server.replace,
            },
        }
    text = json.dumps(shape, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
