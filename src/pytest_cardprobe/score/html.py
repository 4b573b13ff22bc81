"""The HTML report: one self-contained page with inline SVG charts and a case x arm grid.

No script, no stylesheet or font from elsewhere: the page must open from a CI artifact or a
mail attachment. Everything that came from a model or a suite goes through :func:`esc`
(``html.escape`` with quotes), in text and in attributes alike, so a reply holding markup
shows as text. Cells open with ``<details>``, which needs no script.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_cardprobe.score.aggregate import ArmScore
from pytest_cardprobe.score.gate import NEW, SAME, Gate
from pytest_cardprobe.score.report import (
    NO_BASELINE_HINT,
    failure_classes,
    pct,
    sections,
    unscored_lines,
)
from pytest_cardprobe.types import FailureClass, ProbeResult

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


def esc(value: object) -> str:
    """Text made inert for HTML text and quoted attributes alike."""
    return html.escape(str(value), quote=True)


def colour_of(kind: str, known: Sequence[str]) -> str:
    """The colour of a failure class (or ``pass``/``error``); unknown classes get spares."""
    if kind in COLOURS:
        return COLOURS[kind]
    extra = [k for k in known if k not in COLOURS]
    return SPARE[extra.index(kind) % len(SPARE)] if kind in extra else SPARE[0]


@dataclass(frozen=True)
class Bar:
    """One bar of a chart: a share now, and the baseline's share when there is one."""

    label: str
    value: float | None
    baseline: float | None
    note: str
    colour: str = "#2f6fb0"


def bar_chart(title: str, bars: Sequence[Bar], chart_id: str) -> str:
    """A horizontal bar chart as inline SVG, with the baseline marked on each bar."""
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


def _arm_label(arm: ArmScore, with_model: bool) -> str:
    parts = (
        [arm.suite, arm.model, arm.channel, arm.condition]
        if with_model
        else [
            arm.suite,
            arm.channel,
            arm.condition,
        ]
    )
    return " / ".join(parts)


def pass_bars(arms: Sequence[ArmScore], gate: Gate | None) -> list[Bar]:
    """Pass rate per arm, with the baseline's rate over the cases both ran."""
    bars = []
    for arm in arms:
        c = gate.arms.get(arm.id) if gate else None
        rate = arm.passed / arm.scored if arm.scored else None
        base = c.passed_before / c.compared if c and c.compared else None
        note = f"{arm.passed}/{arm.scored}" + (
            f" (baseline {c.passed_before}/{c.compared})" if c and c.compared else ""
        )
        bars.append(Bar(_arm_label(arm, True), rate, base, note))
    return bars


def adoption_bars(arms: Sequence[ArmScore], gate: Gate | None) -> list[Bar]:
    """Adoption per tool-channel arm, with the baseline's adoption."""
    bars = []
    for arm in arms:
        if arm.adoption is None:
            continue
        c = gate.arms.get(arm.id) if gate else None
        before = c.adoption_before if c else None
        note = f"{arm.routes.get('tool_calls', 0)}/{arm.calls} calls" + (
            f" (baseline {pct(before)})" if before is not None else ""
        )
        bars.append(Bar(_arm_label(arm, True), arm.adoption, before, note, "#1c9c9c"))
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


def cell_kind(result: ProbeResult) -> str:
    """The colour key of a grid cell: pass, the first failing sample's class, or the status."""
    if result.status == "passed":
        return "pass"
    if result.status in ("error", "unsupported"):
        return result.status
    bad = next((s for s in result.samples if not s.passed), None)
    return (bad.failure if bad and bad.failure else None) or result.status


OUTCOME_TAGS = {"xfailed": "known", "xpassed": "gain", "flipped": "FLIP"}


def grid_cell(result: ProbeResult | None, known: Sequence[str]) -> str:
    """One case x arm cell: a coloured summary that opens every sample's details."""
    if result is None:
        return '<td class="empty">—</td>'
    kind = cell_kind(result)
    tag = OUTCOME_TAGS.get(result.outcome or "", "")
    first = next((s for s in result.samples if not s.passed), None) or (
        result.samples[0] if result.samples else None
    )
    short = first.label if first else (result.message or result.status)
    samples = []
    for s in result.samples:
        mark = "pass" if s.passed else "FAIL"
        samples.append(
            f'<div class="sample"><div class="sh">sample {s.index + 1}/{len(result.samples)} '
            f"<b>{mark}</b> · route <code>{esc(s.route or '-')}</code>"
            + (f" · {esc(s.failure)}" if s.failure else "")
            + (f" · finish {esc(s.finish_reason)}" if s.finish_reason else "")
            + f"</div><div>{esc(s.label)}</div>"
            + (
                f"<div>unknown element types: {esc(', '.join(s.unknown_types))}</div>"
                if s.unknown_types
                else ""
            )
            + f"<pre>{esc(s.reply)}</pre></div>"
        )
    if result.message:
        samples.insert(0, f"<pre>{esc(result.message)}</pre>")
    return (
        f'<td class="cell" data-kind="{esc(kind)}" style="--c:{esc(colour_of(kind, known))}">'
        f"<details><summary>{esc(short[:40])}"
        + (f' <span class="tag">{esc(tag)}</span>' if tag else "")
        + f'</summary><div class="pop"><div class="nid">{esc(result.nodeid)}</div>'
        + "".join(samples)
        + "</div></details></td>"
    )


