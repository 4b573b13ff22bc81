"""The HTML report: one self-contained page with inline SVG charts and a case x arm grid.

No script, no stylesheet or font from elsewhere: the page must open from a CI artifact or a
mail attachment. Everything that came from a model or a suite goes through :func:`esc`
(``html.escape`` with quotes), in text and in attributes alike, so a reply holding markup
shows as text. Cells open with ``<details>``, which needs no script.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from pytest_cardprobe.score.aggregate import ArmScore
from pytest_cardprobe.score.charts import (
    adoption_bars,
    arm_label,
    bar_chart,
    colour_of,
    esc,
    model_bars,
    pass_bars,
)
from pytest_cardprobe.score.explain import let_through
from pytest_cardprobe.score.gate import NEW, SAME, Decision, Gate
from pytest_cardprobe.score.outcome import FLIP, GAIN, KNOWN
from pytest_cardprobe.score.report import (
    NO_BASELINE_HINT,
    UNSTABLE_TITLE,
    failure_classes,
    groups,
    rows,
    sections,
    unscored_lines,
    unstable_of,
)
from pytest_cardprobe.score.stats import interval_text
from pytest_cardprobe.score.summary import Block
from pytest_cardprobe.types import ProbeResult, Status

__all__ = ["esc", "html_report"]


def cell_kind(result: ProbeResult) -> str:
    """The colour key of a grid cell: pass, the first failing sample's class, or the status."""
    if result.status == Status.PASSED:
        return "pass"
    if result.status in (Status.ERROR, Status.UNSUPPORTED):
        return result.status
    bad = next((s for s in result.samples if not s.passed), None)
    return (bad.failure if bad and bad.failure else None) or result.status


OUTCOME_TAGS = {KNOWN: "known", GAIN: "gain", FLIP: "FLIP"}


def grid_cell(result: ProbeResult | None, known: Sequence[str], unstable: bool = False) -> str:
    """One case x arm cell: a coloured summary that opens every sample's details; a case
    whose samples disagreed (now or in the baseline) is marked ``unstable``."""
    if result is None:
        return '<td class="empty">—</td>'
    kind = cell_kind(result)
    tag = OUTCOME_TAGS.get(result.outcome or "", "")
    marks = [tag] if tag else []
    if unstable:
        marks.append("unstable")
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
        f'<td class="cell" data-kind="{esc(kind)}"'
        + (' data-unstable="yes"' if unstable else "")
        + f' style="--c:{esc(colour_of(kind, known))}">'
        f"<details><summary>{esc(short[:40])}"
        + "".join(f' <span class="tag">{esc(mark)}</span>' for mark in marks)
        + f'</summary><div class="pop"><div class="nid">{esc(result.nodeid)}</div>'
        + "".join(samples)
        + "</div></details></td>"
    )


