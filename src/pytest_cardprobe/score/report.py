"""Render scores and the gate as lines: the terminal scoreboard and what follows it.

Everything is built as data first (rows from ``columns.py``, sections, lines) so that it can
be printed, written or snapshotted the same way; the Markdown, JSON and HTML reports use the
same rows and lines. Call suites' canaries are a section of their own lines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_cardprobe.score.aggregate import ArmScore
from pytest_cardprobe.score.columns import (
    ROUTE_SPLIT_CHANNELS,
    Column,
    by_route,
    columns,
    failure_classes,
    forced_rows,
    groups,
    pct,
    routes_shown,
    rows,
)
from pytest_cardprobe.score.explain import legend, let_through
from pytest_cardprobe.score.gate import Decision, Gate, UnstableCase
from pytest_cardprobe.score.layout import fit, table, wrap, wrap_all
from pytest_cardprobe.score.summary import Block

__all__ = [
    "ROUTE_SPLIT_CHANNELS",
    "Column",
    "by_route",
    "columns",
    "failure_classes",
    "groups",
    "pct",
    "routes_shown",
    "rows",
    "scoreboard_lines",
    "table",
]

NO_BASELINE_HINT = "pytest --cardprobe-update-baseline records one"


@dataclass(frozen=True)
class Section:
    """A table printed after the scoreboard, when the arms give it any row."""

    title: str  # Markdown and HTML heading
    caption: str  # terminal heading: what the table counts
    headers: tuple[str, ...]
    body: list[list[str]]


RETRY_HEADERS = ("arm", "parse_failures", "retries", "recovered", "retry_route")


def retry_section(arms: Sequence[ArmScore]) -> Section | None:
    """The retry table: per retry-channel arm, what failed to parse and what the retry did."""
    body = []
    for arm in arms:
        if arm.channel != "retry":
            continue
        t = arm.retry
        routes = "; ".join(f"{r} {n}" for r, n in sorted(t.routes.items()) if n) or "-"
        body.append([arm.id, str(t.parse_failures), str(t.retries), str(t.recovered), routes])
    if not body:
        return None
    return Section(
        "Retry",
        "retry (prose first; a reply that fails to parse is asked again via the tool):",
        RETRY_HEADERS,
        body,
    )


FORCED_CAPTION = (
    "offered vs forced (the cold arm beside the required one, over the cases both ran; "
    "a / b = offered / forced samples):"
)


def forced_section(arms: Sequence[ArmScore]) -> Section | None:
    """Offered vs forced: does the model call when offered, and call right when it must?"""
    headers, body = forced_rows(arms)
    if not body:
        return None
    return Section("Offered vs forced", FORCED_CAPTION, tuple(headers), body)


# Each builder returns its section or None; a new table is one more entry here.
SECTIONS: tuple[Callable[[Sequence[ArmScore]], Section | None], ...] = (
    retry_section,
    forced_section,
)


def sections(arms: Sequence[ArmScore]) -> list[Section]:
    """The sections these arms fill, in a fixed order."""
    return [s for build in SECTIONS if (s := build(arms)) is not None]


def tables(
    arms: Sequence[ArmScore], gate: Gate | None, width: int | None = None
) -> tuple[list[list[str]], set[str], int, bool]:
    """One aligned text table per group of arms, a blank line between them, each laid out
    for ``width`` (``score/layout.py``; None keeps every column); with the headers shown, how
    many columns were left out for saying nothing, and whether some moved below."""
    lines: list[list[str]] = []
    shown: set[str] = set()
    left_out, moved = 0, False
    for group in groups(arms):
        fitted = fit(*rows(group, gate), width, together=failure_classes(group))
        lines.append(([""] if lines else []) + fitted.lines(width))
        shown.update(fitted.headers)
        left_out += fitted.hidden
        moved = moved or bool(fitted.moved_headers)
    return lines, shown, left_out, moved


def unscored_lines(gate: Gate) -> list[str]:
    """An inconclusive gate's reasons: the arms with cases left without a verdict."""
    if gate.decision != Decision.INCONCLUSIVE:
        return []
    return [
        f"{arm_id}: {c.unscored} of {c.cases_run} case(s) unscored (infra or errors)"
        for arm_id, c in sorted(gate.arms.items())
        if c.unscored
    ]


