"""Recover tool calls that a model wrote as text instead of structured ``tool_calls``.

docs/design.md §6. Small models often answer a tool request with the call spelled out in
the message content (bare, in a code fence, inside ``<tool_call>`` tags, after
``[TOOL_CALLS]`` or ``<|python_tag|>``); the server hands it back as ordinary text. This
module finds such calls and returns them, under four rules:

* Only tools declared in the request are recovered. Any other JSON (an example object, a JSON
  answer, an Adaptive Card) is left alone.
* Accepted shapes, each alone or in a JSON array: ``{"name", "arguments"}``,
  ``{"name", "parameters"}``, ``{"function": {"name", "arguments"}}`` and the OpenAI
  ``{"type": "function", "id": ..., "function": {...}}``. Arguments are an object or a JSON
  string that decodes to an object; a call with neither key has no arguments (``{}``).
* Malformed input is refused, never repaired. When text that looks like an attempted call to
  a declared tool cannot be read exactly, *no* call is recovered from the whole reply and
  :attr:`Recovery.error` says which tool and why. Refusing everything (rather than keeping the
  calls that did parse) is deliberate: a half-recovered sequence of calls, some of which write
  files or run commands, is more dangerous than a loud failure.
* The work is linear in the reply length (one scan for bracket spans, one parse per span).

Where calls are looked for: the maximal bracket spans of the reply (``{...}`` or ``[...]``,
found by counting brackets outside JSON strings), each parsed once as strict JSON (no
``NaN``, no duplicate keys). A span is a call if it is a call object or an array of them;
anything nested deeper (``{"example": {"name": "T", ...}}``) is data and is ignored. A span is
only looked at if a declared name appears in it literally (models do not ``\\u``-escape
identifiers), which also lets the scan skip everything else quickly.

What counts as an attempted call to a declared tool ``T`` (any one refuses the reply):

* an object at the top of a span (or in a top-level array) that names ``T`` (``"name"``, or
  ``"name"`` inside ``"function"``) without an accepted shape: unexpected keys (``"input"``,
  an argument put beside ``"name"``), a ``"type"`` other than ``"function"``, both
  ``arguments`` and ``parameters``, or arguments that are not an object or a JSON string of
  one;
* a call to ``T`` that parses but sits inside a bracket that never closes: the reply may be
  truncated mid-list, so the calls seen so far need not be the whole sequence;
* the text ``"name": "T"`` (either quote style, or the key unquoted) anywhere outside a span
  that parsed: a call whose JSON is broken (missing brace, trailing comma, single quotes, raw
  newline in a string, mismatched brackets, duplicate keys, nesting too deep);
* ``T`` written as a word, outside any span that parsed, between ``<tool_call>`` and
  ``</tool_call>``, or right after ``[TOOL_CALLS]``, ``<|python_tag|>`` or an unclosed
  ``<tool_call>`` (before any bracket or newline): ``read(path="x")``,
  ``[TOOL_CALLS]read[ARGS]{...}``.

So prose that merely mentions ``T``, or JSON that does not name ``T`` as a call, never
yields a call or an error; the error marks a reply that tried to call ``T`` and failed.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NoReturn

__all__ = ["RecoveredCall", "Recovery", "recover_tool_calls"]


@dataclass(frozen=True)
class RecoveredCall:
    """One call recovered from text: the declared tool's name and its decoded arguments."""

    name: str
    # Excluded from the hash (a dict is unhashable); equality still compares it.
    arguments: dict[str, Any] = field(hash=False)


@dataclass(frozen=True)
class Recovery:
    """What :func:`recover_tool_calls` found.

    ``calls`` are in order of appearance. ``error`` is ``None``, or why an attempted call to a
    declared tool was refused; when it is set, ``calls`` is always empty.
    """

    calls: list[RecoveredCall] = field(default_factory=list, hash=False)
    error: str | None = None

    @property
    def found(self) -> bool:
        """True when at least one call was recovered (never true together with ``error``)."""
        return bool(self.calls)

    @property
    def refused(self) -> bool:
        """True when an attempted call to a declared tool was refused."""
        return self.error is not None