def grid(arms: Sequence[ArmScore], results: Sequence[ProbeResult]) -> str:
    """The case x arm table, coloured by failure class."""
    by_key = {(r.arm_id, r.case): r for r in results}
    cases = sorted({(r.suite, r.case) for r in results})
    known = ["pass", *failure_classes(arms), "error", "unsupported"]
    many_models = len({a.model for a in arms}) > 1
    head = "".join(f"<th>{esc(_arm_label(a, many_models))}</th>" for a in arms)
    body = []
    for suite, case in cases:
        cells = "".join(
            grid_cell(by_key.get((a.id, case)), known) if a.suite == suite else "<td></td>"
            for a in arms
        )
        body.append(f"<tr><th class='case'>{esc(case)}</th>{cells}</tr>")
    used = sorted(
        {cell_kind(r) for r in results}, key=lambda k: known.index(k) if k in known else 99
    )
    legend = "".join(
        f'<span class="key"><i style="background:{esc(colour_of(k, known))}"></i>{esc(k)}</span>'
        for k in used
    )
    return (
        f'<div class="legend">{legend}</div>'
        f'<table class="grid" id="grid"><thead><tr><th>case</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def gate_section(gate: Gate | None) -> str:
    """The decision at the top, with the flips and the other findings."""
    if gate is None:
        return '<section class="gate none"><h2>No probe tests ran</h2></section>'
    items = []
    flips = gate.flips
    if flips:
        items.append("<h3>Flips (passed in the baseline, fail now)</h3><ul>")
        items += [f"<li><code>{esc(a)}</code> {esc(f)}</li>" for a, f in flips]
        items.append("</ul>")
    for title, lines in (
        ("Regressions", gate.regressions),
        ("Warnings (within the noise floor)", gate.warnings),
        ("Unscored (inconclusive)", unscored_lines(gate)),
        ("Gains", gate.gains),
    ):
        if lines:
            items.append(f"<h3>{title}</h3><ul>" + "".join(f"<li>{esc(x)}</li>" for x in lines))
            items.append("</ul>")
    if gate.coverage:
        items.append(f'<p class="coverage">{esc(gate.coverage)}</p>')
    if gate.new and gate.decision != "updated":
        items.append(f"<p>No baseline for {len(gate.new)} arm(s): {esc(NO_BASELINE_HINT)}.</p>")
    return (
        f'<section class="gate {esc(gate.decision)}" id="gate"><h2>Gate: '
        f"{esc(gate.decision)}</h2><p>{esc(gate.summary)}</p>{''.join(items)}</section>"
    )


def settings_section(run: dict[str, Any]) -> str:
    """The run's settings as a small definition table."""
    rows = []
    for key, value in run.items():
        if isinstance(value, list):
            # An empty filter keeps everything; an empty server list means nothing was asked.
            empty = "all" if key in ("channels", "conditions") else "none"
            shown = ", ".join(map(str, value)) or empty
        else:
            shown = "default" if value is None else str(value)
        rows.append(f"<tr><th>{esc(key)}</th><td>{esc(shown)}</td></tr>")
    return f'<table class="settings" id="settings">{"".join(rows)}</table>'


def scoreboard_table(arms: Sequence[ArmScore], gate: Gate | None) -> str:
    """The scoreboard as HTML tables (same columns and groups as the terminal)."""
    from pytest_cardprobe.score.report import groups, rows

    out = []
    for group in groups(arms):
        headers, body = rows(group, gate)
        head = "".join(f"<th>{esc(h)}</th>" for h in headers)
        trs = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in body)
        # Card arms keep the id the page always had; call arms get a table of their own.
        name = "scoreboard-calls" if group[0].is_call_arm else "scoreboard"
        out.append(f'<table class="board" id="{name}"><tr>{head}</tr>{trs}</table>')
    return "".join(out)