def grid(
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    unstable: Collection[tuple[str, str]] = (),
) -> str:
    """The case x arm table, coloured by failure class; ``unstable`` holds the (arm id, case)
    pairs whose samples disagreed, now or in the baseline."""
    by_key = {(r.arm_id, r.case): r for r in results}
    cases = sorted({(r.suite, r.case) for r in results})
    known = ["pass", *failure_classes(arms), "error", "unsupported"]
    many_models = len({a.model for a in arms}) > 1
    head = "".join(f"<th>{esc(arm_label(a, many_models))}</th>" for a in arms)
    body = []
    for suite, case in cases:
        cells = "".join(
            grid_cell(by_key.get((a.id, case)), known, (a.id, case) in unstable)
            if a.suite == suite
            else "<td></td>"
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
    if unstable:
        legend += (
            '<span class="key"><i class="unstable-key"></i>unstable (samples disagreed)</span>'
        )
    return (
        f'<div class="legend">{legend}</div>'
        f'<table class="grid" id="grid"><thead><tr><th>case</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _breakable(text: str) -> str:
    """Escaped text that may break after a ``/`` (an arm id on a narrow screen)."""
    return esc(text).replace("/", "/<wbr>")


def verdicts(arms: Sequence[ArmScore], gate: Gate) -> str:
    """Every arm's verdict, one short row each (word, arm, cases passed), so the page leads
    with all of them at any width before the wide tables."""
    trs = []
    for arm in arms:
        found = gate.arms.get(arm.id)
        word = "" if found is None else ("ok" if found.word == SAME else found.word)
        trs.append(
            f'<tr><td class="{esc(word)}">{esc(word or "-")}</td><td>{_breakable(arm.id)}</td>'
            f"<td>{esc(interval_text(arm.passed, arm.scored))}</td></tr>"
        )
    return f'<table class="verdicts" id="verdicts">{"".join(trs)}</table>' if trs else ""


def gate_section(gate: Gate | None, arms: Sequence[ArmScore] = ()) -> str:
    """The decision at the top, every arm's verdict, the flips and the other findings."""
    if gate is None:
        return '<section class="gate none"><h2>No probe tests ran</h2></section>'
    items = [verdicts(arms, gate)] if gate.decision != "updated" else []
    flips = gate.flips
    if flips:
        items.append("<h3>Flips (passed in the baseline, fail now)</h3><ul>")
        items += [f"<li><code>{esc(a)}</code> {esc(f)}</li>" for a, f in flips]
        items.append("</ul>")
    for title, lines in (
        ("Regressions", gate.regressions),
        ("Let through by the gate", let_through(gate)),
        ("Unscored (inconclusive)", unscored_lines(gate)),
        ("Gains", gate.gains),
    ):
        if lines:
            items.append(f"<h3>{title}</h3><ul>" + "".join(f"<li>{esc(x)}</li>" for x in lines))
            items.append("</ul>")
    if gate.suggestions:
        items.append("<h3>Suggestions</h3><ul>")
        items += [f"<li>{esc(x)}</li>" for x in gate.suggestions]
        items.append("</ul>")
    if gate.coverage:
        items.append(f'<p class="coverage">{esc(gate.coverage)}</p>')
    if gate.other_mode_line:
        items.append(f'<p class="other-mode">{esc(gate.other_mode_line)}</p>')
    if gate.new and gate.decision != Decision.UPDATED:
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
    out = []
    for group in groups(arms):
        headers, body = rows(group, gate)
        # A long header may break after an underscore (wrong_<wbr>arguments), not mid-word.
        head = "".join(f"<th>{esc(h).replace('_', '_<wbr>')}</th>" for h in headers)
        # Each cell names its column, so a narrow screen can show a row as a card of its own.
        trs = "".join(
            "<tr>"
            + "".join(
                f'<td data-h="{esc(h)}">{esc(c)}</td>' for h, c in zip(headers, r, strict=True)
            )
            + "</tr>"
            for r in body
        )
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
max-width:1400px;padding:0 16px;color:#1d1d1f;background:#fafafa}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:0 0 6px}
h3{font-size:15px;margin:10px 0 4px}
section{background:#fff;border:1px solid #e2e2e2;border-radius:8px;padding:14px 18px;margin:14px 0}
.gate{border-left:8px solid #3f9a5b}
.gate.fail,.gate.inconclusive,.gate.refused{border-left-color:#d0503c}
.gate.updated{border-left-color:#2f6fb0}.gate.accepted{border-left-color:#c98a1b}
code{font:12px ui-monospace,Menlo,Consolas,monospace;background:#f2f2f2;padding:0 3px;
border-radius:3px}
table{border-collapse:collapse}th,td{text-align:left;padding:4px 8px}
.board th,.board td{padding:4px 5px;font-size:13px}
.settings th{color:#555;font-weight:500}.board td,.board th{border-bottom:1px solid #eee}
.board th{vertical-align:bottom}.board td{overflow-wrap:break-word}
.board td:first-child,.verdicts td:first-child{font-weight:600}
.verdicts td{padding:1px 8px;overflow-wrap:break-word}
.verdicts td:nth-child(odd){white-space:nowrap}.verdicts td.regression{color:#b3261e}
.verdicts td.warning{color:#9a6700}
.chart .ct{font-weight:600;font-size:14px}.chart .bl{text-anchor:end;font-size:12px}
.chart .bv{font-size:12px;fill:#333}.chart .tick{font-size:10px;fill:#777;text-anchor:middle}
.chart .grid{stroke:#e6e6e6}.chart .track{fill:#f1f1f1}
table.grid{width:100%;table-layout:fixed}
.grid th{font-size:12px;vertical-align:bottom;overflow-wrap:anywhere}
.grid td.cell{padding:0;border:2px solid #fafafa;vertical-align:top}
.grid summary{background:var(--c);cursor:pointer;color:#fff;font-size:11px;padding:3px 6px;
overflow-wrap:anywhere;text-shadow:0 0 2px rgba(0,0,0,.4)}
.grid .tag{background:rgba(0,0,0,.35);border-radius:3px;padding:0 3px;font-size:10px}
.grid .pop{background:#fff;color:#1d1d1f;padding:6px 8px;max-width:520px;border:1px solid #ccc}
.grid pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:6px;
font-size:11px;max-height:320px;overflow:auto}.grid .nid{font-size:11px;color:#666}
.grid .sh{font-size:11px;margin-top:6px}.legend{margin:6px 0 10px}
.key{display:inline-block;margin-right:14px;font-size:12px}
.key i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:5px;
vertical-align:-1px}
.scroll{overflow-x:auto}.muted{color:#666;font-size:12px}
.grid td[data-unstable]{outline:2px dashed #1d1d1f;outline-offset:-3px}
.key i.unstable-key{outline:2px dashed #1d1d1f;outline-offset:-2px;background:#fff}
.chart .whisker{fill:none}.chart .series{stroke-linejoin:round}
.pair{display:flex;gap:18px;align-items:flex-start;flex-wrap:wrap}
svg{max-width:100%;height:auto}
@media (max-width:700px){body{margin:8px auto;padding:0 6px}
table.grid{table-layout:auto;width:auto}.grid td.cell{min-width:90px}
section{padding:10px}.board tr:first-child{display:none}
.board,.board tbody,.board tr,.board td{display:block}
.board tr{border-bottom:2px solid #ddd;padding:4px 0}
.board td{border:0;padding:1px 4px}
.board td::before{content:attr(data-h) ": ";color:#666;font-weight:400}}
"""


def page(title: str, body: str) -> str:
    """A whole self-contained page: ``title`` and ``body`` (already escaped HTML)."""
    return (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        # No script may run at all, even if something slipped through escaping.
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{esc(title)}</title>"
        f"<style>{STYLE}</style></head><body>{body}</body></html>\n"
    )


def unstable_section(arms: Sequence[ArmScore], gate: Gate | None) -> str:
    """The unstable cases of every arm, both sides, as a list (empty when there are none)."""
    items = [
        f"<li><code>{esc(arm.id)}</code>: {esc(', '.join(map(str, cases)))}</li>"
        for arm in arms
        if (cases := unstable_of(arm, gate))
    ]
    if not items:
        return ""
    title = UNSTABLE_TITLE[0].upper() + UNSTABLE_TITLE[1:]
    return f"<section id='unstable'><h2>{esc(title)}</h2><ul>{''.join(items)}</ul></section>"


def html_report(
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    gate: Gate | None,
    run: dict[str, Any],
    blocks: Sequence[Block] = (),
) -> str:
    """The whole page; the summary blocks come right after the gate."""
    charts = [
        bar_chart(
            "Pass rate per arm (black mark: baseline; whisker: 95% interval)",
            pass_bars(arms, gate),
            "pass-chart",
        )
    ]
    tool = adoption_bars(arms, gate)
    if tool:
        charts.append(
            bar_chart(
                "Adoption per tool arm (black mark: baseline; whisker: 95% interval)",
                tool,
                "adoption-chart",
            )
        )
    if len({a.model for a in arms}) > 1:
        charts.append(bar_chart("Models side by side", model_bars(arms), "models-chart"))
    moved = sum(1 for c in (gate.arms.values() if gate else []) if c.word not in (SAME, NEW))
    unstable = {(a.id, u.case) for a in arms for u in unstable_of(a, gate)}
    return page(
        "cardprobe report",
        f"<h1>cardprobe report</h1><p class='muted'>{len(results)} probe test(s), "
        f"{len(arms)} arm(s), {moved} arm(s) moved against the baseline</p>"
        f"{gate_section(gate, arms)}{blocks_section(blocks)}"
        f"<section><h2>Scoreboard</h2><div class='scroll'>{scoreboard_table(arms, gate)}</div>"
        "<p class='muted'>gate: the arm's verdict against the baseline. Shares show their "
        "95% Wilson interval; ± is cases passed minus the baseline's; p is the one-sided "
        "p-value of the loss against the baseline (paired over the cases that ran in both; "
        "- when no case was lost).</p>"
        "</section>"
        f"{section_tables(arms)}{unstable_section(arms, gate)}"
        f"<section><h2>Charts</h2>{''.join(charts)}</section>"
        f"<section><h2>Cases &times; arms</h2><p class='muted'>Colour: the first failing sample's "
        f"failure class; a dashed border marks an unstable case. Open a cell for every "
        f"sample's label, route and whole reply.</p>"
        f"<div class='scroll'>{grid(arms, results, unstable)}</div></section>"
        f"<section><h2>Settings</h2>{settings_section(run)}</section>",
    )


def blocks_section(blocks: Sequence[Block]) -> str:
    """The summary blocks (score/summary.py), a section each."""
    return "".join(
        f"<section><h2>{esc(b.title)}</h2><ul>"
        + "".join(f"<li>{esc(line)}</li>" for line in b.lines)
        + "</ul></section>"
        for b in blocks
    )
