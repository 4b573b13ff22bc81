"""Replaying the shipped cassettes: offline, re-judged, and every cassette problem named."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from cardprobe_testing import cassette, report
from faultserver import fault_server

from pytest_cardprobe.wire.client import ChatClient

CLOSED_PORT = "http://127.0.0.1:9"  # nothing listens there: a request that left would fail


def test_replay_needs_no_server_and_prints_the_scoreboard(recorded: pytest.Pytester) -> None:
    result, data = report(recorded, "--cardprobe-server", CLOSED_PORT)
    assert result.ret == 0, result.stdout.str()
    # Every test that is asked has a verdict; seeded and schema tests of the tool and retry
    # channels are left out at collection and leave no result.
    assert len(data["tests"]) == 25 * 8
    assert {t["status"] for t in data["tests"]} <= {"passed", "failed"}
    result.stdout.fnmatch_lines(
        ["*cardprobe scoreboard*", "gate*channel*condition*passed*adoption*", "gate: pass*"]
    )


def test_missing_cassette_is_an_error_with_the_record_command(recorded: pytest.Pytester) -> None:
    cassette(recorded, "date", "prose", "cold").unlink()
    result, data = report(recorded, "-k", "date and prose and cold")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # One line for the test, one block for the run with the command that records it.
    result.stdout.fnmatch_lines(
        [
            "1 test(s) could not replay*",
            "  1 not recorded — suite cards (cases/cards.yaml)",
            "  record exactly them: pytest -p no:cacheprovider cases -k 'date and prose and "
            "cold'*--cardprobe-record-mode once",
            "FAILED cases/cards.yaml::date[[]smollm2:135m-prose-cold[]] - not recorded*",
        ]
    )
    assert "= FAILURES =" not in result.stdout.str()
    assert data["tests"][0]["status"] == "error"
    assert data["tests"][0]["problem"] == "not recorded"
    assert data["tests"][0]["message"].startswith(
        "not recorded — run with --live to record it: pytest --live --model smollm2:135m "
    )
    # -vv shows each test's own paragraph, with the command that records it alone.
    verbose, _ = report(recorded, "-k", "date and prose and cold", "-vv")
    verbose.stdout.fnmatch_lines(
        ["*= FAILURES =*", "not recorded — run with --live to record it: pytest --live*date*"]
    )


@pytest.mark.parametrize(
    ("edit", "changed", "words"),
    [
        (
            ("prompts/tool.md", "When no card fits", "If no card fits"),
            "system prompt",
            'system prompt: line 47: "When no card fits, answer in plain prose…" -> '
            '"If no card fits, answer in plain prose a…"',
        ),
        (
            ("cards.yaml", "Show an Adaptive Card to the user.", "Show a card."),
            "tool declaration",
            "render_adaptive_card: description changed",
        ),
        (
            ("cards.yaml", "What should we sort out first?", "What first?"),
            "history",
            'history: turn 1: line 1: "…ing. What should we sort out first?" -> '
            '"…ing. What first?"',
        ),
        (
            ("cards.yaml", "num_predict: 512", "num_predict: 500"),
            "options",
            "options.num_predict changed from 512 to 500",
        ),
    ],
)
def test_changed_request_is_stale_naming_what_changed(
    recorded: pytest.Pytester, edit: tuple[str, str, str], changed: str, words: str
) -> None:
    name, old, new = edit
    path = recorded.path / "cases" / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    result, data = report(recorded, "-k", "date and tool and history")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (test,) = data["tests"]
    assert test["problem"] == "stale"
    assert test["changes"] == [words]
    assert test["message"].startswith(
        f"stale cassette cassettes/cards/smollm2%3A135m/date-tool-history.yaml: {changed} "
        "changed since recording; re-record with: pytest --live --model smollm2:135m"
    )
    result.stdout.fnmatch_lines([f"  {words} (1 test(s))", "FAILED *date* - stale: *"])


def test_adjust_request_hook_applies_and_shows_as_stale(recorded: pytest.Pytester) -> None:
    recorded.makeconftest(
        """
        def pytest_cardprobe_adjust_request(request, probe, config):
            request.options["seed"] = 42
        """
    )
    _, data = report(recorded, "-k", "date and prose and cold")
    assert data["tests"][0]["changes"] == ["options.seed added"]
    assert "options changed since recording" in data["tests"][0]["message"]


def test_asking_for_more_samples_than_recorded_is_stale(recorded: pytest.Pytester) -> None:
    result, _ = report(recorded, "-k", "date and prose and cold", "--cardprobe-samples", "3")
    result.stdout.fnmatch_lines(
        ["  it holds 2 recorded call(s) and the test asked for more (1 test(s))", "FAILED *date*"]
    )


def _status_not_a_number(text: str) -> str:
    """Every recorded response's status code becomes the word ``OK``."""
    data = yaml.safe_load(text)
    for interaction in data["interactions"]:
        interaction["response"]["status"]["code"] = "OK"
    return yaml.safe_dump(data, sort_keys=False)


