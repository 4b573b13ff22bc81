"""Suite stage: the regular expressions of suites and tool schemas, run in linear time.

A ``regex`` argument matcher, a ``final: {regex: ...}`` check and a tool schema's
``pattern``/``patternProperties`` are written by users and matched against text a model
wrote. CPython's ``re`` backtracks, and cannot be interrupted: ``(a+)+b`` against forty
``a`` runs for hours. Every such pattern therefore runs on RE2 (``google-re2``), whose time
is linear in the text, so a verdict never depends on how fast a machine is; a timeout-based
engine would let a slow CI runner judge differently from a workstation.

Patterns are written as for Python's ``re``, and mean what they mean there:

* ``\\d``, ``\\w``, ``\\s`` and their negations are Unicode classes in Python and ASCII ones in
  RE2, so they are rewritten into RE2's Unicode classes (``\\p{Nd}``; letters, numbers and
  ``_``; what ``str.isspace`` calls whitespace), and ``{,n}`` (Python: at most n) into
  ``{0,n}`` (RE2 would read it as text);
* a pattern RE2 cannot run in linear time (lookahead and lookbehind, backreferences,
  possessive and atomic groups, conditionals), or whose meaning would change (``\\W`` or
  ``\\S`` inside ``[...]``, a POSIX ``[:name:]`` class), is refused with a message naming
  it: :class:`PatternError`, which the loader turns into a usage error;
* two differences remain and are documented: ``\\b``/``\\B`` look at ASCII word characters,
  and ``$`` without ``(?m)`` matches only at the very end (Python's also before a final
  newline).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["PatternError", "fullmatch", "pattern_problem", "search", "translated"]

#: What RE2 lacks and Python has, named in the refusal.
_UNSUPPORTED = (
    "RE2 runs every pattern in time linear in the text and so has no lookahead or lookbehind "
    "((?=, (?!, (?<=, (?<!), no backreferences (\\1, (?P=name)), no possessive or atomic "
    "groups and no conditionals; rewrite the pattern without them"
)
_WORD = r"\p{L}\p{N}_"
_SPACE = r"\s\x0b\x1c-\x1f\x85\p{Z}"
#: Python's shorthand classes in RE2's Unicode terms: outside a set, and inside one.
_OUTSIDE = {
    "d": r"\p{Nd}",
    "D": r"\P{Nd}",
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "s": f"[{_SPACE}]",
    "S": f"[^{_SPACE}]",
}
_INSIDE = {"d": r"\p{Nd}", "D": r"\P{Nd}", "w": _WORD, "s": _SPACE}


class PatternError(ValueError):
    """A pattern that cannot be run as it is meant; the message names it and says why."""


def translated(pattern: str) -> str:
    """``pattern`` (Python's dialect) in RE2's, with the same meaning; PatternError when
    a construct has no equivalent there."""
    out: list[str] = []
    index, size = 0, len(pattern)
    in_set = False
    while index < size:
        char = pattern[index]
        if char == "\\" and index + 1 < size:
            letter = pattern[index + 1]
            table = _INSIDE if in_set else _OUTSIDE
            if letter in table:
                out.append(table[letter])
            elif in_set and letter in "WS":
                raise PatternError(
                    f"\\{letter} inside [...] has no equivalent that keeps its Unicode meaning; "
                    f"write the set the other way round ([^...] with \\{letter.lower()})"
                )
            else:
                out.append(pattern[index : index + 2])
            index += 2
            continue
        if in_set:
            if char == "[" and pattern.startswith(":", index + 1):
                raise PatternError(
                    "a POSIX class ([:name:]) inside [...] means a set of characters in "
                    "Python and a named class in RE2; list the characters instead"
                )
            if char == "]":
                in_set = False
            out.append(char)
            index += 1
            continue
        if char == "[":
            in_set = True
            out.append(char)
            if pattern.startswith("^", index + 1):
                out.append("^")
                index += 1
            if pattern.startswith("]", index + 1):  # a leading ] is a member, not the end
                out.append("\\]")
                index += 1
            index += 1
            continue
        if char == "{" and pattern.startswith(",", index + 1):
            close = pattern.find("}", index)
            if close > index + 2 and pattern[index + 2 : close].isdigit():
                out.append("{0" + pattern[index + 1 : close + 1])
                index = close + 1
                continue
        out.append(char)
        index += 1
    return "".join(out)


def _named(pattern: str) -> str:
    """:func:`translated`, its refusal naming the pattern."""
    try:
        return translated(pattern)
    except PatternError as exc:
        raise PatternError(f"{pattern!r}: {exc}") from None


@lru_cache(maxsize=2048)
def _compiled(pattern: str, ignore_case: bool) -> Any:
    import re
    import warnings

    import re2

    try:
        with warnings.catch_warnings():  # "possible nested set": refused below, in words
            warnings.simplefilter("ignore")
            re.compile(pattern)  # compiling is safe; matching is what backtracks
    except re.error as exc:
        raise PatternError(f"invalid regular expression: {exc}") from None
    options = re2.Options()
    options.log_errors = False  # RE2 would print each refusal on stderr itself
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(_named(pattern), options)
    except re2.error as exc:
        raw = exc.args[0] if exc.args else exc
        why = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        raise PatternError(f"{pattern!r}: RE2 cannot run it ({why}); {_explained(why)}") from None


def _explained(why: str) -> str:
    """What an RE2 refusal means for the pattern's author."""
    if "repetition" in why:
        return (
            "RE2 allows at most 1,000 repetitions, counting nested ones multiplied "
            "((a{100}){10} is 1,000); write a shorter count"
        )
    if "too large" in why or "too big" in why:
        return "the pattern compiles to more than RE2's memory budget; split or shorten it"
    return _UNSUPPORTED


def pattern_problem(pattern: str, ignore_case: bool = False) -> str | None:
    """Why ``pattern`` cannot be used, naming it when Python's ``re`` would take it, or None."""
    try:
        _compiled(pattern, ignore_case)
    except PatternError as exc:
        return str(exc)
    return None


def search(pattern: str, text: str, ignore_case: bool = False) -> bool:
    """Whether ``pattern`` matches somewhere in ``text`` (``re.search``), in linear time."""
    return _compiled(pattern, ignore_case).search(text) is not None


def fullmatch(pattern: str, text: str, ignore_case: bool = False) -> bool:
    """Whether ``pattern`` matches the whole of ``text`` (``re.fullmatch``), in linear time."""
    return _compiled(pattern, ignore_case).fullmatch(text) is not None