# --------------------------------------------------------------------------------------------
# Scanner: maximal bracket spans in one left-to-right pass.
#
# Brackets are matched by count, not by kind: any closer closes the innermost opener, so
# ``[1}`` is one span. A span whose kinds do not match is not JSON and fails the parse, which is
# where it is judged; the scanner only has to find boundaries, and it finds the same ones
# whichever of its three paths (below) looks at a region.
#
# Outside spans only an opener matters (quotes in prose are not JSON strings). Inside a span
# JSON strings are skipped whole, with backslash escapes, so brackets in strings do not count.
# Every pattern is possessive: nothing ever backtracks, and no pattern is retried from later
# positions after a failure -- retrying is what makes naive scanners quadratic on thousands of
# unclosed ``{``.
#
# Only spans that contain a declared tool name can matter (a call names its tool; so do the
# markers and mentions checked later). So:
# 1. the skip pattern jumps, in C, over prose and over spans nested at most ``_SHALLOW_DEPTH``
#    deep, stopping short of the next occurrence of a declared name;
# 2. at an opener it could not skip, the shallow pattern matches the whole span if it is
#    shallow (then it holds a declared name);
# 3. otherwise (deep, or never closed) ``_session`` walks it with one regex step per run of
#    openers / run of closers, so 100k nested ``[`` cost a single step.
# When no declared name occurs in the rest of the text, scanning stops.

_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_PLAIN = r'[^{}\[\]"]++'
_SHALLOW_DEPTH = 32


def _shallow_span(depth: int) -> str:
    span = r"[{\[](?:" + _PLAIN + "|" + _STRING + r")*+[}\]]"
    for _ in range(depth - 1):
        span = r"[{\[](?:" + _PLAIN + "|" + _STRING + "|" + span + r")*+[}\]]"
    return span


@lru_cache(maxsize=1)
def _skip_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    # Compiled on first use (about 20 ms), not at import: pytest imports the plugin eagerly.
    span = _shallow_span(_SHALLOW_DEPTH)
    return re.compile(r"(?:[^{\[]++|" + span + r")*+", re.DOTALL), re.compile(span, re.DOTALL)


# One step inside a span: ordinary text and whole strings (unterminated only at the end of the
# text), then a run of openers, a run of closers, or the end.
_IN_SPAN = re.compile(
    r"""
    [^{}\[\]"]*+
    (?: "[^"\\]*+(?:\\.[^"\\]*+)*+"? [^{}\[\]"]*+ )*+
    (?: ([{\[]++) | ([}\]]++) | \Z )
    """,
    re.DOTALL | re.VERBOSE,
)


def _session(text: str, first: int, last_closer: int) -> tuple[list[int], list[int], bool]:
    """Walk the span opened at ``first``; ``last_closer`` is the text's last ``}`` or ``]``.

    Returns ``([first], [end], True)`` when it closes at ``end``; else ``(starts, ends,
    False)``: it never closes, and the spans inside it that did close and are not nested in
    another are ``text[starts[i]:ends[i]]``.
    """
    # Nothing can close after the last closer, so the walk stops there: a reply truncated
    # mid-call (the usual way a span never closes) costs nothing past its last closer.
    # Open brackets as runs of consecutive openers: text[run_start[i]:run_end[i]].
    run_start: list[int] = []
    run_end: list[int] = []
    depth = 0
    # Spans closed so far, with the depth after closing. Depths are non-decreasing, so the
    # spans nested in a newly closed one are all at the tail. (Parallel lists of ints rather
    # than a list of tuples: nothing for the garbage collector to walk on huge inputs.)
    closed_start: list[int] = []
    closed_end: list[int] = []
    closed_depth: list[int] = []
    for step in _IN_SPAN.finditer(text, first, last_closer + 1):
        start, stop = step.span(1)
        if start >= 0:
            run_start.append(start)
            run_end.append(stop)
            depth += stop - start
            continue
        at, stop = step.span(2)
        if at < 0:
            break  # end of text
        k = stop - at
        if k >= depth:
            return [first], [at + depth], True
        depth -= k
        while True:
            start = run_start[-1]
            size = run_end[-1] - start
            if k < size:
                run_end[-1] -= k
                outermost = run_end[-1]
                break
            run_start.pop()
            run_end.pop()
            k -= size
            if not k:
                outermost = start
                break
        while closed_depth and closed_depth[-1] > depth:
            closed_start.pop()
            closed_end.pop()
            closed_depth.pop()
        closed_start.append(outermost)
        closed_end.append(stop)
        closed_depth.append(depth)
    return closed_start, closed_end, False


