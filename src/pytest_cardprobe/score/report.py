"""Render scores and the gate: the terminal scoreboard, the Markdown and the JSON report.

Everything is built as data first (columns, rows, lines) so that it can be printed, written
or snapshotted the same way. Columns come from the data: a failure class, a route or a
note gets a column when some arm has one, so new classes need no change here. Call arms
(channel ``call``) get a table of their own, since their failure classes are not the card
ones; call suites' canaries are a section of their own lines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_cardprobe.score.aggregate import ArmScore
from pytest_cardprobe.score.gate import NEW, SAME, ArmComparison, Gate
from pytest_cardprobe.types import FailureClass

NO_BASELINE_HINT = "pytest --cardprobe-update-baseline records one"


@dataclass(frozen=True)
class Column:
    """One scoreboard column: its header and how a row's cell is drawn."""

    header: str
    cell: Callable[[ArmScore, ArmComparison | None], str]


def pct(value: float | None) -> str:
    """A share as a whole percentage, ``-`` when there is none."""
    return "-" if value is None else f"{round(value * 100):d}%"


#: Card channels whose replies travel more than one route (call arms have their own table).
ROUTE_SPLIT_CHANNELS = ("tool", "retry")


def by_route(arm: ArmScore, _: ArmComparison | None = None) -> str:
    """Tool and retry arms: samples passed / samples, per route that carried any."""
    if arm.channel not in ROUTE_SPLIT_CHANNELS:
        return "-"
    return "; ".join(f"{r} {p}/{n}" for r, (p, n) in arm.by_route().items()) or "-"


def _signed(value: int) -> str:
    return f"{value:+d}" if value else "0"


def _passed(arm: ArmScore, _: ArmComparison | None) -> str:
    return "-" if arm.unsupported and not arm.scored else f"{arm.passed}/{arm.scored}"


def _passed_change(_: ArmScore, c: ArmComparison | None) -> str:
    if c is None or c.word == NEW:
        return "new" if c else ""
    return _signed(c.passed_delta)


def _adoption(arm: ArmScore, _: ArmComparison | None) -> str:
    if arm.adoption is None:
        return "-"
    tool = arm.routes.get("tool_calls", 0)
    # A call arm's share is over the samples that made a call (declining is right for some).
    made = tool + arm.routes.get("recovered", 0) if arm.is_call_arm else arm.calls
    return f"{tool}/{made} {pct(arm.adoption)}"


def _adoption_change(arm: ArmScore, c: ArmComparison | None) -> str:
    delta = c.adoption_delta if c else None
    if delta is None or arm.adoption is None:
        return ""
    return f"{round(delta * 100):+d}pt" if round(delta * 100) else "0"


def _ran(_: ArmScore, c: ArmComparison | None) -> str:
    """Coverage of a partial run: the baseline's cases of the arm that ran, of how many."""
    if c is None or c.cases_in_baseline is None:
        return "-"
    return f"{c.baseline_cases_run}/{c.cases_in_baseline}"


def _word(_: ArmScore, c: ArmComparison | None) -> str:
    return "" if c is None else ("ok" if c.word == SAME else c.word)


def _count(attribute: str, key: str) -> Callable[[ArmScore, ArmComparison | None], str]:
    """A cell showing ``arm.<attribute>[key]`` (a route or failure-class count)."""

    def cell(arm: ArmScore, _: ArmComparison | None) -> str:
        counts: dict[str, int] = getattr(arm, attribute)
        return str(counts.get(key, 0))

    return cell


def failure_classes(arms: Sequence[ArmScore]) -> list[str]:
    """Failure classes some arm has, in the enum's order, then any others by name."""
    seen = {k for a in arms for k, n in a.failures.items() if n}
    order = [c.value for c in FailureClass]
    return [c for c in order if c in seen] + sorted(seen - set(order))


def routes_shown(arms: Sequence[ArmScore]) -> list[str]:
    """Routes worth a column: any besides the two every arm has (``tool_calls``, ``content``)."""
    seen = {r for a in arms for r, n in a.routes.items() if n}
    return sorted(seen - {"tool_calls", "content"})


def columns(arms: Sequence[ArmScore], gate: Gate | None) -> list[Column]:
    """The scoreboard's columns for these arms."""
    cols = [
        Column("suite", lambda a, c: a.suite),
        Column("model", lambda a, c: a.model),
        Column("channel", lambda a, c: a.channel),
        Column("condition", lambda a, c: a.condition),
        Column("passed", _passed),
    ]
    if gate is not None and any(c.partial for c in gate.arms.values()):
        cols.append(Column("ran", _ran))
    if gate is not None and gate.decision != "updated":
        cols.append(Column("±", _passed_change))
    if any(a.adoption is not None for a in arms):
        cols.append(Column("adoption", _adoption))
        if gate is not None and any(c.adoption_delta is not None for c in gate.arms.values()):
            cols.append(Column("±pt", _adoption_change))
    cols += [Column(r, _count("routes", r)) for r in routes_shown(arms)]
    if any(a.channel in ROUTE_SPLIT_CHANNELS and a.by_route() for a in arms):
        cols.append(Column("pass_by_route", by_route))
    if any(a.args_as_string for a in arms):
        cols.append(Column("args_as_string", lambda a, c: str(a.args_as_string)))
    cols += [Column(n, _count("failures", n)) for n in failure_classes(arms)]
    if any(a.split for a in arms):
        cols.append(Column("split", lambda a, c: str(len(a.split))))
    if any(a.unscored or a.unsupported for a in arms):
        cols.append(Column("unscored", lambda a, c: str(a.unscored + a.unsupported)))
    if gate is not None and gate.decision != "updated":
        cols.append(Column("gate", _word))
    return cols


