"""A test's request is written once when no plugin edits it; a plugin's hook still sees each.

Replay matches a request by its body text, so writing that text is part of every replayed
sample. Without an implementation of ``pytest_cardprobe_adjust_request`` a request is a
function of the probe alone, and each test writes it once for all its samples (the tool
loop's first turn and the retry channel's tool request included). With one, every sample and
turn goes through the hook as before and is written anew. Whether a plugin implements the
hook is asked per request, so a hook registered during the session is not missed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from cardprobe_testing import compose_retry_cassette, report

from pytest_cardprobe.wire import client

BROKEN = '[{"type": "Input.Date", "id": "day",}]'  # trailing comma: does not parse
DATE_BODY = [{"type": "Input.Date", "id": "day", "label": "Day"}]

# Counts the hook's calls in a file beside the project, so a subprocess could count too.
COUNTING_HOOK = """
from pathlib import Path

def pytest_cardprobe_adjust_request(request, probe, config):
    with open(Path(str(config.rootpath)) / "hook-calls.txt", "a") as calls:
        calls.write(probe.case.id + "\\n")
"""


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every chat request body the client writes in this (in-process) run."""
    written: list[str] = []
    real = client.json_body

    def counted(body: Any) -> str:
        text = real(body)
        written.append(text)
        return text

    monkeypatch.setattr(client, "json_body", counted)
    return written


def hook_calls(project: pytest.Pytester) -> list[str]:
    path = project.path / "hook-calls.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_a_tool_loop_writes_its_first_turn_once_for_both_samples(
    tools_project: pytest.Pytester, writes: list[str]
) -> None:
    result, data = report(tools_project, "-k", "readme and cold")
    (test,) = data["tests"]
    assert len(test["samples"]) == 2, result.stdout.str()
    assert len(writes) == 1  # one body, matched by both samples


def test_a_hook_sees_each_sample_of_a_tool_loop_and_each_is_written(
    tools_project: pytest.Pytester, writes: list[str]
) -> None:
    tools_project.makeconftest(COUNTING_HOOK)
    result, data = report(tools_project, "-k", "readme and cold")
    (test,) = data["tests"]
    # The hook edits nothing here, so the test replays as it does without it.
    assert test.get("problem") is None, result.stdout.str()
    assert len(test["samples"]) == 2
    # Once for the request the cassette's fingerprint is taken of, then a turn per sample.
    assert hook_calls(tools_project) == ["readme"] * 3
    assert len(writes) == 2  # each sample's turn, written anew


def test_the_retry_channel_writes_its_tool_request_once(
    recorded: pytest.Pytester, writes: list[str]
) -> None:
    compose_retry_cassette(recorded, "date", "cold", first=BROKEN, retry_body=DATE_BODY)
    result, data = report(recorded, "-k", "date and retry and cold")
    (test,) = data["tests"]
    assert test["status"] == "passed", result.stdout.str()
    assert [s["route"] for s in test["samples"]] == ["tool_calls", "tool_calls"]  # two retries
    assert len(writes) == 2  # the prose request and the tool request, once each


def test_with_a_hook_the_retry_asks_it_again_for_each_retry(
    recorded: pytest.Pytester, writes: list[str]
) -> None:
    recorded.makeconftest(COUNTING_HOOK)
    compose_retry_cassette(recorded, "date", "cold", first=BROKEN, retry_body=DATE_BODY)
    result, data = report(recorded, "-k", "date and retry and cold")
    (test,) = data["tests"]
    assert test["status"] == "passed", result.stdout.str()
    # Once for the prose request (asked once per test, as before), once per tool retry.
    assert hook_calls(recorded) == ["date"] * 3
    assert len(writes) == 3