# --------------------------------------------------------------------------------------------
# JSON: strict, no repair.


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen.add(key)
    return obj


def _no_constants(name: str) -> NoReturn:
    # json accepts NaN / Infinity by default; they are not JSON.
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constants)


def _json_error(exc: BaseException, start: int) -> str:
    if isinstance(exc, RecursionError):
        return f"invalid JSON: nesting too deep in the value at char {start}"
    if isinstance(exc, json.JSONDecodeError):  # its message already carries the position
        return f"invalid JSON: {exc}"
    # Raised by our hooks (duplicate key, NaN) or int parsing: no position of their own.
    return f"invalid JSON: {exc} in the value at char {start}"


# --------------------------------------------------------------------------------------------
# Call shapes.

_FLAT_KEYS = frozenset({"name", "arguments", "parameters", "type", "id"})
_WRAPPER_KEYS = frozenset({"function", "type", "id", "index"})
_FUNCTION_KEYS = frozenset({"name", "arguments", "parameters"})
_JSON_TYPE: dict[type, str] = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
}


class _Refused(Exception):
    def __init__(self, name: str, why: str) -> None:
        super().__init__(why)
        self.name = name
        self.why = why


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return _JSON_TYPE.get(type(value), "a number")


def _read_call(obj: object, names: frozenset[str]) -> RecoveredCall | None:
    """The call ``obj`` makes to a declared tool; None if it names none; _Refused if bad."""
    if not isinstance(obj, dict):
        return None
    function = obj.get("function")
    if isinstance(function, dict):
        body: dict[str, Any] = function
        extra = (obj.keys() - _WRAPPER_KEYS) | (function.keys() - _FUNCTION_KEYS)
    else:
        body = obj
        extra = obj.keys() - _FLAT_KEYS
    name = body.get("name")
    if not isinstance(name, str) or name not in names:
        return None
    # From here on it is an attempted call to a declared tool: anything off is refused, since
    # a key we do not understand may be an argument the model put in the wrong place.
    if extra:
        keys = sorted(extra)
        raise _Refused(name, f"unexpected keys {keys[:5]}" + (" ..." if len(keys) > 5 else ""))
    kind = obj.get("type", "function")
    if kind != "function":
        raise _Refused(name, f'"type" is {kind!r:.40}, expected "function"')
    if "arguments" in body and "parameters" in body:
        raise _Refused(name, 'both "arguments" and "parameters" given')
    arguments = body.get("arguments", body.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = _DECODER.decode(arguments)
        except (ValueError, RecursionError) as exc:
            why = "nesting too deep" if isinstance(exc, RecursionError) else str(exc)
            raise _Refused(name, f"arguments string is not valid JSON: {why}") from None
    if not isinstance(arguments, dict):
        raise _Refused(name, f"arguments must be a JSON object, not {_json_type(arguments)}")
    return RecoveredCall(name, arguments)


# --------------------------------------------------------------------------------------------
# Per-tool-set patterns.


@dataclass(frozen=True)
class _Patterns:
    names: frozenset[str]
    # Any declared name: where the scanner must look closely.
    relevant: re.Pattern[str]
    # ``"name": "T"`` in either quote style, or with the key unquoted: an attempted call. The
    # literal ``name`` comes first so the regex engine can search for it quickly.
    marker: re.Pattern[str]
    # ``T`` as a whole word.
    mention: re.Pattern[str]


@lru_cache(maxsize=64)
def _patterns(names: frozenset[str]) -> _Patterns:
    # Longest first, so "read_file" wins over "read" at the same position.
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=lambda n: (-len(n), n)))
    return _Patterns(
        names=names,
        relevant=re.compile(alternatives),
        marker=re.compile(
            r"""name(?:(?<="name)"|(?<='name)'|(?<![\w$"']name))\s*+:\s*+["']"""
            rf"""({alternatives})["']"""
        ),
        mention=re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])"),
    )


