"""The terminal scoreboard's layout: the verdict first, one line per arm within the width,
columns that say nothing left out (all back under -v), names not digests, one percentage
format, a legend, readable canary words, and a line for each flip the gate let through."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.score.aggregate import aggregate, canaries
from pytest_cardprobe.score.baseline import parse_baseline
from pytest_cardprobe.score.baseline_update import baseline_document
from pytest_cardprobe.score.gate import GateSettings, decide
from pytest_cardprobe.score.layout import CORE, fit
from pytest_cardprobe.score.markdown import markdown
from pytest_cardprobe.score.report import scoreboard_lines, timing_table
from pytest_cardprobe.score.stats import DASH
from pytest_cardprobe.types import ProbeResult, SampleRecord


def sample(passed: bool, failure: str | None = None) -> SampleRecord:
    return SampleRecord(
        0, "content", passed, "ok" if passed else failure or "", None if passed else failure
    )


def result(
    case: str,
    passed: bool | list[bool],
    channel: str = "prose",
    cond: str = "cold",
    failure: str = "truncated",
    digest: str | None = None,
) -> ProbeResult:
    marks = passed if isinstance(passed, list) else [passed]
    samples = [sample(p, failure) for p in marks]
    return ProbeResult(
        f"cases/cards.yaml::{case}[{channel}-{cond}]",
        "cards",
        "smollm2:135m",
        channel,
        cond,
        case,
        "passed" if all(marks) else "failed",
        samples,
        model_digest=digest,
    )


def run(flip: bool = False) -> list[ProbeResult]:
    """Three card arms; ``flip`` loses case ``c`` of prose/cold (2 of 2 samples to 1 of 2)."""
    found = []
    for channel, cond in (("prose", "cold"), ("prose", "history"), ("retry", "cold")):
        for case, ok in (("a", True), ("b", False)):
            found.append(result(case, ok, channel, cond))
        now = [True, False] if flip and (channel, cond) == ("prose", "cold") else None
        found.append(result("c", now or [True, True], channel, cond))
    return found


def gated(flip: bool, floor: int = 1) -> tuple[list[str], object]:
    before = run()
    document, _ = baseline_document(aggregate(before), before, canaries(before))
    base = parse_baseline(json.loads(json.dumps(document)), "baseline")
    now = run(flip)
    arms = aggregate(now)
    gate = decide(arms, now, base, GateSettings(noise_floor=floor), canaries(now))
    return scoreboard_lines(arms, gate, width=60), gate


def test_each_arm_row_starts_with_its_gate_word_and_fits_the_width() -> None:
    lines, _ = gated(flip=True)
    assert all(len(line) <= 60 for line in lines), [line for line in lines if len(line) > 60]
    # The suite and model are the same on every row: said once above the table.
    assert lines[0] == "suite cards, model smollm2:135m:"
    assert lines[1].split()[:3] == ["gate", "channel", "condition"]
    rows = lines[2:5]
    assert [r.split()[:3] for r in rows] == [
        ["warning", "prose", "cold"],
        ["ok", "prose", "history"],
        ["ok", "retry", "cold"],
    ]
    # One percentage format: no space before a percent sign anywhere.
    assert not [line for line in lines if re.search(r"\d %", line)]


def test_columns_that_say_nothing_are_left_out_and_minus_v_shows_them() -> None:
    before = run()
    document, _ = baseline_document(aggregate(before), before, canaries(before))
    base = parse_baseline(json.loads(json.dumps(document)), "baseline")
    arms = aggregate(before)
    gate = decide(arms, before, base, GateSettings(noise_floor=1), canaries(before))
    short = scoreboard_lines(arms, gate, width=100)
    # Nothing changed: every ± is 0 and no arm lost a case, so neither column is shown...
    assert short[1].split() == [
        "gate", "channel", "condition", "passed", "samples", "pass_by_route", "truncated",
    ]  # fmt: skip
    said = " ".join(line.strip() for line in short)
    assert "-v also shows the 2 column(s) that are all -, 0 or empty here" in said
    # ... and -v shows every column, the gate still first, p as "-" (nothing was lost).
    full = scoreboard_lines(arms, gate, verbosity=1, width=100)
    assert full[0].split()[:8] == [
        "gate", "suite", "model", "channel", "condition", "passed", "samples", "±",
    ]  # fmt: skip
    assert full[0].split()[8] == "p"
    first = full[1].split()
    assert first[0] == "ok" and first[9:11] == ["0", "-"]  # ±, p (intervals are two words)


def test_p_is_a_dash_when_nothing_was_lost_and_a_figure_when_something_was() -> None:
    lines, _ = gated(flip=True, floor=1)
    head = lines[1].split()
    assert "p" in head and "±" in head
    cells = {r.split()[2]: r.split() for r in lines[2:5] if r.split()[1] == "prose"}
    p_at = head.index("p") + 1  # the interval cells are two words each
    assert cells["cold"][p_at] != "-" and cells["cold"][p_at] != "1"
    assert cells["history"][p_at] == "-"
    legend = next(line for line in lines if line.startswith("key:"))
    assert "p = one-sided p-value of a loss (- when no case was lost)" in " ".join(
        line.strip() for line in lines[lines.index(legend) :]
    )


def test_a_flip_within_the_floor_says_the_gate_let_it_through_and_why() -> None:
    lines, gate = gated(flip=True, floor=1)
    assert gate.decision == "pass"  # type: ignore[attr-defined]
    text = "\n".join(lines)
    assert (
        "  let through: cards/smollm2:135m/prose/cold c: ok -> truncated (2/2 -> 1/2 samples)"
        " — the arm's net change is -1 case(s), within ±1, so the gate passes it"
    ) in text.replace("\n    ", " ")
    # Floor 0: the same flip fails the gate and is no longer said to be let through.
    failing, gate0 = gated(flip=True, floor=0)
    assert gate0.decision == "fail"  # type: ignore[attr-defined]
    assert not any("let through" in line for line in failing)


def test_a_won_case_within_the_floor_says_it_is_not_counted_as_a_gain() -> None:
    before = run(flip=True)
    document, _ = baseline_document(aggregate(before), before, canaries(before))
    base = parse_baseline(json.loads(json.dumps(document)), "baseline")
    now = run()
    arms = aggregate(now)
    gate = decide(arms, now, base, GateSettings(noise_floor=1), canaries(now))
    assert gate.gains == []  # the summary's "0 gain(s)" ...
    lines = scoreboard_lines(arms, gate)
    # ... and the line that says why the case that did pass again is not one.
    assert any(
        line.startswith("  not a gain: cards/smollm2:135m/prose/cold c: truncated -> ok")
        and line.endswith("within ±1, so it is not counted as a gain")
        for line in lines
    )


def test_the_timing_table_names_the_model_and_shows_a_digest_only_where_it_changed() -> None:
    same = [result("a", True, digest="sha256:" + "a" * 64), result("b", True, digest=None)]
    headers, body = timing_table(aggregate(same))
    assert "digest" not in headers and body[0][headers.index("model")] == "smollm2:135m"
    moved = [result("a", True, digest="a" * 64), result("b", True, digest="b" * 64)]
    headers, body = timing_table(aggregate(moved))
    assert body[0][headers.index("digest")] == f"{'a' * 12} -> {'b' * 12}"
    assert not any("a" * 13 in cell for row in body for cell in row)


def test_an_old_baseline_with_camel_case_canary_words_gates_unchanged() -> None:
    # A baseline written before the readable words: its canary word is the stored one.
    calls = [
        ProbeResult(
            f"cases/tools.yaml::{case}",
            "tools",
            "m",
            "call",
            "cold",
            case,
            "failed" if canary == "needs_tool" else "passed",
            [
                SampleRecord(
                    0,
                    "content",
                    canary == "no_tool",
                    "ok",
                    None if canary == "no_tool" else "declined",
                    calls=[[]],
                    turns=1,
                )
            ],
            canary=canary,
        )
        for case, canary in (("n", "needs_tool"), ("o", "no_tool"))
    ]
    document, _ = baseline_document(aggregate(calls), calls, canaries(calls))
    assert document["canary"] == {"tools/m": "supportedButDeclines"}
    base = parse_baseline(json.loads(json.dumps(document)), "an old baseline")
    arms = aggregate(calls)
    gate = decide(arms, calls, base, GateSettings(), canaries(calls))
    assert gate.decision == "pass" and not gate.canary_changes
    assert gate.to_dict()["canary"] == {"tools/m": "supportedButDeclines"}  # data unchanged
    text = "\n".join(scoreboard_lines(arms, gate, width=100))
    assert "canary tools/m: declines although supported — needs_tool called 0/1" in text
    assert "supportedButDeclines" not in text and "supportedButDeclines" not in markdown(arms, gate)


CELL = st.text(alphabet="abc-0/ %[]", min_size=0, max_size=14)


@settings(max_examples=150, deadline=None)
@given(
    extra=st.lists(st.sampled_from(["x1", "x2", "wide", "declined", "truncated", "adoption"])),
    rows=st.integers(1, 5),
    data=st.data(),
    width=st.integers(40, 160),
)
def test_every_fitted_line_is_within_the_width_when_the_verdict_columns_fit(
    extra: list[str], rows: int, data: st.DataObject, width: int
) -> None:
    headers = ["gate", "channel", "condition", "passed", *dict.fromkeys(extra)]
    body = [[data.draw(CELL) for _ in headers] for _ in range(rows)]
    fitted = fit(headers, body, width, together={"declined", "truncated"})
    core = [h for h in fitted.headers if h in CORE]
    kept = [[r[headers.index(h)] for h in core] for r in body]
    lines = fitted.lines(width)
    # Every column is somewhere: in the table, moved below, in the caption, or said nothing.
    assert set(fitted.headers) | set(fitted.moved_headers) <= set(headers)
    assert fitted.headers[0] == "gate"
    group = {"declined", "truncated"}
    # Failure classes move together: never some in the table and some below it.
    assert not (group & set(fitted.moved_headers) and group & set(fitted.headers))
    widths = [max(len(h), *(len(r[i]) for r in kept)) for i, h in enumerate(core)]
    if sum(widths) + 2 * (len(widths) - 1) <= width:
        assert all(len(line) <= width for line in lines), lines


def test_a_sections_first_column_stays_and_names_the_rows_moved_below() -> None:
    headers = ["arm", "parse_failures", "retries", "recovered", "retry_route"]
    body = [
        ["cards/m/retry/cold", "1", "1", "2", "content 1"],
        ["cards/m/retry/x", "0", "0", "0", "-"],
    ]
    fitted = fit(headers, body, 40)
    assert fitted.headers[0] == "arm" and fitted.moved_headers
    assert fitted.labels == ["cards/m/retry/cold", "cards/m/retry/x"]
    lines = fitted.lines(40)
    assert all(len(line) <= 40 for line in lines), lines
    assert any(line.startswith("  cards/m/retry/cold: ") for line in lines), lines


def test_a_row_wider_than_the_terminal_stays_one_aligned_line() -> None:
    # Two models, one with a long tag: the verdict's columns alone are wider than 60.
    long = "qwen3-coder:30b-a3b-instruct-q4_K_M"
    found = run()
    for case, ok in (("a", True), ("b", False), ("c", True)):
        r = result(case, ok)
        r.model, r.nodeid = long, r.nodeid.replace("[", "[long-")
        found.append(r)
    arms = aggregate(found)
    lines = scoreboard_lines(arms, None, width=60)  # no gate: the table starts at model
    assert lines[0] == "suite cards:", lines
    header, rows = lines[1], lines[2:6]
    # The header keeps every column on its line (no "passed" pushed to a line of its own),
    # and each row, whole on its line, has its cells under it.
    assert header.split() == ["model", "channel", "condition", "passed"], lines
    start = header.index("passed")
    cell = re.compile(rf"\d+/\d+ \[\d+{DASH}\d+%\]")
    assert all(cell.fullmatch(row[start:]) for row in rows), lines
