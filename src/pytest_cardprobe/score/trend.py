"""The trend across commits: each arm's pass rate and adoption in every committed version of
the baseline file (``python -m pytest_cardprobe trend``).

Pure: the command line (``cli/trend.py``) reads the versions out of git and hands them over
decoded; this module checks each one as the plugin checks a baseline, keeps the ones that
parse and notes the others, and renders the text table, the Markdown and the HTML page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_cardprobe.score.baseline import Baseline, BaselineError, parse_baseline
from pytest_cardprobe.score.charts import ADOPTION_LINE, PASS_LINE, Series, esc, line_chart
from pytest_cardprobe.score.columns import pct
from pytest_cardprobe.score.html import page
from pytest_cardprobe.score.markdown import md_inline, md_text
from pytest_cardprobe.score.report import table
from pytest_cardprobe.score.stats import interval_text
from pytest_cardprobe.text import escape_control


@dataclass(frozen=True)
class Commit:
    """A commit that changed the baseline file."""

    rev: str  # the full hash
    short: str
    date: str  # YYYY-MM-DD
    subject: str


@dataclass(frozen=True)
class Figures:
    """One arm in one version of the baseline."""

    passed: int
    cases: int
    samples_passed: int | None  # None when some case kept no sample counts
    samples: int | None
    tool_calls: int | None  # tool-channel arms only (as the gate compares adoption)
    calls: int | None

    @property
    def rate(self) -> float:
        return self.passed / self.cases if self.cases else 0.0

    @property
    def adoption(self) -> float | None:
        if self.calls is None or not self.calls:
            return None
        return (self.tool_calls or 0) / self.calls


def figures_of(baseline: Baseline) -> dict[str, Figures]:
    """Per arm id, its figures (an arm with no case is left out)."""
    out = {}
    for arm_id, cases in baseline.arms.items():
        if not cases:
            continue
        verdicts = list(cases.values())
        counted = all(v.samples is not None for v in verdicts)
        tool = arm_id.rsplit("/", 2)[-2] == "tool"  # suite/model/channel/condition
        out[arm_id] = Figures(
            passed=sum(v.passed for v in verdicts),
            cases=len(verdicts),
            samples_passed=sum(v.counts[0] for v in verdicts) if counted else None,
            samples=sum(v.counts[1] for v in verdicts) if counted else None,
            tool_calls=sum(v.tool_calls for v in verdicts) if tool else None,
            calls=sum(v.calls for v in verdicts) if tool else None,
        )
    return out


@dataclass
class Trend:
    """The versions that parsed (oldest first), the ones skipped, and every arm seen."""

    path: str
    since: str | None = None  # --since REV: only the commits after it were read
    commits: list[Commit] = field(default_factory=list)
    arms: dict[str, list[Figures | None]] = field(default_factory=dict)  # one per commit
    skipped: list[str] = field(default_factory=list)

    def add(self, commit: Commit, document: object | None, problem: str | None = None) -> None:
        """One version of the file: decoded JSON, or None with the ``problem`` that stopped
        it from being read (it is then skipped with a note)."""
        baseline = None
        if problem is None:
            try:
                baseline = parse_baseline(document, f"{self.path} at {commit.short}")
            except BaselineError as exc:
                problem = str(exc)
        if baseline is None:
            self.skipped.append(
                f"skipped {commit.short} ({commit.date}, {commit.subject!r}): {problem}"
            )
            return
        found = figures_of(baseline)
        index = len(self.commits)
        self.commits.append(commit)
        for arm_id in set(found) | set(self.arms):
            row = self.arms.setdefault(arm_id, [None] * index)
            row.append(found.get(arm_id))
        self.arms = dict(sorted(self.arms.items()))


def _cells(f: Figures) -> list[str]:
    samples = "-" if f.samples is None else interval_text(f.samples_passed or 0, f.samples)
    adoption = "-" if f.adoption is None else f"{f.tool_calls}/{f.calls} {pct(f.adoption)}"
    return [interval_text(f.passed, f.cases), samples, adoption]


HEADERS = ["commit", "date", "passed", "samples", "adoption", "subject"]
SUBJECT_SHOWN = 50  # characters of a commit subject in a table row


def arm_rows(trend: Trend, arm_id: str) -> list[list[str]]:
    """The rows of one arm: one per version it is in."""
    return [
        [c.short, c.date, *_cells(f), _subject(c.subject)]
        for c, f in zip(trend.commits, trend.arms[arm_id], strict=True)
        if f is not None
    ]


def _subject(text: str) -> str:
    return text if len(text) <= SUBJECT_SHOWN else text[: SUBJECT_SHOWN - 1] + "…"


def trend_lines(trend: Trend) -> list[str]:
    """The text report: a table per arm, then the versions that were skipped."""
    if not trend.commits:
        if not trend.skipped:  # nothing was unreadable: no commit touched the file
            where = "in this history" if trend.since is None else f"after {trend.since}"
            return [escape_control(f"no commit {where} changes {trend.path}")]
        lines = [f"no version of {trend.path} in this history could be read", *trend.skipped]
        return [escape_control(line) for line in lines]
    first, last = trend.commits[0], trend.commits[-1]
    lines = [
        f"{trend.path}: {len(trend.commits)} version(s), {first.short} ({first.date}) to "
        f"{last.short} ({last.date})"
    ]
    for arm_id in trend.arms:
        rows = arm_rows(trend, arm_id)
        lines += ["", arm_id, *(f"  {line}" for line in table(HEADERS, rows))]
        if trend.arms[arm_id][-1] is None:
            lines.append(f"  (not in the latest version, {last.short})")
    if trend.skipped:
        lines += ["", *trend.skipped]
    return [escape_control(line) for line in lines]


def trend_markdown(trend: Trend) -> str:
    """The same tables as Markdown."""
    out = ["## cardprobe trend", "", f"{md_text(trend.path)}: {len(trend.commits)} version(s)"]
    for arm_id in trend.arms:
        out += ["", f"### {md_inline(arm_id)}", "", "| " + " | ".join(HEADERS) + " |"]
        out.append("|" + "---|" * len(HEADERS))
        out += ["| " + " | ".join(md_inline(c) for c in r) + " |" for r in arm_rows(trend, arm_id)]
    if trend.skipped:
        out += ["", "### Skipped", "", *(f"- {md_text(s)}" for s in trend.skipped)]
    return "\n".join(out) + "\n"


def _series(trend: Trend, arm_id: str) -> list[Series]:
    found: Sequence[Figures | None] = trend.arms[arm_id]
    labels = [f"{c.short} {c.date}" for c in trend.commits]
    rates = [None if f is None else f.rate for f in found]
    notes = [
        f"{lab}: {f.passed}/{f.cases}" if f else lab for lab, f in zip(labels, found, strict=True)
    ]
    out = [Series("pass rate", rates, PASS_LINE, notes)]
    adoption = [None if f is None else f.adoption for f in found]
    if any(a is not None for a in adoption):
        notes = [
            f"{lab}: {f.tool_calls}/{f.calls} calls" if f and f.adoption is not None else lab
            for lab, f in zip(labels, found, strict=True)
        ]
        out.append(Series("adoption", adoption, ADOPTION_LINE, notes))
    return out


def _h(value: object) -> str:
    """Text for the page: control characters shown as escapes (as in the text and the
    Markdown; a commit subject may hold an ANSI escape), then HTML-escaped."""
    return esc(escape_control(str(value)))


def trend_html(trend: Trend) -> str:
    """One self-contained page: per arm, a line chart over the commits and its table."""
    xs = [c.short for c in trend.commits]
    parts = [
        "<h1>cardprobe trend</h1>",
        f"<p class='muted'>{_h(trend.path)}: {len(trend.commits)} version(s) of the baseline, "
        "oldest first; a line breaks where an arm was not in the baseline.</p>",
    ]
    for number, arm_id in enumerate(trend.arms):
        head = "".join(f"<th>{_h(h)}</th>" for h in HEADERS)
        body = "".join(
            "<tr>" + "".join(f"<td>{_h(c)}</td>" for c in r) + "</tr>"
            for r in arm_rows(trend, arm_id)
        )
        series = _series(trend, arm_id)
        title = " and ".join(s.name for s in series) + " per commit"
        chart = line_chart(title, xs, series, f"trend-{number}")
        parts.append(
            f"<section class='arm'><h2>{_h(arm_id)}</h2><div class='pair'>{chart}"
            f"<div class='scroll'><table class='board'><tr>{head}</tr>{body}</table></div>"
            "</div></section>"
        )
    if trend.skipped:
        items = "".join(f"<li>{_h(s)}</li>" for s in trend.skipped)
        parts.append(f"<section id='skipped'><h2>Skipped</h2><ul>{items}</ul></section>")
    return page("cardprobe trend", "".join(parts))