def rows(arms: Sequence[ArmScore], gate: Gate | None) -> tuple[list[str], list[list[str]]]:
    """Headers and one row of cells per arm."""
    cols = columns(arms, gate)
    found = gate.arms if gate else {}
    return [c.header for c in cols], [[c.cell(a, found.get(a.id)) for c in cols] for a in arms]


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


# Each builder returns its section or None; a new table is one more entry here.
SECTIONS: tuple[Callable[[Sequence[ArmScore]], Section | None], ...] = (retry_section,)


def sections(arms: Sequence[ArmScore]) -> list[Section]:
    """The sections these arms fill, in a fixed order."""
    return [s for build in SECTIONS if (s := build(arms)) is not None]


def groups(arms: Sequence[ArmScore]) -> list[list[ArmScore]]:
    """The arms of each table, in order: card arms, then call arms; empty groups left out."""
    found = [[a for a in arms if not a.is_call_arm], [a for a in arms if a.is_call_arm]]
    return [g for g in found if g]


def tables(arms: Sequence[ArmScore], gate: Gate | None) -> list[list[str]]:
    """One aligned text table per group of arms, a blank line between them."""
    lines: list[list[str]] = []
    for group in groups(arms):
        lines.append(([""] if lines else []) + table(*rows(group, gate)))
    return lines


def table(headers: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    """Plain aligned text table."""
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*headers).rstrip()] + [fmt.format(*r).rstrip() for r in body]


def unscored_lines(gate: Gate) -> list[str]:
    """An inconclusive gate's reasons: the arms with cases left without a verdict."""
    if gate.decision != "inconclusive":
        return []
    return [
        f"{arm_id}: {c.unscored} of {c.cases_run} case(s) unscored (infra or errors)"
        for arm_id, c in sorted(gate.arms.items())
        if c.unscored
    ]


def gate_lines(gate: Gate, gains: bool = True) -> list[str]:
    """The gate line, then what explains it: regressions, warnings, unscored arms of an
    inconclusive gate, the coverage of a partial run, and (unless ``gains`` is off) gains."""
    lines = [f"gate: {gate.decision} — {gate.summary}"]
    for title, items in (
        ("REGRESSION", gate.regressions),
        ("warning", gate.warnings),
        ("inconclusive", unscored_lines(gate)),
        ("gain", gate.gains if gains else []),
    ):
        lines.extend(f"  {title}: {item}" for item in items)
    if gate.coverage:
        lines.append(f"  {gate.coverage}")
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

    The model's identity (digest or fingerprint) gets a column when some arm recorded one.
    """
    shown = [a for a in arms if a.timing()["samples"] or a.digests]
    if not shown:
        return [], []
    cols: list[tuple[str, Callable[[ArmScore], str]]] = [
        ("arm", lambda a: a.id),
        ("samples", _timing("samples")),
        ("median s", _timing("latency_median_s", _num)),
        ("p95 s", _timing("latency_p95_s", _num)),
        ("prompt tok", _timing("prompt_tokens")),
        ("gen tok", _timing("generated_tokens")),
        ("tok/s", _timing("tokens_per_s", _num)),
    ]
    if any(a.digests for a in shown):
        # The first 19 characters tell digests apart in a table; the JSON has them whole.
        cols.append(("model", lambda a: ", ".join(d[:19] for d in a.digests) or "-"))
    return [h for h, _ in cols], [[cell(a) for _, cell in cols] for a in shown]


def model_changes(arms: Sequence[ArmScore]) -> list[str]:
    """One line per arm whose model differs from the one its old recording was made with."""
    return [f"{a.id}: model changed: {c}" for a in arms for c in a.model_changed]


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


def no_baseline_line(gate: Gate | None) -> list[str]:
    """The hint printed when some arm has no baseline."""
    if gate is None or gate.decision == "updated" or not gate.new:
        return []
    return [f"no baseline for {len(gate.new)} arm(s): {NO_BASELINE_HINT}"]


def scoreboard_lines(arms: Sequence[ArmScore], gate: Gate | None, verbosity: int = 0) -> list[str]:
    """The terminal scoreboard.

    ``verbosity < 0`` (``-q``) keeps only the gate line and one line per regression, warning
    or unscored arm of an inconclusive gate: nothing that explains a failing exit is dropped.
    """
    if not arms:
        return []
    if verbosity < 0:
        return (gate_lines(gate, gains=False) if gate else []) + no_baseline_line(gate)
    lines = [line for t in tables(arms, gate) for line in t]
    headers, timing = timing_table(arms)
    if timing:
        lines += ["", f"{TIMING_TITLE}:", *table(headers, timing)]
    changes = model_changes(arms)
    if changes:
        lines += ["", "model changed since the recording:", *(f"  {c}" for c in changes)]
    for section in sections(arms):
        lines += ["", section.caption, *table(section.headers, section.body)]
    split = [(a, c) for a in arms for c in sorted(a.split)]
    if split:
        lines += ["", "split cases (samples disagreed):"]
        lines.extend(f"  {a.id}: {c}" for a, c in split)
    canary = canary_lines(gate)
    if canary:
        lines += ["", *canary]
    if gate:
        lines += ["", *gate_lines(gate)]
    return lines + no_baseline_line(gate)
