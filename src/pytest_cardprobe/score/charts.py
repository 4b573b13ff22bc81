"""Inline SVG charts for the HTML pages (the report and the trend): drawn here, no script.

Every string that came from a model, a suite, a commit or a path goes through :func:`esc`,
in text and in attributes alike.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_cardprobe.score.aggregate import ArmScore
from pytest_cardprobe.score.columns import pct
from pytest_cardprobe.score.gate import Gate
from pytest_cardprobe.score.stats import DASH, interval_text, wilson
from pytest_cardprobe.text import escape_control
from pytest_cardprobe.types import FailureClass

# Colours per failure class; a class this table does not know gets one from SPARE.
COLOURS = {
    "pass": "#3f9a5b",
    FailureClass.DECLINED.value: "#e0a526",
    FailureClass.MALFORMED.value: "#d0503c",
    FailureClass.WRONG_ELEMENT.value: "#8a5cc7",
    FailureClass.INFRA.value: "#8c8c8c",
    "error": "#4a4a4a",
    "unsupported": "#c8c8c8",
}
SPARE = ("#2f7fc1", "#c2407e", "#1c9c9c", "#9c6b1c", "#5c7a29", "#7a2941", "#406080")
BASELINE_MARK = "#1b1b1b"
WHISKER = "#555555"
PASS_LINE, ADOPTION_LINE = "#2f6fb0", "#1c9c9c"


def esc(value: object) -> str:
    """Text made inert for HTML text and quoted attributes alike; control characters and
    the bidi overrides, which would reorder what the page shows, as visible escapes (line
    breaks and tabs kept)."""
    return html.escape(escape_control(str(value), keep_newlines=True), quote=True)


def colour_of(kind: str, known: Sequence[str]) -> str:
    """The colour of a failure class (or ``pass``/``error``); unknown classes get spares."""
    if kind in COLOURS:
        return COLOURS[kind]
    extra = [k for k in known if k not in COLOURS]
    return SPARE[extra.index(kind) % len(SPARE)] if kind in extra else SPARE[0]


@dataclass(frozen=True)
class Bar:
    """One bar of a chart: a share now, the baseline's share when there is one, and the
    share's 95 % interval when it has one (drawn as a whisker)."""

    label: str
    value: float | None
    baseline: float | None
    note: str
    colour: str = "#2f6fb0"
    interval: tuple[float, float] | None = None