_WRAPPER_TAGS = ("<tool_call>", "[TOOL_CALLS]", "<|python_tag|>")
_WRAPPER_CLOSE = "</tool_call>"
# What follows an open-ended wrapper before any JSON: up to a bracket, a newline or a tag.
_AFTER_TAG = re.compile(r"\s*+([^{}\[\]\n<]*+)")
# A declared name with one of these cannot be a tool name, and would break the scanner's
# assumption that a name never contains a bracket or a quote.
_NOT_IN_NAMES = frozenset("{}[]\"'\\") | frozenset(" \t\r\n")


# --------------------------------------------------------------------------------------------


class _Reply:
    """One reply under analysis: its spans, their parse results, and any refusals."""

    def __init__(self, text: str, patterns: _Patterns) -> None:
        self.text = text
        self.patterns = patterns
        # Spans that parsed as JSON (sorted, disjoint), and spans that did not.
        self.ok_starts: list[int] = []
        self.ok_ends: list[int] = []
        self.bad_starts: list[int] = []
        self.bad: list[tuple[int, str]] = []  # (end, why)
        self.unclosed = -1  # the opener that never closes (it runs to the end), if any
        self.calls: list[RecoveredCall] = []
        self.errors: list[tuple[int, str]] = []  # (position, message); the earliest wins

    def refuse(self, at: int, name: str, why: str) -> None:
        self.errors.append((at, f"refused text-written call to {name!r} at char {at}: {why}"))

    def scan(self) -> None:
        """Find, parse and classify every span that contains a declared name."""
        text = self.text
        size = len(text)
        skip, shallow = _skip_patterns()
        relevant = self.patterns.relevant
        name_start = name_end = -1  # the next occurrence of a declared name
        last_closer = -2  # found when first needed
        pos = 0
        while pos < size:
            if name_start < pos:
                hit = relevant.search(text, pos)
                if hit is None:
                    return  # nothing in the rest of the text can matter
                name_start, name_end = hit.span()
            skipped = skip.match(text, pos, name_start)
            pos = name_start if skipped is None else skipped.end()  # (it always matches)
            if pos == name_start:
                pos = name_end  # the name is in prose; names hold no brackets
                continue
            # text[pos] opens a span that holds the name, is deep, or never closes.
            whole = shallow.match(text, pos)
            if whole is not None:
                self.consider(pos, whole.end(), enclosed=False)
                pos = whole.end()
                continue
            if last_closer < -1:
                last_closer = max(text.rfind("}"), text.rfind("]"))
            starts, stops, closes = _session(text, pos, last_closer)
            if not closes:
                self.unclosed = pos
            for start, stop in zip(starts, stops, strict=True):
                if name_start < start:  # find the first name at or after this span
                    hit = relevant.search(text, start)
                    name_start, name_end = (size, size) if hit is None else hit.span()
                if name_start < stop:  # else the span ends before it: no name inside
                    self.consider(start, stop, enclosed=not closes)
            if not closes or name_start >= size:
                return  # the open span runs to the end, or no declared name follows
            pos = stops[0]

    def consider(self, start: int, stop: int, *, enclosed: bool) -> None:
        """Parse the span text[start:stop] and collect the calls it makes."""
        try:
            value, end = _DECODER.raw_decode(self.text, start)
        except (ValueError, RecursionError) as exc:
            self.bad_starts.append(start)
            self.bad.append((stop, _json_error(exc, start)))
            return
        if end != stop:  # cannot happen (a JSON value balances its brackets); be safe anyway
            self.bad_starts.append(start)
            self.bad.append((stop, f"invalid JSON: the value at char {start} ends at {end}"))
            return
        self.ok_starts.append(start)
        self.ok_ends.append(stop)
        if self.errors:
            return  # the reply is refused anyway; keep scanning only to find the earliest
        for item in value if isinstance(value, list) else (value,):
            try:
                call = _read_call(item, self.patterns.names)
            except _Refused as refusal:
                self.refuse(start, refusal.name, refusal.why)
                return
            if call is None:
                continue
            if enclosed:
                opener = self.text[self.unclosed]
                self.refuse(
                    start,
                    call.name,
                    f"it sits inside the {opener!r} at char {self.unclosed}, which never "
                    "closes (a truncated or malformed reply may hold more calls)",
                )
                return
            self.calls.append(call)

    def covering_end(self, at: int) -> int:
        """End of the parsed span containing ``at``, or -1."""
        i = bisect_right(self.ok_starts, at) - 1
        if i >= 0 and at < self.ok_ends[i]:
            return self.ok_ends[i]
        return -1

    def explain(self, at: int) -> str:
        """Why the text at ``at`` is not part of any JSON value that parsed."""
        i = bisect_right(self.bad_starts, at) - 1
        if i >= 0 and at < self.bad[i][0]:
            return self.bad[i][1]
        if 0 <= self.unclosed <= at:
            where = f"the {self.text[self.unclosed]!r} at char {self.unclosed} never closes"
            # json's own message, from the nearest object opener (once per reply: cheap).
            opener = self.text.rfind("{", self.unclosed, at)
            opener = self.unclosed if opener < 0 else opener
            try:
                _DECODER.raw_decode(self.text, opener)
            except (ValueError, RecursionError) as exc:
                return f"{_json_error(exc, opener)} ({where})"
            return where
        return "not inside a JSON object"

    def check_markers(self) -> None:
        """Refuse the first ``"name": "T"`` that is not inside a span that parsed."""
        text = self.text
        marker = self.patterns.marker
        pos = 0
        while (found := marker.search(text, pos)) is not None:
            at = found.start()
            covered = self.covering_end(at)
            if covered < 0:
                if text[at - 1 : at] in ('"', "'"):
                    at -= 1  # report the key's opening quote
                self.refuse(at, found.group(1), self.explain(at))
                return
            pos = covered

    def check_wrappers(self) -> None:
        """Refuse a declared name written in a call wrapper outside any span that parsed."""
        text = self.text
        tags: list[tuple[int, str]] = []
        for tag in _WRAPPER_TAGS:
            at = text.find(tag)
            while at >= 0:
                if self.covering_end(at) < 0:  # a tag inside a JSON string wraps nothing
                    tags.append((at, tag))
                at = text.find(tag, at + len(tag))
        tags.sort()
        for index, (at, tag) in enumerate(tags):
            limit = tags[index + 1][0] if index + 1 < len(tags) else len(text)
            start = at + len(tag)
            close = text.find(_WRAPPER_CLOSE, start, limit) if tag == "<tool_call>" else -1
            if close >= 0:
                stop = close  # everything between the tags
            else:
                # Open-ended (or an unclosed <tool_call>): only what comes before any JSON,
                # so later prose that names the tool is not held against the reply.
                after = _AFTER_TAG.match(text, start, limit)
                if after is None:  # cannot happen: the pattern matches the empty string
                    continue
                start, stop = after.span(1)
            while (found := self.patterns.mention.search(text, start, stop)) is not None:
                covered = self.covering_end(found.start())
                if covered < 0:
                    why = self.explain(found.start())
                    self.refuse(found.start(), found.group(), f"written in {tag}, but {why}")
                    return
                start = covered


