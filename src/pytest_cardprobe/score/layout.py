"""Fit the terminal's tables to its width: one line per row, the verdict first.

A table (headers and rows of cells, from ``columns.py`` or a section) is laid out for a
terminal ``width`` columns wide:

1. identity columns (suite, model, channel, condition) holding one value on every row say
   it once, in a caption above the table (``suite cards, model smollm2:135m``);
2. columns that carry no information for this run (every cell empty, ``-`` or ``0``) are
   dropped, and the legend says how many (``-v`` shows them); the first column (a
   section's ``arm``) stays, and a table all of whose figures say nothing keeps them;
3. while the table is wider than the terminal, the rightmost column that is not part of the
   verdict moves out, into a second table below (its rows labelled by the identity cells
   left), or, when that one is too wide as well, into one wrapped line per row; failure
   classes move together, so a row's failures are never split across two places.

The gate word, the identity columns, ``passed``, ``±``, ``p``, ``ran`` and ``unscored`` never
move. ``width`` None (``-v``, the Markdown and HTML reports) keeps every column as it is.
"""

from __future__ import annotations

import textwrap
from collections.abc import Collection, Sequence
from dataclasses import dataclass

#: Columns that name an arm: folded into a caption when constant, never moved.
IDENTITY = ("suite", "model", "channel", "condition")
#: Columns that say the verdict: never moved out of the table.
CORE = frozenset({"gate", "passed", "±", "p", "ran", "unscored", *IDENTITY})
#: Cells that say nothing when a whole column holds only one of them.
EMPTY = frozenset({"", "-", "0"})
#: Columns kept even when every cell is empty (the verdict).
ALWAYS = frozenset({"gate", "passed"})


def table(headers: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    """Plain aligned text table."""
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*headers).rstrip()] + [fmt.format(*r).rstrip() for r in body]


def table_width(headers: Sequence[str], body: Sequence[Sequence[str]]) -> int:
    """The width :func:`table` draws these cells in."""
    return max(len(line) for line in table(headers, body)) if headers else 0


def wrap(line: str, width: int | None) -> list[str]:
    """A prose line wrapped to ``width``, continuation lines indented two more spaces than
    the line itself; unchanged when it fits or ``width`` is None."""
    if width is None or len(line) <= width:
        return [line]
    lead = line[: len(line) - len(line.lstrip(" "))]
    return textwrap.wrap(
        line,
        width,
        initial_indent="",
        subsequent_indent=lead + "  ",
        break_long_words=True,
        break_on_hyphens=False,
    ) or [line]


def wrap_all(lines: Sequence[str], width: int | None) -> list[str]:
    """Every line of ``lines`` wrapped to ``width`` (see :func:`wrap`)."""
    return [part for line in lines for part in wrap(line, width)]


@dataclass
class Fitted:
    """A table laid out for one width: a caption, the table, what moved out below it."""

    caption: list[str]  # ``suite cards``, ``model smollm2:135m``
    headers: list[str]
    body: list[list[str]]
    labels: list[str]  # each row's identity, for the rows of what moved out
    moved_headers: list[str]
    moved_body: list[list[str]]
    hidden: int  # columns dropped for carrying no information

    def lines(self, width: int | None, title: str = "") -> list[str]:
        """The caption line (``title`` first), the table, then what moved out of it."""
        head = ", ".join(x for x in (title, *self.caption) if x)
        out = wrap(f"{head}:", width) if head else []
        out += table(self.headers, self.body)
        if not self.moved_headers:
            return out
        moved = [["arm", *self.moved_headers]]
        moved += [
            [label, *cells] for label, cells in zip(self.labels, self.moved_body, strict=True)
        ]
        if width is None or table_width(moved[0], moved[1:]) <= width:
            return [*out, *table(moved[0], moved[1:])]
        for label, cells in zip(self.labels, self.moved_body, strict=True):
            said = [
                f"{h} {c}" for h, c in zip(self.moved_headers, cells, strict=True) if c not in EMPTY
            ]
            out += wrap(f"  {label}: {', '.join(said) or 'none'}", width)
        return out


def fit(
    headers: Sequence[str],
    body: Sequence[Sequence[str]],
    width: int | None,
    together: Collection[str] = (),
) -> Fitted:
    """Lay a table out for ``width`` columns (the module's steps); ``together`` names the
    columns that move out as one (the failure classes)."""
    heads, rows = list(headers), [list(r) for r in body]
    if width is None or not rows:
        return Fitted([], heads, rows, [], [], [], 0)
    keep, caption, quiet = [], [], []
    for i, h in enumerate(heads):
        cells = {r[i] for r in rows}
        if h in IDENTITY and len(cells) == 1:
            caption.append(f"{h} {next(iter(cells))}")
        elif h not in ALWAYS and i and cells <= EMPTY:
            quiet.append(i)
        else:
            keep.append(i)
    if quiet and all(heads[i] in IDENTITY or not i for i in keep):
        keep, quiet = sorted(keep + quiet), []  # a table of nothing but labels says less
    hidden = len(quiet)
    ids = [i for i in keep if heads[i] in IDENTITY]
    if ids:
        labels = ["/".join(r[i] for i in ids) for r in rows]
    elif keep and keep[0] == 0:  # a section's first column (``arm``) names its rows
        labels = [r[0] for r in rows]
    else:  # every identity column is in the caption: it names the rows
        labels = ["/".join(c.split(" ", 1)[1] for c in caption)] * len(rows)
    moved: list[int] = []
    # The first column names the row and stays, like the verdict's columns.
    movable = [i for i in keep if heads[i] not in CORE and i]

    def width_now() -> int:
        shown = [i for i in keep if i not in moved]
        return table_width([heads[i] for i in shown], [[r[i] for i in shown] for r in rows])

    while movable and width_now() > width:
        last = movable.pop()
        group = [last]
        if heads[last] in together:
            group = [i for i in [*movable, last] if heads[i] in together]
            movable = [i for i in movable if i not in group]
        moved = sorted({*moved, *group})
    shown = [i for i in keep if i not in moved]
    return Fitted(
        caption,
        [heads[i] for i in shown],
        [[r[i] for i in shown] for r in rows],
        labels,
        [heads[i] for i in moved],
        [[r[i] for i in moved] for r in rows],
        hidden,
    )