def gate_lines(gate: Gate, quiet: bool = False) -> list[str]:
    """The gate line, then what explains it: regressions, warnings, unscored arms of an
    inconclusive gate, the coverage of a partial run; unless ``quiet`` (``-q``), also the
    gains, the floor suggestions and what the other gate mode would have decided."""
    lines = [f"gate: {gate.decision} — {gate.summary}"]
    for title, items in (
        ("REGRESSION", gate.regressions),
        # A flip the gate did not fail for says so on its own line, and why (the gate's
        # warnings, one per arm, say the same as data in the JSON report).
        ("", let_through(gate, gains=not quiet)),
        ("inconclusive", unscored_lines(gate)),
        ("gain", [] if quiet else gate.gains),
        ("suggestion", [] if quiet else gate.suggestions),
    ):
        lines.extend(f"  {title}: {item}" if title else f"  {item}" for item in items)
    if gate.coverage:
        lines.append(f"  {gate.coverage}")
    if not quiet and gate.other_mode_line:
        lines.append(f"  {gate.other_mode_line}")
    return lines


UNSTABLE_TITLE = "unstable cases (samples disagreed, now or in the baseline)"


def unstable_of(arm: ArmScore, gate: Gate | None) -> list[UnstableCase]:
    """An arm's unstable cases: from the comparison (both sides), else from this run."""
    found = gate.arms.get(arm.id) if gate else None
    if found is not None:
        return found.unstable
    return [
        UnstableCase(case, (arm.cases[case]["samples_passed"], arm.cases[case]["samples"]), None)
        for case in sorted(arm.split)
    ]


def unstable_lines(arms: Sequence[ArmScore], gate: Gate | None) -> list[str]:
    """Per arm with any, its unstable cases on one line."""
    lines = []
    for arm in arms:
        cases = unstable_of(arm, gate)
        if cases:
            lines.append(f"{arm.id}: {', '.join(map(str, cases))}")
    return lines


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _timing(key: str, shown: Callable[[Any], str] = str) -> Callable[[ArmScore], str]:
    """A timing-table cell showing one figure of :meth:`ArmScore.timing`."""

    def cell(arm: ArmScore) -> str:
        return shown(arm.timing()[key])

    return cell


TIMING_TITLE = "timing and tokens (server figures; not gated)"


def timing_table(arms: Sequence[ArmScore]) -> tuple[list[str], list[list[str]]]:
    """Latency, tokens and speed per arm that has server figures (never gated).

    Arms are named as in the scoreboard (the model by its name); the model's identity
    (digest or fingerprint) gets a column only when it changed within some arm.
    """
    shown = [a for a in arms if a.timing()["samples"] or a.digests]
    if not shown:
        return [], []
    cols: list[tuple[str, Callable[[ArmScore], str]]] = [
        ("suite", lambda a: a.suite),
        ("model", lambda a: a.model),
        ("channel", lambda a: a.channel),
        ("condition", lambda a: a.condition),
        ("samples", _timing("samples")),
        ("median s", _timing("latency_median_s", _num)),
        ("p95 s", _timing("latency_p95_s", _num)),
        ("prompt tok", _timing("prompt_tokens")),
        ("gen tok", _timing("generated_tokens")),
        ("tok/s", _timing("tokens_per_s", _num)),
    ]
    if any(len(a.digests) > 1 for a in shown):
        # The first 12 characters tell digests apart in a table; the JSON has them whole.
        cols.append(
            ("digest", lambda a: " -> ".join(d[:12] for d in a.digests) if a.digests[1:] else "-")
        )
    return [h for h, _ in cols], [[cell(a) for _, cell in cols] for a in shown]


def model_changes(arms: Sequence[ArmScore]) -> list[str]:
    """One line per arm whose model differs from the one its old recording was made with."""
    return [f"{a.id}: model changed: {c}" for a in arms for c in a.model_changed] + [
        f"{a.id}: server changed: {c}" for a in arms for c in a.server_changed
    ]


def canary_lines(gate: Gate | None) -> list[str]:
    """One line per call suite x model that ran canary cases."""
    return [c.line() for c in gate.canaries] if gate else []


