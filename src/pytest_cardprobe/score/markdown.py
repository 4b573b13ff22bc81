"""The Markdown report (``--cardprobe-md`` and ``$GITHUB_STEP_SUMMARY``), built from the
same rows and lines as the terminal scoreboard.

Its first line is :data:`MARKER`, an HTML comment a reader never sees, so a CI step can find
the comment it posted before and replace it instead of adding another.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pytest_cardprobe.score.aggregate import ArmScore
from pytest_cardprobe.score.explain import legend, let_through
from pytest_cardprobe.score.gate import Gate
from pytest_cardprobe.score.report import (
    NO_BASELINE_HINT,
    TIMING_TITLE,
    UNSTABLE_TITLE,
    canary_lines,
    flip_lines,
    groups,
    model_changes,
    rows,
    sections,
    timing_table,
    unscored_lines,
    unstable_lines,
)
from pytest_cardprobe.score.summary import Block
from pytest_cardprobe.text import escape_control

#: The report's first line: how a CI step recognises its own earlier comment.
MARKER = "<!-- cardprobe-report -->"


#: What GitHub would read as markup in a line of text, each alternative made inert by
#: :func:`_inert`: ``&`` and ``<`` (entities, tags, comments), a backslash before
#: punctuation (it would escape it), the emphasis, code and strike-through marks and a
#: table's ``|``, a ``$`` (GitHub renders ``$…$`` as math, ``\\color`` and ``\\Huge`` too), a
#: run of ``_`` (kept inside a word, where it never emphasises), a ``]`` that would close a
#: link or image (``](`` or ``][``), and a ``>`` or ``#`` that starts the text (a block
#: quote, a heading: a list item may hold either).
#: What GitHub would turn into a link or a notification by itself, without any markup: a URL
#: with a scheme (``https://``, ``mailto:x@y``), a bare ``www.`` host, an e-mail address, an
#: ``@user`` or ``@org/team`` mention, an ``#123``, ``owner/repo#123`` or ``GH-123``
#: reference, each with the rest of its word (text right after a code span would start a new
#: word, and an ``@`` there would mention). Each is shown as a code span
#: (:func:`_inert_link`). Every run the pattern tries before the ``@``, ``:`` or ``#`` that
#: decides is bounded, so a long word costs linear time, not quadratic (20,000 characters
#: took 17 s with unbounded runs). GitHub links and mentions
#: nothing inside code, whereas a backslash or an entity still reads as the character it
#: stands for once the Markdown is rendered, and the autolink and mention passes run after.
_LINK_START = r"""(?:
      [A-Za-z][A-Za-z0-9+.-]{0,31}:(?://|(?=[^\s@`]{0,256}@))
    | (?<![A-Za-z0-9.+-])www\.
    | [\w.+-]{1,64}@[\w-]{1,63}\.[\w-]
    | (?<![A-Za-z0-9])@[A-Za-z0-9]
    | (?<![A-Za-z0-9])(?:[\w.-]{1,100}/[\w.-]{1,100})?\#\d
    | (?<![A-Za-z0-9])GH-\d
    )"""
_LINKISH = re.compile(rf"(?P<link>{_LINK_START}[^\s`]*)", re.VERBOSE)
#: A backslash is escaped before punctuation and before a link-like run (it would escape the
#: backtick that opens the run's code span).
_MARKUP = re.compile(
    r"[&<]|\\(?=[!-/:-@\[-`{-~]|" + _LINK_START + r")|[`*~|$]|_+|\](?=[(\[])|^[>#]",
    re.VERBOSE,
)
_INERT = re.compile(f"{_LINKISH.pattern}|{_MARKUP.pattern}", re.VERBOSE | re.MULTILINE)
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _inert(match: re.Match[str]) -> str:
    found, text = match.group(), match.string
    if match.group("link") is not None:
        return _inert_link(found)
    if found.startswith("_"):
        before = text[match.start() - 1] if match.start() else " "
        after = text[match.end()] if match.end() < len(text) else " "
        if before.isalnum() and after.isalnum():
            return found  # inside a word: snake_case stays as it is
        return "\\_" * len(found)
    return _ENTITIES.get(found) or "\\" + found


def md_inline(text: str) -> str:
    """Text that reads as itself in GitHub Markdown where only inline markup can start: a
    table cell, a heading's or an emphasis's text. Control characters shown as escapes (a
    line break would end the cell), markup made inert, URLs, e-mail addresses, ``@``
    mentions and ``#`` references shown as code (never a live link or a notification), and
    nothing else touched (``->``, ``tool_calls`` and ``[0-8%]`` stay as they are)."""
    return _INERT.sub(_inert, escape_control(text))


#: What would start a block where a line or a list item's text begins (after up to three
#: spaces), each made inert by :func:`_inert_start`: a ``>`` or ``#`` (a block quote, a
#: heading), a ``[`` opening a link reference or footnote definition (``[x]: http://evil``
#: renders as nothing and turns every ``[x]`` of the report into that link) or a task-list
#: box (``[ ]``, ``[x]``), a bullet (``-`` or ``+`` and a space, or alone; ``*`` is escaped
#: everywhere), a thematic break of ``-`` (two are enough: after a list item's own ``- ``,
#: ``--`` makes three), and an ordered list's ``1.`` or ``1)``.
_BLOCK_START = re.compile(
    r"""^(?P<indent>\ {0,3})(?:
      (?P<quote>[>\#])
    | (?P<bracket>\[)(?=[\ xX]\](?:\ |$)|.*\]:)
    | (?P<bullet>[-+])(?=\ |$)
    | (?P<rule>-)(?=(?:\ *-)+\ *$)
    | (?P<number>\d{1,9})(?P<dot>[.)])(?=\ |$)
    )""",
    re.VERBOSE,
)


def _inert_start(match: re.Match[str]) -> str:
    indent, number = match.group("indent"), match.group("number")
    if number is not None:
        return f"{indent}{number}\\{match.group('dot')}"
    found = match.group()[len(indent) :]
    return indent + (_ENTITIES.get(found) or "\\" + found)


def md_text(text: str) -> str:
    """Text that reads as itself in GitHub Markdown where it begins a line or a list item:
    :func:`md_inline`, and what would start a block there (a quote, a heading, a list, a
    thematic break, a link reference definition, a task-list box) made inert; text that
    starts with none of these is exactly :func:`md_inline`'s. Every line that can hold model
    or suite text goes through one of the two."""
    return _BLOCK_START.sub(_inert_start, md_inline(text), count=1)


def _inert_link(found: str) -> str:
    """A link-like run as a code span: shown as the text it is, never linked or mentioning.

    It holds no backtick (the pattern stops at one); a ``|`` is escaped, since a table row
    would end its cell there even inside code."""
    return "`" + found.replace("|", "\\|") + "`"


def markdown(arms: Sequence[ArmScore], gate: Gate | None, blocks: Sequence[Block] = ()) -> str:
    """A Markdown report fit for a pull-request comment; the summary blocks come right after
    the gate's line."""
    out = [MARKER, "## cardprobe", ""]
    if gate:
        out += [f"**Gate: {gate.decision}** — {md_inline(gate.summary)}", ""]
    for block in blocks:
        out += [f"### {md_inline(block.title)}", ""]
        out += [*(f"- {md_text(line)}" for line in block.lines), ""]
    if gate:
        if gate.coverage:
            out += [f"_{md_inline(gate.coverage)}_", ""]
        if gate.other_mode_line:
            out += [f"_{md_inline(gate.other_mode_line)}_", ""]
    shown: set[str] = set()
    for number, group in enumerate(groups(arms)):
        headers, body = rows(group, gate)
        shown.update(headers)
        out += [""] if number else []
        out.append("| " + " | ".join(headers) + " |")
        out.append("|" + "---|" * len(headers))
        out.extend("| " + " | ".join(md_inline(c) for c in r) + " |" for r in body)
    out += [f"\n_{md_inline(line)}_" for line in legend(shown)]
    for section in sections(arms):
        out += ["", f"### {section.title}", ""]
        out.append("| " + " | ".join(section.headers) + " |")
        out.append("|" + "---|" * len(section.headers))
        out.extend("| " + " | ".join(md_inline(c) for c in r) + " |" for r in section.body)
    canary = canary_lines(gate)
    if canary:
        out += ["", "### Canaries", ""]
        out.extend(f"- {md_text(line)}" for line in canary)
    if gate:
        for title, items in (
            ("Regressions", gate.regressions),
            ("Let through by the gate", let_through(gate)),
            ("Unscored (inconclusive)", unscored_lines(gate)),
            ("Gains", gate.gains),
            ("Suggestions", gate.suggestions),
            ("New arms", [f"{a} ({NO_BASELINE_HINT})" for a in gate.new]),
        ):
            if items:
                out += ["", f"### {title}", ""]
                out.extend(f"- {md_text(line)}" for line in items)
    flips = flip_lines(gate)
    if flips:
        out += ["", "### Flipped cases", ""]
        out.extend(f"- {md_text(line)}" for line in flips)
    headers, timing = timing_table(arms)
    if timing:
        out += ["", f"### {TIMING_TITLE[0].upper()}{TIMING_TITLE[1:]}", ""]
        out.append("| " + " | ".join(headers) + " |")
        out.append("|" + "---|" * len(headers))
        out.extend("| " + " | ".join(md_inline(c) for c in r) + " |" for r in timing)
    changes = model_changes(arms)
    if changes:
        out += ["", "### Model or server changed since the recording", ""]
        out.extend(f"- {md_text(line)}" for line in changes)
    unstable = unstable_lines(arms, gate)
    if unstable:
        out += ["", f"### {UNSTABLE_TITLE[0].upper()}{UNSTABLE_TITLE[1:]}", ""]
        out.extend(f"- {md_text(line)}" for line in unstable)
    return "\n".join(out) + "\n"
