"""Find the maximal bracket spans of a reply, in time linear in its length.

Part of tool-call recovery (``judge/recovery.py``, docs/design.md §6): recovery parses each
span that holds a declared tool's name; this module only finds where spans begin and end,
and never looks at what they mean.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["skip_patterns", "walk_span"]

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
# 3. otherwise (deep, or never closed) ``walk_span`` walks it with one regex step per run of
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
def skip_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
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


def walk_span(text: str, first: int, last_closer: int) -> tuple[list[int], list[int], bool]:
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
