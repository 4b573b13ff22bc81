"""The ``cardprobe`` fixture replaying its cassette offline, and a changed question as stale.

The cassette is written here in vcrpy's format with the request the plugin's own client
builds (``ChatClient.payload``) and a reply body of the shape the real Ollama returns (the
live test records a real one); what is under test is the replay path.
"""

from __future__ import annotations

import json
import textwrap

import pytest
import yaml

from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.types import ChatRequest
from pytest_cardprobe.wire.client import ChatClient, ClientSettings

MODEL = "smollm2:135m"
SERVER = "http://127.0.0.1:9"  # nothing listens there: a request that left would fail
QUESTION = "Let me pick a date for the meeting."
TEST_FILE = """
import pytest

@pytest.mark.samples({samples})
def test_date(cardprobe):
    asked = cardprobe.ask([{{"role": "user", "content": {question!r}}}], accept=["Input.Date"])
    assert asked.passed, asked.verdict.label
    assert asked.route == "content"
"""


def write_cassette(pytester: pytest.Pytester, calls: int) -> None:
    request = ChatRequest(
        model=MODEL,
        messages=[{"role": "user", "content": QUESTION}],
        tools=[],
        options=Settings(models=[MODEL]).base_options(),
    )
    client = ChatClient(ClientSettings(base_url=SERVER))
    try:
        path, body = client.payload(request)
    finally:
        client.close()
    card = [{"type": "Input.Date", "id": "day", "label": "Day"}]
    reply = {
        "model": MODEL,
        "message": {"role": "assistant", "content": json.dumps(card)},
        "done": True,
        "done_reason": "stop",
    }
    interaction = {
        "request": {
            "body": json.dumps(body),
            "headers": {"content-type": ["application/json"]},
            "method": "POST",
            "uri": SERVER + path,
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json; charset=utf-8"]},
            "body": {"string": json.dumps(reply)},
        },
    }
    target = pytester.path / "cassettes" / "_tests"
    target.mkdir(parents=True)
    (target / "test_ask.py_test_date.yaml").write_text(
        yaml.safe_dump({"interactions": [interaction] * calls, "version": 1})
    )


def make_test(pytester: pytest.Pytester, samples: int, question: str = QUESTION) -> None:
    pytester.makeini(f"[pytest]\ncardprobe_models = {MODEL}\ncardprobe_servers = {SERVER}\n")
    source = TEST_FILE.format(samples=samples, question=question)
    pytester.makepyfile(test_ask=textwrap.dedent(source))


def test_fixture_replays_every_sample_without_a_server(pytester: pytest.Pytester) -> None:
    write_cassette(pytester, calls=2)
    make_test(pytester, samples=2)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_fixture_with_a_changed_question_is_stale_naming_the_field(
    pytester: pytest.Pytester,
) -> None:
    write_cassette(pytester, calls=2)
    make_test(pytester, samples=2, question="Let me pick a day.")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*stale cassette cassettes/_tests/test_ask.py_test_date.yaml:"
            " the request no longer matches the recording (body.messages[[]0].content differs);"
            " re-record with: pytest --live --model smollm2:135m test_ask.py::test_date*"
        ]
    )


def test_fixture_asking_more_often_than_recorded_is_stale(pytester: pytest.Pytester) -> None:
    write_cassette(pytester, calls=1)
    make_test(pytester, samples=2)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*stale cassette*holds 1 recorded call(s)*asked for more*"])


def test_a_card_ask_is_sent_as_the_test_wrote_it_whatever_the_adjust_hook_does(
    pytester: pytest.Pytester,
) -> None:
    """The adjust hook shapes a suite's requests and a call probe's; a card ask is the
    test's own request, so the hook is not called and the recording still matches."""
    write_cassette(pytester, calls=2)
    make_test(pytester, samples=2)
    pytester.makeconftest(
        """
        def pytest_cardprobe_adjust_request(request, probe, config):
            request.options["seed"] = 42
            raise AssertionError("the hook was called for a card ask")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