def _first_body_without_string(text: str) -> str:
    """The first recorded response's body keeps its text under ``text``, not ``string``."""
    data = yaml.safe_load(text)
    body = data["interactions"][0]["response"]["body"]
    body["text"] = body.pop("string")
    return yaml.safe_dump(data, sort_keys=False)


# The structural damages edit the parsed cassette rather than its text, so they do not
# depend on how the recording laid the YAML out (block style, or JSON as YAML flow style).
@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2] + "\n  - {unclosed: [\n",
        lambda text: "just a string\n",
        lambda text: "interactions: 3\n",
        _status_not_a_number,
        _first_body_without_string,
    ],
    ids=["truncated", "not-a-mapping", "bad-interactions", "bad-status", "no-body"],
)
def test_corrupt_cassette_names_the_file(recorded: pytest.Pytester, damage: object) -> None:
    path = cassette(recorded, "date", "prose", "cold")
    text = path.read_text()
    damaged = damage(text)  # type: ignore[operator]
    assert damaged != text
    path.write_text(damaged)
    result, _ = report(recorded, "-k", "date and prose and cold")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*corrupt cassette cassettes/cards/smollm2%3A135m/date-prose-cold.yaml*"]
    )
    assert "Traceback" not in result.stdout.str()


def test_replay_rejudges_with_todays_suite(recorded: pytest.Pytester) -> None:
    """Changing what a case accepts changes verdicts with no model and no network."""
    _, before = report(recorded, "-k", "control")
    assert before["tests"]
    suite = recorded.path / "cases" / "cards.yaml"
    doc = yaml.safe_load(suite.read_text())
    control = next(c for c in doc["cases"] if c["accept"] == [])
    assert control["id"] == "control"
    text = suite.read_text()
    marker = "  - id: control\n"
    start = text.index(marker)
    accept_at = text.index("accept: []", start)
    suite.write_text(text[:accept_at] + "accept: [TextBlock]" + text[accept_at + 10 :])
    _, after = report(recorded, "-k", "control")
    labels_before = [s["label"] for t in before["tests"] for s in t["samples"]]
    labels_after = [s["label"] for t in after["tests"] for s in t["samples"]]
    assert labels_before != labels_after
    # A prose reply that satisfied the control is now a declined card case.
    for old, new in zip(labels_before, labels_after, strict=True):
        if old == "ok prose":
            assert new == "prose"


def test_infra_during_live_run_keeps_the_old_cassette(recorded: pytest.Pytester) -> None:
    path = cassette(recorded, "date", "prose", "cold")
    old = path.read_bytes()
    # A server that answers preflight and then fails every call (500): infra mid-run.
    with fault_server() as server:
        result, data = report(
            recorded, "--live", "--cardprobe-server", server.url, "-k", "date and prose and cold"
        )
    assert data["tests"][0]["status"] == "infra"
    assert path.read_bytes() == old
    assert "infra" in result.stdout.str()