def test_a_hook_registered_during_the_session_edits_the_next_tests(
    tools_project: pytest.Pytester,
) -> None:
    """The runtime exists once the first test has run; a plugin registered after that still
    has its hook called: the second test's request carries its edit and shows as stale."""
    tools_project.makeconftest(
        """
        import pytest

        class Seeded:
            def pytest_cardprobe_adjust_request(self, request, probe, config):
                request.options["seed"] = 42

        @pytest.hookimpl(trylast=True)
        def pytest_runtest_teardown(item, nextitem):
            if nextitem is not None and not item.config.pluginmanager.has_plugin("seeded"):
                item.config.pluginmanager.register(Seeded(), "seeded")
        """
    )
    _, data = report(tools_project, "-k", "(readme or pyproject_deps) and cold")
    tests = {t["case"]: t for t in data["tests"]}
    assert tests["readme"].get("problem") is None  # ran first, before the plugin came
    assert tests["pyproject_deps"]["problem"] == "stale"
    assert tests["pyproject_deps"]["changes"] == ["options.seed added"]


def test_a_hook_registered_between_two_retries_of_one_test_edits_the_second(
    recorded: pytest.Pytester,
) -> None:
    """The retry's tool request is kept only while no plugin implements the hook: a plugin
    registered during the test (here by a judge, at the first sample's second judgement)
    edits the next retry, which then shows as stale (found by review)."""
    recorded.makeconftest(
        """
        from pytest_cardprobe.judge.registry import BUILTIN_JUDGES

        class Seeded:
            def pytest_cardprobe_adjust_request(self, request, probe, config):
                request.options["seed"] = 42

        def pytest_cardprobe_get_judge(name, config):
            calls = []

            def judge(text, case, suite):
                calls.append(text)
                if len(calls) == 2 and not config.pluginmanager.has_plugin("seeded"):
                    config.pluginmanager.register(Seeded(), "seeded")
                return BUILTIN_JUDGES["card"](text, case, suite)

            return judge if name == "card" else None
        """
    )
    compose_retry_cassette(recorded, "date", "cold", first=BROKEN, retry_body=DATE_BODY)
    _, data = report(recorded, "-k", "date and retry and cold")
    (test,) = data["tests"]
    assert test["problem"] == "stale"
    # Named against the test's first request (the prose one), so the tool's own differences
    # come first; the seed is the hook's.
    assert test["changes"][-1] == "options.seed added"


# Edits the request in place, as the hook's documentation invites, and notes what it saw
# before editing: the tool's description, the question, a suite option's list.
APPENDING_HOOK = """
import json
from pathlib import Path

def pytest_cardprobe_adjust_request(request, probe, config):
    functions = [tool.get("function", tool) for tool in request.tools]
    seen = [[fn["description"] for fn in functions], request.messages, request.options]
    with open(Path(str(config.rootpath)) / "seen.txt", "a") as out:
        out.write(json.dumps(seen) + "\\n")
    for fn in functions:
        fn["description"] += " (edited)"
    for message in request.messages:
        message["content"] = (message.get("content") or "") + " (edited)"
    request.options.setdefault("stop", []).append("(edited)")
"""


@pytest.mark.parametrize(
    ("fixture", "selected"),
    [
        ("tools_project", "readme"),  # a call suite: each test and sample (turns: test_adjust_hook)
        ("recorded", "tool and not retry"),  # a card suite's tool channel: one tool, many tests
    ],
)
def test_an_edit_in_place_by_the_hook_never_reaches_the_next_request(
    fixture: str, selected: str, request: pytest.FixtureRequest
) -> None:
    """The hook edits its request in place; what it edits is that request's own, so the
    next turn, sample or test starts from the suite again, not from the edited text."""
    project: pytest.Pytester = request.getfixturevalue(fixture)
    project.makeconftest(APPENDING_HOOK)
    result, _ = report(project, "-k", selected)
    seen = [json.loads(line) for line in (project.path / "seen.txt").read_text().splitlines()]
    assert len(seen) >= 3, result.stdout.str()
    assert [s for s in seen if "(edited)" in json.dumps(s)] == []
    descriptions = [d for s in seen for d in s[0]]
    assert len(descriptions) >= 3  # the hook was given the tools each time