def flip_lines(gate: Gate | None) -> list[str]:
    """Every case that changed verdict, per arm: pass -> fail first, then fail -> pass."""
    if gate is None:
        return []
    lines = []
    for arm_id in sorted(gate.arms):
        c = gate.arms[arm_id]
        if c.lost:
            lines.append(f"{arm_id}: pass -> fail: {', '.join(map(str, c.lost))}")
        if c.won:
            lines.append(f"{arm_id}: fail -> pass: {', '.join(map(str, c.won))}")
    return lines


def no_baseline_line(gate: Gate | None, command: str | None = None) -> list[str]:
    """The hint printed when some arm has no baseline: with the run's own ``command`` that
    records one, on a line of its own (to copy whole), else the option that does."""
    if gate is None or gate.decision == Decision.UPDATED or not gate.new:
        return []
    if command is None:
        return [f"no baseline for {len(gate.new)} arm(s): {NO_BASELINE_HINT}"]
    return [f"no baseline for {len(gate.new)} arm(s); this records one:", f"  {command}"]


def scoreboard_lines(
    arms: Sequence[ArmScore],
    gate: Gate | None,
    verbosity: int = 0,
    *,
    baseline_hint: bool = True,
    width: int | None = None,
    update_command: str | None = None,
) -> list[str]:
    """The terminal scoreboard, laid out for a terminal ``width`` columns wide.

    Each arm's row starts with its gate word and stays on one line: columns that say nothing
    for this run are left out and those that do not fit move below the table
    (``score/layout.py``); prose lines wrap. ``width`` None, or ``verbosity > 0`` (``-v``),
    shows every column as it is. ``verbosity < 0`` (``-q``) keeps only the gate line and one
    line per regression, flip let through or unscored arm of an inconclusive gate: nothing
    that explains a failing exit is dropped. ``baseline_hint``: end with how to record a
    baseline for arms that have none (a pytest run's advice; ``diff`` of two reports lists
    such arms as only in NEW instead); ``update_command``: the run's own command that records
    one (kept whole, not wrapped), else the option is named.
    """
    if not arms:
        return []
    hint = no_baseline_line(gate, update_command) if baseline_hint else []
    command = hint[1:] if update_command is not None else []
    if verbosity < 0:
        return wrap_all((gate_lines(gate, quiet=True) if gate else []) + hint[:1], width) + command
    fitting = None if verbosity > 0 else width
    drawn, shown, left_out, moved = tables(arms, gate, fitting)
    lines = [line for t in drawn for line in t]
    lines += wrap_all(legend(shown, left_out, moved), width)
    headers, timing = timing_table(arms)
    # Fitted tables wrap their own prose (caption, moved rows); their rows stay whole.
    whole = {line for t in drawn for line in t}
    if timing:
        fitted_timing = fit(headers, timing, fitting).lines(width, TIMING_TITLE)
        whole.update(fitted_timing)
        lines += ["", *fitted_timing]
    changes = model_changes(arms)
    if changes:
        lines += ["", "model or server changed since the recording:", *(f"  {c}" for c in changes)]
    for section in sections(arms):
        fitted = fit(section.headers, section.body, fitting).lines(width)
        whole.update(fitted)
        lines += ["", *wrap_all([section.caption], width), *fitted]
    unstable = unstable_lines(arms, gate)
    if unstable:
        lines += ["", f"{UNSTABLE_TITLE}:", *(f"  {line}" for line in unstable)]
    canary = canary_lines(gate)
    if canary:
        lines += ["", *canary]
    if gate:
        lines += ["", *gate_lines(gate)]
    lines += hint
    whole.update(command)
    # Tables are laid out to fit already; only a prose line is wrapped here. A table's row
    # stays one line even when it is wider (under -v, or when the columns that never move do
    # not fit: a long model name): wrapped, it would lose its alignment.
    return [part for line in lines for part in ([line] if line in whole else wrap(line, width))]


def block_lines(blocks: Sequence[Block]) -> list[str]:
    """The summary blocks (score/summary.py) as terminal lines: a title, its lines indented."""
    lines: list[str] = []
    for block in blocks:
        lines += ["", f"{block.title}:", *(f"  {line}" for line in block.lines)]
    return lines
