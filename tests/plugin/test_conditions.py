"""The seeded and schema conditions replayed offline from their real recordings."""

from __future__ import annotations

import json

import pytest
import yaml
from cardprobe_testing import cassette, report

CLOSED_PORT = "http://127.0.0.1:9"


def project_header(result: pytest.RunResult) -> str:
    """pytest's ``collected ... items / ... deselected / ... selected`` line."""
    return next(line for line in result.outlines if line.startswith("collected"))


def test_seeded_and_schema_replay_on_prose_and_are_left_out_elsewhere(
    recorded: pytest.Pytester,
) -> None:
    result, data = report(
        recorded, "-k", "date and (seeded or schema)", "--cardprobe-server", CLOSED_PORT
    )
    assert result.ret == 0, result.stdout.str()
    ran = {(t["channel"], t["condition"]): t for t in data["tests"] if t["suite"]}
    assert set(ran) == {("prose", "seeded"), ("prose", "schema")}
    for test in ran.values():
        assert test["status"] in ("passed", "failed") and len(test["samples"]) == 2
    # The tool and retry channels cannot carry either condition: not tests at all, so neither
    # skipped nor deselected. (Failing cases are known failures of the shipped baseline,
    # hence xfailed.)
    result.assert_outcomes(
        passed=sum(t["status"] == "passed" for t in ran.values()),
        xfailed=sum(t["status"] == "failed" for t in ran.values()),
    )
    assert "skipped" not in result.stdout.str()
    # 25 cases x 8 arms (prose x 4 conditions, tool and retry x cold and history); -k keeps 2.
    collected = project_header(result)
    assert "200 items / 198 deselected / 2 selected" in collected, collected
    arms = {(a["channel"], a["condition"]) for a in data["arms"]}
    assert arms == {("prose", "seeded"), ("prose", "schema")}


def test_combinations_never_asked_are_not_collected_at_all(recorded: pytest.Pytester) -> None:
    # Nothing would be asked, so there is no item to deselect: the header counts only tests.
    result = recorded.runpytest("--collect-only", "-q", "cases/cards.yaml")
    ids = [line for line in result.outlines if "::" in line]
    assert len(ids) == 200 and "deselected" not in result.stdout.str(), result.stdout.str()
    arms = {line.rsplit("-", 2)[1] + "-" + line.rsplit("-", 1)[1].rstrip("]") for line in ids}
    assert {a for a in arms if a.endswith(("seeded", "schema"))} == {
        "prose-seeded",
        "prose-schema",
    }
    # Asking for only such a combination collects nothing, rather than deselecting it.
    only = recorded.runpytest(
        "cases/cards.yaml", "--cardprobe-channel", "tool", "--cardprobe-condition", "seeded"
    )
    assert only.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "deselected" not in only.stdout.str()


def test_recorded_requests_carry_the_seed_turn_and_the_schema(recorded: pytest.Pytester) -> None:
    seeded = yaml.safe_load(cassette(recorded, "date", "prose", "seeded").read_text())
    body = json.loads(seeded["interactions"][0]["request"]["body"])
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert json.loads(body["messages"][2]["content"])["type"] == "AdaptiveCard"
    schema = yaml.safe_load(cassette(recorded, "date", "prose", "schema").read_text())
    body = json.loads(schema["interactions"][0]["request"]["body"])
    assert body["format"]["required"] == ["type", "body"]


def test_editing_the_seed_turn_makes_seeded_tests_stale(recorded: pytest.Pytester) -> None:
    suite = recorded.path / "cases" / "cards.yaml"
    text = suite.read_text()
    suite.write_text(text.replace("Tram 28 climbing through Alfama", "Tram 28 in Alfama", 1))
    result, _ = report(recorded, "-k", "date and seeded", "-vv")  # -vv: each test's paragraph
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*stale cassette*date-prose-seeded.yaml*history changed*"])
