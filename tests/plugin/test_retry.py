"""The retry channel replayed offline: prose first, through the tool only on a parse failure.

The cassettes are the shipped real recordings of the prose and tool channels of one case
(the retry channel sends exactly those two requests), with their replies edited to the
situation under test.
"""

from __future__ import annotations

from typing import Any

import pytest
from cardprobe_testing import compose_retry_cassette, report

BROKEN = '[{"type": "Input.Date", "id": "day",}]'  # trailing comma: does not parse
DATE_BODY = [{"type": "Input.Date", "id": "day", "label": "Day"}]
SELECT = ("-k", "date and retry and cold")


def only_test(data: dict[str, Any]) -> dict[str, Any]:
    (test,) = data["tests"]
    return test


def retry_arm(data: dict[str, Any]) -> dict[str, Any]:
    (arm,) = [a for a in data["arms"] if a["channel"] == "retry"]
    return arm


def test_parse_failure_recovered_through_the_tool(recorded: pytest.Pytester) -> None:
    compose_retry_cassette(recorded, "date", "cold", first=BROKEN, retry_body=DATE_BODY)
    result, data = report(recorded, *SELECT)
    test = only_test(data)
    assert test["status"] == "passed", result.stdout.str()
    for sample in test["samples"]:
        assert (sample["passed"], sample["route"], sample["label"]) == (
            True,
            "tool_calls",
            "ok Input.Date",
        )
        assert sample["retry_of"]["label"].startswith("broken: invalid JSON")
    assert retry_arm(data)["retry"] == {
        "parse_failures": 2,
        "retries": 2,
        "recovered": 2,
        "routes": {"content": 0, "recovered": 0, "swallowed": 0, "tool_calls": 2},
    }
    result.stdout.fnmatch_lines(
        [
            "*retry (prose first; a reply that fails to parse is asked again via the tool):*",
            "arm*parse_failures*retries*recovered*retry_route*",
            "cards/smollm2:135m/retry/cold*2*2*2*tool_calls 2*",
        ]
    )


def test_parse_failure_not_recovered(recorded: pytest.Pytester) -> None:
    # Without a baseline the failure is not a known one, so its full report is printed.
    # The codeblock case: both its recorded prose replies and its recorded tool-channel replies
    # (cold) ended on their own (done_reason stop). date's tool replies were cut at the token
    # limit, which the judge calls truncated, not declined, and a reply cut off is not retried.
    (recorded.path / "cardprobe-baseline.json").unlink()
    compose_retry_cassette(
        recorded, "codeblock", "cold", first=BROKEN, retry_content="Slicing reverses a string."
    )
    result, data = report(recorded, "-k", "codeblock and retry and cold")
    test = only_test(data)
    assert test["status"] == "failed"
    assert [(s["route"], s["label"], s["failure"]) for s in test["samples"]] == [
        ("content", "prose", "declined")
    ] * 2
    assert retry_arm(data)["retry"]["recovered"] == 0
    assert retry_arm(data)["retry"]["retries"] == 2
    result.stdout.fnmatch_lines(
        ["*retried through the tool after: ?content? broken: invalid JSON*"]
    )


def test_first_time_pass_never_retries(recorded: pytest.Pytester) -> None:
    # No tool interactions in the cassette: a retry would find nothing to replay and error.
    compose_retry_cassette(recorded, "date", "cold", first=f"[{DATE_BODY[0]!s}]".replace("'", '"'))
    result, data = report(recorded, *SELECT)
    test = only_test(data)
    assert test["status"] == "passed", result.stdout.str()
    assert all(s["retry_of"] is None and s["route"] == "content" for s in test["samples"])
    assert retry_arm(data)["retry"]["parse_failures"] == 0


def test_declined_prose_is_not_retried(recorded: pytest.Pytester) -> None:
    # Only a reply that fails to parse is retried; prose is an answer, not a broken card.
    compose_retry_cassette(recorded, "date", "cold", first="Any day next week works.")
    _, data = report(recorded, *SELECT)
    assert [s["label"] for s in only_test(data)["samples"]] == ["prose", "prose"]
    assert retry_arm(data)["retry"]["parse_failures"] == 0