def section_tables(arms: Sequence[ArmScore]) -> str:
    """The tables after the scoreboard (the retry table, ...), one HTML section each."""
    out = []
    for section in sections(arms):
        head = "".join(f"<th>{esc(h)}</th>" for h in section.headers)
        trs = "".join(
            "<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in section.body
        )
        out.append(
            f"<section><h2>{esc(section.title)}</h2><p class='muted'>{esc(section.caption)}</p>"
            f"<div class='scroll'><table class='board'><tr>{head}</tr>{trs}</table></div>"
            "</section>"
        )
    return "".join(out)


STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;
max-width:1180px;padding:0 16px;color:#1d1d1f;background:#fafafa}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:0 0 6px}
h3{font-size:15px;margin:10px 0 4px}
section{background:#fff;border:1px solid #e2e2e2;border-radius:8px;padding:14px 18px;margin:14px 0}
.gate{border-left:8px solid #3f9a5b}.gate.fail,.gate.inconclusive{border-left-color:#d0503c}
.gate.updated{border-left-color:#2f6fb0}
code{font:12px ui-monospace,Menlo,Consolas,monospace;background:#f2f2f2;padding:0 3px;
border-radius:3px}
table{border-collapse:collapse}th,td{text-align:left;padding:4px 8px}
.settings th{color:#555;font-weight:500}.board td,.board th{border-bottom:1px solid #eee}
.chart .ct{font-weight:600;font-size:14px}.chart .bl{text-anchor:end;font-size:12px}
.chart .bv{font-size:12px;fill:#333}.chart .tick{font-size:10px;fill:#777;text-anchor:middle}
.chart .grid{stroke:#e6e6e6}.chart .track{fill:#f1f1f1}
table.grid{width:100%}.grid th{font-size:12px;white-space:nowrap;vertical-align:bottom}
.grid td.cell{padding:0;border:2px solid #fafafa;min-width:120px;vertical-align:top}
.grid summary{background:var(--c);cursor:pointer;color:#fff;font-size:11px;padding:3px 6px;
white-space:nowrap;
overflow:hidden;text-overflow:ellipsis;text-shadow:0 0 2px rgba(0,0,0,.4)}
.grid .tag{background:rgba(0,0,0,.35);border-radius:3px;padding:0 3px;font-size:10px}
.grid .pop{background:#fff;color:#1d1d1f;padding:6px 8px;max-width:520px;border:1px solid #ccc}
.grid pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:6px;
font-size:11px;max-height:320px;overflow:auto}.grid .nid{font-size:11px;color:#666}
.grid .sh{font-size:11px;margin-top:6px}.legend{margin:6px 0 10px}
.key{display:inline-block;margin-right:14px;font-size:12px}
.key i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:5px;
vertical-align:-1px}
.scroll{overflow-x:auto}.muted{color:#666;font-size:12px}
"""


def html_report(
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    gate: Gate | None,
    run: dict[str, Any],
) -> str:
    """The whole page."""
    charts = [
        bar_chart("Pass rate per arm (black mark: baseline)", pass_bars(arms, gate), "pass-chart")
    ]
    tool = adoption_bars(arms, gate)
    if tool:
        charts.append(
            bar_chart("Adoption per tool arm (black mark: baseline)", tool, "adoption-chart")
        )
    if len({a.model for a in arms}) > 1:
        charts.append(bar_chart("Models side by side", model_bars(arms), "models-chart"))
    moved = sum(1 for c in (gate.arms.values() if gate else []) if c.word not in (SAME, NEW))
    return (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        # No script may run at all, even if something slipped through escaping.
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; img-src data:\">"
        "<title>cardprobe report</title>"
        f"<style>{STYLE}</style></head><body>"
        f"<h1>cardprobe report</h1><p class='muted'>{len(results)} probe test(s), "
        f"{len(arms)} arm(s), {moved} arm(s) moved against the baseline</p>"
        f"{gate_section(gate)}"
        f"<section><h2>Scoreboard</h2><div class='scroll'>{scoreboard_table(arms, gate)}</div>"
        "</section>"
        f"{section_tables(arms)}"
        f"<section><h2>Charts</h2>{''.join(charts)}</section>"
        f"<section><h2>Cases &times; arms</h2><p class='muted'>Colour: the first failing sample's "
        f"failure class. Open a cell for every sample's label, route and whole reply.</p>"
        f"<div class='scroll'>{grid(arms, results)}</div></section>"
        f"<section><h2>Settings</h2>{settings_section(run)}</section>"
        "</body></html>\n"
    )
