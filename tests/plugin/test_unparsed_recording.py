"""A call the server could not parse is recorded as the model's turn and replays as judged.

The bytes come from a scripted loopback server shaped as Ollama 0.33.0 answers (a 500 with
the parser's message; a 200 stream ending in an error line): this tests the mechanism of
recording and replay. That a real Ollama sends them is tests/live/test_unparsed_live.py.
Before the change, both were infra: retried, unscored, and never recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scriptedserver import Scripted, chunk, ndjson, scripted_server

ONE = ("cases", "-k", "date and prose and cold", "--cardprobe-samples", "1")
LIVE = ("--live", "--cardprobe-no-warmup")
CASSETTE = Path("cassettes/cards/smollm2%3A135m/date-prose-cold.yaml")
MESSAGE = "failed to parse JSON: invalid character '\\\\' looking for beginning of object key"
LABEL = "unparsed: the server could not parse the tool call: failed to parse JSON: invalid"


def run(project: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = project.path / "report.json"
    if out.exists():
        out.unlink()
    result = project.runpytest("-p", "no:cacheprovider", *ONE, f"--cardprobe-json={out}", *args)
    return result, (json.loads(out.read_text()) if out.exists() else {})


def only_sample(report: dict[str, Any]) -> dict[str, Any]:
    (test,) = report["tests"]
    (sample,) = test["samples"]
    return dict(sample)


@pytest.mark.parametrize(
    ("reply", "stream"),
    [
        (Scripted(json.dumps({"error": MESSAGE}).encode(), status=500), False),
        (
            Scripted(
                ndjson(chunk('"'), {"error": MESSAGE}),
                headers={"Content-Type": "application/x-ndjson"},
            ),
            True,
        ),
    ],
    ids=["http-500", "error-line-in-stream"],
)
def test_a_parse_error_is_recorded_judged_malformed_and_replayed_so(
    project: pytest.Pytester, reply: Scripted, stream: bool
) -> None:
    project.makeini("[pytest]\ncardprobe_models = smollm2:135m\n")
    flags = ("--cardprobe-stream",) if stream else ()
    with scripted_server(reply) as server:
        result, live = run(project, *LIVE, *flags, "--cardprobe-server", server.url)
        asked = len(server.chats)
    said = only_sample(live)
    out = result.stdout.str()
    assert said["failure"] == "malformed" and said["route"] == "swallowed", (said, out[-2000:])
    assert said["label"].startswith(LABEL)
    assert asked == 1  # not retried as infra
    recorded = json.loads((project.path / CASSETTE).read_text())
    (interaction,) = recorded["interactions"]
    assert interaction["response"]["status"]["code"] == (200 if stream else 500)
    result, replayed = run(project, *flags)
    again = only_sample(replayed)
    assert again.pop("figures") == {} and said.pop("figures").keys() == {"wall_s"}
    assert again == said, result.stdout.str()[-2000:]
