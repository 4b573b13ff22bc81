"""Per-route pass rates and the retry table, counted from sample records."""

from __future__ import annotations

from pytest_cardprobe.score.aggregate import aggregate
from pytest_cardprobe.score.html import html_report
from pytest_cardprobe.score.markdown import markdown
from pytest_cardprobe.score.report import by_route, retry_section, rows, scoreboard_lines
from pytest_cardprobe.types import ProbeResult, SampleRecord


def sample(i: int, route: str | None, passed: bool, retried: bool = False) -> SampleRecord:
    first = {"label": "broken: invalid JSON x", "failure": "malformed", "route": "content"}
    return SampleRecord(
        index=i,
        route=route,
        passed=passed,
        label="ok Input.Date" if passed else "prose",
        failure=None if passed else ("infra" if route is None else "declined"),
        retry_of=first if retried else None,
    )


def result(channel: str, case: str, *samples: SampleRecord) -> ProbeResult:
    status = "passed" if all(s.passed for s in samples) else "failed"
    return ProbeResult(f"x::{case}", "cards", "m", channel, "cold", case, status, list(samples))


def test_tool_arm_pass_rate_splits_by_route() -> None:
    (arm,) = aggregate(
        [
            result("tool", "a", sample(0, "tool_calls", True), sample(1, "tool_calls", False)),
            result("tool", "b", sample(0, "recovered", True), sample(1, "content", False)),
        ]
    )
    assert arm.by_route() == {"content": (0, 1), "recovered": (1, 1), "tool_calls": (1, 2)}
    assert by_route(arm) == "content 0/1; recovered 1/1; tool_calls 1/2"
    assert arm.to_dict()["route_passed"] == {
        "content": 0,
        "recovered": 1,
        "swallowed": 0,
        "tool_calls": 1,
    }
    assert arm.to_dict()["retry"] is None


def test_retry_table_counts_parse_failures_retries_and_recoveries() -> None:
    (arm,) = aggregate(
        [
            result("retry", "a", sample(0, "tool_calls", True, True), sample(1, "content", True)),
            result("retry", "b", sample(0, "content", False, True), sample(1, None, False, True)),
        ]
    )
    assert arm.to_dict()["retry"] == {
        "parse_failures": 3,
        "retries": 2,  # the third retry hit an infra error: no reply, not a retry made
        "recovered": 1,
        "routes": {"content": 1, "recovered": 0, "swallowed": 0, "tool_calls": 1},
    }
    section = retry_section([arm])
    assert section is not None
    assert section.body == [["cards/m/retry/cold", "3", "2", "1", "content 1; tool_calls 1"]]
    lines = scoreboard_lines([arm], None)
    assert any(line.startswith("arm") and "retry_route" in line for line in lines)
    assert "### Retry" in markdown([arm], None)
    assert "<h2>Retry</h2>" in html_report([arm], [], None, {})
    headers, body = rows([arm], None)
    assert body[0][headers.index("pass_by_route")] == "content 1/2; tool_calls 1/1"


def test_prose_arms_show_no_route_split_and_no_retry_table() -> None:
    (arm,) = aggregate([result("prose", "a", sample(0, "content", True))])
    assert by_route(arm) == "-"
    assert retry_section([arm]) is None
    assert "### Retry" not in markdown([arm], None)
    assert "<h2>Retry</h2>" not in html_report([arm], [], None, {})
    # The column comes from the data: no tool or retry arm, no pass_by_route column.
    assert "pass_by_route" not in rows([arm], None)[0]