def _declared_names(declared: Collection[str]) -> frozenset[str]:
    if isinstance(declared, str):  # a lone name passed where a collection was meant
        declared = (declared,)
    return frozenset(
        name
        for name in declared
        if isinstance(name, str) and name and _NOT_IN_NAMES.isdisjoint(name)
    )


def recover_tool_calls(content: str, declared: Collection[str]) -> Recovery:
    """Recover the tool calls a model wrote as text in ``content``.

    Only calls to tools named in ``declared`` are returned, in order of appearance; the name
    must appear literally (not spelled with ``\\u`` escapes). If any text looks like an
    attempted call to a declared tool but cannot be read exactly (broken JSON, an unexpected
    shape, a call inside a bracket that never closes), nothing is recovered and
    :attr:`Recovery.error` says which tool and why; the module docstring has the exact rules.
    Names containing brackets, quotes, backslashes or whitespace cannot be tool names and are
    ignored. Never raises; runs in time linear in ``len(content)``.
    """
    names = _declared_names(declared)
    if not names or not content:
        return Recovery()
    reply = _Reply(content, _patterns(names))
    reply.scan()
    reply.check_markers()
    reply.check_wrappers()
    if reply.errors:
        return Recovery(error=min(reply.errors)[1])
    return Recovery(calls=reply.calls)
