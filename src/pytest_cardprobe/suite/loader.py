"""Suite stage: read one YAML case file into plain, frozen records.

A suite file is a YAML mapping with ``cardprobe: 1`` at the top level (docs/design.md §3).
:func:`load_suite` turns it into a :class:`Suite` or raises exactly one :class:`SuiteError`
naming the file, the offending key and, where it is known, the line. Nothing else escapes
it for bad input, so the collector can turn it into a usage error and a run never starts
half-configured. The steps, one module each:

1. ``documents``: the bytes as UTF-8, composed to YAML with the line of every key; NaN,
   infinities, dates and duplicate keys refused there;
2. ``schema``: ``suite.schema.json`` checks the structure and words the first problem;
3. ``cardsuite`` / ``callsuite``: what a schema cannot say (files, judges, unique ids, the
   names and arguments of the suite's tools, limits) and the records.

This module is also where the glue imports the stage's public names from.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

import yaml

from pytest_cardprobe.files import FileRefused, read_capped
from pytest_cardprobe.suite.callsuite import call_suite, case_prefix
from pytest_cardprobe.suite.cardsuite import card_suite
from pytest_cardprobe.suite.context import (
    DEFAULT_MAX_BYTES,
    MAX_SAMPLES,
    Reader,
    SuiteLimits,
    at_least_of,
)
from pytest_cardprobe.suite.documents import LOADER, decode_utf8, parse_yaml
from pytest_cardprobe.suite.errors import KeyPath, SuiteError, describe, one_of
from pytest_cardprobe.suite.records import (
    ALL_CHANNELS,
    ALL_CONDITIONS,
    CALL_CHANNEL,
    CALL_CONDITIONS,
    CALL_JUDGE,
    CHANNELS,
    CONDITIONS,
    DEFAULT_CHANNELS,
    DEFAULT_CONDITIONS,
    DEFAULT_SAMPLES,
    DEFAULT_VOCABULARY,
    NESTING_TYPES,
    PROMPT_KINDS,
    PROSE_FIRST,
    REFERENCE_VOCABULARY,
    REQUIRED,
    SUITE_VERSION,
    THINK_LEVELS,
    TOOL_USING,
    Case,
    SeedTurn,
    Suite,
    Turn,
)
from pytest_cardprobe.suite.schema import SCHEMA_PATH
from pytest_cardprobe.suite.sources import SourceProblem, Sources
from pytest_cardprobe.text import name_problem

__all__ = [
    "ALL_CHANNELS",
    "ALL_CONDITIONS",
    "CALL_CHANNEL",
    "CALL_CONDITIONS",
    "CALL_JUDGE",
    "CHANNELS",
    "CONDITIONS",
    "DEFAULT_CHANNELS",
    "DEFAULT_CONDITIONS",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_SAMPLES",
    "DEFAULT_VOCABULARY",
    "MAX_SAMPLES",
    "NESTING_TYPES",
    "PROMPT_KINDS",
    "PROSE_FIRST",
    "REFERENCE_VOCABULARY",
    "REQUIRED",
    "SCHEMA_PATH",
    "SUITE_VERSION",
    "THINK_LEVELS",
    "TOOL_USING",
    "Case",
    "SeedTurn",
    "SourceProblem",
    "Sources",
    "Suite",
    "SuiteError",
    "SuiteLimits",
    "SuiteReader",
    "Turn",
    "decode_utf8",
    "is_suite_file",
    "load_suite",
    "read_document",
]

ROLES: tuple[str, ...] = ("user", "assistant")

# --------------------------------------------------------------------------- detection

# A top-level ``cardprobe:`` key starts at column 0 in block style (quoted or not); ``- `` in
# front is a suite written inside a top-level list, which must be reported, not skipped.
_SUITE_MARKER = re.compile(r"""^(?:-[ \t]+)?["']?cardprobe["']?[ \t]*:""", re.MULTILINE)
# The pieces of a flow mapping that matter for finding a top-level ``cardprobe`` key without
# parsing: quoted strings (skipped whole), comments, brackets, commas and the key itself.
_FLOW_TOKEN = re.compile(
    r"""(?P<key>(?<![\w-])["']?cardprobe["']?[ \t\r\n]*:)"""
    r"""|"(?:[^"\\]|\\.)*"?|'(?:[^']|'')*'?|#[^\n]*|[{}\[\],]"""
)


def _flow_marked(text: str) -> bool:
    """Whether ``text``, a flow mapping YAML could not parse, has ``cardprobe`` as a key of
    its outermost mapping: then it tries to be a suite, and its syntax error is reported
    with its line instead of the file being skipped as someone else's broken YAML."""
    depth, after_separator = 0, False
    for token in _FLOW_TOKEN.finditer(text):
        piece = token.group()
        if token.group("key") is not None:
            if depth == 1 and after_separator:
                return True
        elif piece in "{[":
            depth += 1
        elif piece in "}]":
            depth -= 1
        elif piece.startswith("#"):
            continue
        after_separator = piece in ("{", ",")
    return False


_SUFFIXES = (".yaml", ".yml")


def _sniff_text(raw: bytes) -> str:
    """Text good enough to look for the marker in, whatever the encoding turns out to be.

    UTF-16 and UTF-32 spread ASCII over NUL bytes; dropping them makes the marker visible, so
    such a file is reported as being in the wrong encoding instead of being skipped.
    """
    if b"\x00" in raw:
        raw = raw.replace(b"\x00", b"")
    return raw.lstrip(b"\xef\xbb\xbf\xff\xfe").decode("latin-1")


def is_suite_file(path: Path | str, max_bytes: int = DEFAULT_MAX_BYTES) -> bool:
    """Tell whether ``path`` is (or tries to be) a cardprobe suite.

    A ``.yaml``/``.yml`` file (any case) counts when a line starts with a ``cardprobe:`` key,
    or when it is a flow mapping with a ``cardprobe`` key. Whether it then loads is
    :func:`load_suite`'s business: a file that looks like a suite and does not load is an
    error with file and line, never a silently skipped file. Only the first ``max_bytes``
    are looked at; a larger suite is refused as too large by the loader.
    """
    p = Path(path)
    if p.suffix.lower() not in _SUFFIXES:
        return False
    try:
        with open(p, "rb") as handle:
            raw = handle.read(max_bytes)
    except OSError:
        return False
    # Cheap pre-filter: most YAML in a repo (CI configs, fixtures) never mentions us.
    if b"cardprobe" not in raw and b"c\x00a\x00r\x00d\x00" not in raw:
        return False
    text = _sniff_text(raw)
    if _SUITE_MARKER.search(text):
        return True
    if not text.lstrip("\ufeff\xef\xbb\xbf \t\r\n").startswith("{"):
        return False
    try:
        data = yaml.load(text, Loader=LOADER)
    except Exception:
        # Not valid YAML: ours when a flow mapping's key says so (the loader then names the
        # line of the error), else someone else's broken file.
        return _flow_marked(text)
    return isinstance(data, dict) and "cardprobe" in data


# --------------------------------------------------------------------------- loading


_NO_LIMITS = SuiteLimits()


def load_suite(
    path: Path | str,
    *,
    known_judges: Collection[str] = ("card",),
    limits: SuiteLimits = _NO_LIMITS,
    sources: Sources | None = None,
) -> Suite:
    """Read and validate one suite file; raise :class:`SuiteError` on any problem with it.

    ``sources`` reads what a suite takes from the application (``python:``, ``mcp:``); without
    it such a suite is refused (only a pytest run reads sources).
    """
    p = Path(path)
    try:
        raw = read_capped(p, limits.max_bytes)
    except FileRefused as exc:
        raise SuiteError(p, f"suite file {exc}") from None
    except OSError as exc:
        raise SuiteError(p, f"cannot read suite file: {exc.strerror or exc}") from None
    text = decode_utf8(p, raw, "suite file")
    try:
        data, lines, root_line = parse_yaml(p, text)
        reader = SuiteReader(p, lines, limits, data, sources)
        return _read(reader, data, root_line, known_judges)
    except RecursionError:
        raise SuiteError(p, "YAML is nested too deeply to be a suite file") from None


class SuiteReader(Reader):
    """A suite file; a problem inside a call suite's case names the case by its id."""

    def __init__(
        self,
        path: Path,
        lines: dict[KeyPath, int],
        limits: SuiteLimits,
        data: Any,
        sources: Sources | None,
    ) -> None:
        super().__init__(path, lines, limits, sources)
        self.data = data
        self.first_id_line: dict[str, int | None] = {}

    def wording(self, key: KeyPath, problem: str) -> str:
        data = self.data
        if not (isinstance(data, dict) and data.get("judge") == CALL_JUDGE) or key[2:3] == ("id",):
            return problem
        return case_prefix(data, key) + problem

    def case_id(self, entry: KeyPath, ident: str) -> str:
        """``ident`` when no earlier case has it (it becomes part of the pytest test id)."""
        if ident in self.first_id_line:
            where = self.first_id_line[ident]
            self.fail(
                (*entry, "id"),
                f"duplicate case id {ident!r}"
                + (f" (first used on line {where})" if where else ""),
            )
        self.first_id_line[ident] = self.lines.get((*entry, "id"))
        return ident


def read_document(
    reader: SuiteReader, data: Any, known_judges: Collection[str] = ("card",)
) -> Suite:
    """A suite from a document already in memory, read by the rules of a suite file (a
    Python test's call probe builds one: ``suite/askcall.py``)."""
    return _read(reader, data, reader.line_of(()) or 1, known_judges)


def _read(reader: SuiteReader, data: Any, root_line: int, judges: Collection[str]) -> Suite:
    if not isinstance(data, dict):
        reader.fail(
            (),
            f"expected a mapping of suite keys at the top level, got {describe(data)}",
            line=root_line,
        )
    # The judge decides which half of the schema applies, so an unknown one comes first.
    judge = data.get("judge", "card")
    if isinstance(judge, str) and judge.strip() and judge != CALL_JUDGE and judge not in judges:
        known = sorted({*judges, CALL_JUDGE})
        reader.fail(("judge",), f"unknown judge {judge!r}; known judges: {one_of(known)}")
    reader.check(data)
    samples = int(data.get("samples", DEFAULT_SAMPLES))
    if samples > reader.limits.max_samples:
        reader.fail(
            ("samples",),
            f"{samples} samples is more than the limit of {reader.limits.max_samples} "
            "(raise ini cardprobe_max_samples to allow more)",
        )
    at_least = at_least_of(reader, ("at_least",), data.get("at_least"), samples)
    named = name_problem(str(data.get("name", reader.path.stem)))
    if named:
        key: KeyPath = ("name",) if "name" in data else ()
        reader.fail(key, f"the suite name {named}" if key else f"the file name {named}")
    think = data.get("think")
    if isinstance(think, bool):  # YAML 1.1 reads a bare `off`/`on` as a boolean
        think = "on" if think else "off"
    common: dict[str, Any] = {
        "path": reader.path,
        "name": data.get("name", reader.path.stem),
        "judge": judge,
        "samples": samples,
        "history": _history(reader, data.get("history", [])),
        "options": data.get("options", {}),
        "think": think,
        "at_least": at_least,
    }
    reader.suite_name = common["name"]
    build = call_suite if judge == CALL_JUDGE else card_suite
    return build(reader, data, common, reader.case_id)


def _history(reader: Reader, turns: list[dict[str, str]]) -> tuple[Turn, ...]:
    # The case question is appended as a user turn, so the preamble must start with the
    # user and end with the assistant; anything else is not a chat transcript.
    if len(turns) % 2:
        reader.fail(
            ("history",),
            "expected an even number (at least 2) of turns alternating user, assistant, "
            f"got {describe(turns)}",
        )
    for index, turn in enumerate(turns):
        want = ROLES[index % 2]
        if turn["role"] != want:
            reader.fail(
                ("history", index, "role"),
                f"expected {want!r} here: turns alternate user, assistant, starting with user",
            )
    return tuple(Turn(role=t["role"], content=t["content"]) for t in turns)
