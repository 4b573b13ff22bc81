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

import re
from bisect import bisect_right
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import lru_cache

from pytest_cardprobe.judge.callread import DECODER, RecoveredCall, Refused, json_error, read_call
from pytest_cardprobe.judge.spans import skip_patterns, walk_span

__all__ = ["RecoveredCall", "Recovery", "recover_tool_calls"]


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
        skip, shallow = skip_patterns()
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
            starts, stops, closes = walk_span(text, pos, last_closer)
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
            value, end = DECODER.raw_decode(self.text, start)
        except (ValueError, RecursionError) as exc:
            self.bad_starts.append(start)
            self.bad.append((stop, json_error(exc, start)))
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
                call = read_call(item, self.patterns.names)
            except Refused as refusal:
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
                DECODER.raw_decode(self.text, opener)
            except (ValueError, RecursionError) as exc:
                return f"{json_error(exc, opener)} ({where})"
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