def bar_chart(title: str, bars: Sequence[Bar], chart_id: str) -> str:
    """A horizontal bar chart as inline SVG, with the baseline marked on each bar and the
    interval of each share as a whisker across it."""
    label_w, bar_w, row_h, top = 290, 470, 26, 30
    width, height = label_w + bar_w + 250, top + row_h * len(bars) + 26
    out = [
        f'<svg class="chart" id="{esc(chart_id)}" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{esc(title)}</title>",
        f'<text x="0" y="18" class="ct">{esc(title)}</text>',
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = label_w + bar_w * tick
        out.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 22}" class="grid"/>'
            f'<text x="{x:.1f}" y="{height - 8}" class="tick">{pct(tick)}</text>'
        )
    for i, bar in enumerate(bars):
        y = top + i * row_h
        out.append(f'<text x="{label_w - 8}" y="{y + 17}" class="bl">{esc(bar.label)}</text>')
        out.append(
            f'<rect x="{label_w}" y="{y + 4}" width="{bar_w}" height="{row_h - 8}" class="track"/>'
        )
        if bar.value is not None:
            w = max(bar_w * bar.value, 1.5)
            out.append(
                f'<rect class="bar" x="{label_w}" y="{y + 4}" width="{w:.1f}" '
                f'height="{row_h - 8}" fill="{esc(bar.colour)}">'
                f"<title>{esc(bar.label)}: {esc(bar.note)}</title></rect>"
            )
        if bar.interval is not None:
            out.append(_whisker(label_w, bar_w, y + row_h / 2, bar.interval))
        if bar.baseline is not None:
            x = label_w + bar_w * bar.baseline
            out.append(
                f'<line class="baseline-mark" x1="{x:.1f}" y1="{y + 1}" x2="{x:.1f}" '
                f'y2="{y + row_h - 1}" stroke="{BASELINE_MARK}" stroke-width="3">'
                f"<title>baseline {pct(bar.baseline)}</title></line>"
            )
        out.append(
            f'<text x="{label_w + bar_w + 8}" y="{y + 17}" class="bv">{esc(bar.note)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _whisker(left: float, width: float, y: float, interval: tuple[float, float]) -> str:
    """The 95 % interval as a line with end caps at height ``y``."""
    low, high = interval
    x1, x2 = left + width * low, left + width * high
    tip = f"95% interval {pct(low)}{DASH}{pct(high)}"
    return (
        f'<g class="whisker" stroke="{WHISKER}" stroke-width="1.5"><title>{esc(tip)}</title>'
        f'<line x1="{x1:.1f}" y1="{y:.1f}" x2="{x2:.1f}" y2="{y:.1f}"/>'
        f'<line x1="{x1:.1f}" y1="{y - 5:.1f}" x2="{x1:.1f}" y2="{y + 5:.1f}"/>'
        f'<line x1="{x2:.1f}" y1="{y - 5:.1f}" x2="{x2:.1f}" y2="{y + 5:.1f}"/></g>'
    )


def arm_label(arm: ArmScore, with_model: bool) -> str:
    """An arm's name in a chart or a grid header."""
    parts = [arm.suite, arm.model, arm.channel, arm.condition]
    return " / ".join(parts if with_model else [arm.suite, arm.channel, arm.condition])


def pass_bars(arms: Sequence[ArmScore], gate: Gate | None) -> list[Bar]:
    """Pass rate per arm, with its interval and the baseline's rate over the cases both ran."""
    bars = []
    for arm in arms:
        c = gate.arms.get(arm.id) if gate else None
        rate = arm.passed / arm.scored if arm.scored else None
        base = c.passed_before / c.compared if c and c.compared else None
        bounds = wilson(arm.passed, arm.scored)
        note = interval_text(arm.passed, arm.scored)
        if c and c.compared:
            note += f" (baseline {c.passed_before}/{c.compared})"
        bars.append(Bar(arm_label(arm, True), rate, base, note, interval=bounds))
    return bars


def adoption_bars(arms: Sequence[ArmScore], gate: Gate | None) -> list[Bar]:
    """Adoption per tool-channel arm, with its interval and the baseline's adoption."""
    bars = []
    for arm in arms:
        counts = arm.adoption_counts
        if counts is None:
            continue
        c = gate.arms.get(arm.id) if gate else None
        before = c.adoption_before if c else None
        note = f"{counts[0]}/{counts[1]} calls" + (
            f" (baseline {pct(before)})" if before is not None else ""
        )
        bars.append(
            Bar(
                arm_label(arm, True),
                arm.adoption,
                before,
                note,
                ADOPTION_LINE,
                interval=wilson(*counts),
            )
        )
    return bars


def model_bars(arms: Sequence[ArmScore]) -> list[Bar]:
    """Models side by side: per suite, channel and condition, one bar per model."""
    groups: dict[tuple[str, str, str], list[ArmScore]] = {}
    for arm in arms:
        groups.setdefault((arm.suite, arm.channel, arm.condition), []).append(arm)
    models = sorted({a.model for a in arms})
    bars = []
    for key in sorted(groups):
        for arm in sorted(groups[key], key=lambda a: a.model):
            rate = arm.passed / arm.scored if arm.scored else None
            colour = SPARE[models.index(arm.model) % len(SPARE)]
            label = f"{' / '.join(key)} · {arm.model}"
            bars.append(Bar(label, rate, None, f"{arm.passed}/{arm.scored}", colour))
    return bars


@dataclass(frozen=True)
class Series:
    """One line of a line chart: a value (0..1) per x position, None where it is absent."""

    name: str
    values: Sequence[float | None]
    colour: str
    notes: Sequence[str]  # the tooltip of each point


def line_chart(title: str, xs: Sequence[str], series: Sequence[Series], chart_id: str) -> str:
    """A line chart (0-100 %) over ``xs`` as inline SVG; a series breaks where it is None."""
    left, top, plot_w, plot_h = 48, 34, max(120, 70 * max(len(xs) - 1, 1)), 160
    width, height = left + plot_w + 40, top + plot_h + 56
    step = plot_w / max(len(xs) - 1, 1)
    out = [
        f'<svg class="chart" id="{esc(chart_id)}" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{esc(title)}</title>",
        f'<text x="0" y="18" class="ct">{esc(title)}</text>',
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        out.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">'
            f"{pct(tick)}</text>"
        )
    for i, x_label in enumerate(xs):
        x = left + step * i
        out.append(f'<text x="{x:.1f}" y="{top + plot_h + 16}" class="tick">{esc(x_label)}</text>')
    for number, line in enumerate(series):
        runs: list[list[tuple[float, float]]] = [[]]
        dots = []
        for i, value in enumerate(line.values):
            if value is None:
                runs.append([])  # the arm was not in this baseline: the line breaks
                continue
            x, y = left + step * i, top + plot_h * (1 - value)
            runs[-1].append((x, y))
            dots.append(
                f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3.5" '
                f'fill="{esc(line.colour)}"><title>{esc(line.notes[i])}</title></circle>'
            )
        for run in runs:
            if len(run) > 1:
                coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
                out.append(
                    f'<polyline class="series" points="{coords}" fill="none" '
                    f'stroke="{esc(line.colour)}" stroke-width="2"/>'
                )
        out += dots
        lx, ly = left + 150 * number, top + plot_h + 38
        out.append(
            f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" fill="{esc(line.colour)}"/>'
            f'<text x="{lx + 14}" y="{ly}" class="bv">{esc(line.name)}</text>'
        )
    out.append("</svg>")
    return "".join(out)