def test_a_recorded_failed_attempt_replays_at_once(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shipped cassette holds a failed first attempt (a reply cut at ``done: false``) before
    the retry that succeeded: replay plays the failure and the retry one after the other and
    asks for no backoff (it is for a server), and the verdict is the one recorded."""
    path = cassette(recorded, "number", "prose", "schema")
    first = json.loads(
        yaml.safe_load(path.read_text())["interactions"][0]["response"]["body"]["string"]
    )
    assert first["done"] is False  # the premise: the recording holds the failed attempt
    sleeps: list[float] = []
    plays: list[str] = []
    init = ChatClient.__init__

    def observed(self: ChatClient, settings: Any, sleep: Any = None, player: Any = None) -> None:
        def counted(method: str, path: str, content: str) -> Any:
            plays.append(path)
            return player(method, path, content)

        init(self, settings, sleep=sleeps.append, player=counted if player else None)

    monkeypatch.setattr(ChatClient, "__init__", observed)
    result, data = report(recorded, "-k", "number and prose and schema")
    result.assert_outcomes(xfailed=1)  # failed, as the baseline knows it
    assert sleeps == []
    assert plays == ["/api/chat"] * 3  # the cut attempt, its retry, the second sample
    (test,) = data["tests"]
    assert test["status"] == "failed"
    truncated = (
        "truncated at the token limit (length): broken: invalid JSON Unterminated string "
        "starting at: line 58 column 16"
    )
    assert [(s["label"], s["route"]) for s in test["samples"]] == [(truncated, "content")] * 2


def test_json_and_markdown_reports_are_byte_identical_across_replays(
    recorded: pytest.Pytester,
) -> None:
    outputs = []
    for _ in range(2):
        recorded.runpytest("cases", "--cardprobe-json=r.json", "--cardprobe-md=r.md")
        outputs.append(
            ((recorded.path / "r.json").read_bytes(), (recorded.path / "r.md").read_bytes())
        )
    assert outputs[0] == outputs[1]


def test_junitxml_carries_arm_routes_and_labels(recorded: pytest.Pytester) -> None:
    recorded.runpytest("cases", "-k", "date and tool and cold", "--junitxml=j.xml")
    xml = (recorded.path / "j.xml").read_text()
    assert 'name="cardprobe.arm" value="cards/smollm2:135m/tool/cold"' in xml
    assert 'name="cardprobe.routes"' in xml
    assert 'name="cardprobe.labels"' in xml


@pytest.mark.parametrize("mode", [["-n", "2"], ["-p", "no:xdist"]])
def test_xdist_gives_the_same_scoreboard_and_gate(
    recorded: pytest.Pytester, mode: list[str]
) -> None:
    base, base_data = report(recorded, "-n", "0")
    other, other_data = report(recorded, *mode)
    assert other.ret == base.ret == 0
    assert other_data["arms"] == base_data["arms"]
    assert other_data["gate"] == base_data["gate"]
    assert sorted(other_data["tests"], key=lambda t: t["nodeid"]) == base_data["tests"]

    def board(result: pytest.RunResult) -> list[str]:
        lines = result.stdout.lines
        start = next(i for i, line in enumerate(lines) if "cardprobe scoreboard" in line)
        end = next(i for i, line in enumerate(lines) if line.startswith("gate:"))
        return lines[start : end + 1]

    assert board(other) == board(base)


def test_judge_hook_provides_a_judge_by_name(recorded: pytest.Pytester) -> None:
    recorded.makeconftest(
        """
        from pytest_cardprobe.types import Verdict

        def pytest_cardprobe_get_judge(name, config):
            if name == "everything-passes":
                return lambda text, case, suite: Verdict(True, "ok anything", None)
        """
    )
    suite = recorded.path / "cases" / "cards.yaml"
    suite.write_text(suite.read_text().replace("judge: card", "judge: everything-passes"))
    result, data = report(recorded, "-k", "date")
    assert {s["label"] for t in data["tests"] for s in t["samples"]} == {"ok anything"}
    assert result.ret == 0


def test_unknown_judge_is_a_usage_error(recorded: pytest.Pytester) -> None:
    suite = recorded.path / "cases" / "cards.yaml"
    suite.write_text(suite.read_text().replace("judge: card", "judge: nobody-provides-this"))
    result = recorded.runpytest("cases")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cards.yaml:*judge*nobody-provides-this*"])
