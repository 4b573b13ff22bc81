"""The retry channel and the schema condition against the real Ollama, then replayed offline.

A two-test slice (date on the retry channel, cold; date on the prose channel under the schema
condition), one sample each, with a short ``num_predict`` so it takes seconds per call.
Assertions are on verdicts, routes, counts and the recorded requests, never on model text.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from test_plugin_live import CLOSED_PORT, make_project, measured, run

pytestmark = pytest.mark.live

SLICE = ("-k", "date and (retry and cold or prose and schema)", "--samples", "1")


def samples(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each test's samples; the wall-clock time of a live call is left out (replay has none)."""
    return {
        t["nodeid"].split("::")[1]: [
            {**s, "figures": {k: v for k, v in s["figures"].items() if k != "wall_s"}}
            for s in t["samples"]
        ]
        for t in report["tests"]
    }


def test_retry_and_schema_record_then_replay_with_equal_verdicts(
    pytester: pytest.Pytester, real_ollama: Any
) -> None:
    make_project(pytester, real_ollama.base_url, real_ollama.model)
    # The first recording writes the baseline, so the replay below is judged against it.
    live, live_report = run(pytester, "--live", "--update-baseline", *SLICE)
    assert live.ret == 0, live.stdout.str()
    model = real_ollama.model
    got = samples(live_report)
    assert set(got) == {f"date[{model}-retry-cold]", f"date[{model}-prose-schema]"}
    folder = next((pytester.path / "cassettes" / "cards").iterdir())

    # Retry: one prose call, plus one tool call exactly when the prose reply did not parse.
    (first,) = got[f"date[{model}-retry-cold]"]
    retry_file = yaml.safe_load((folder / "date-retry-cold.yaml").read_text())
    bodies = [json.loads(i["request"]["body"]) for i in retry_file["interactions"]]
    assert "tools" not in bodies[0]
    if first["retry_of"] is None:
        assert first["failure"] != "malformed" and len(bodies) == 1
    else:
        assert first["retry_of"]["failure"] == "malformed"
        assert len(bodies) == 2 and bodies[1]["tools"][0]["function"]["name"]
        assert bodies[1]["messages"][0]["content"] != bodies[0]["messages"][0]["content"]
    (retry_arm,) = [a for a in live_report["arms"] if a["channel"] == "retry"]
    assert retry_arm["retry"]["parse_failures"] == int(first["retry_of"] is not None)

    # Schema: the prose request carried the card schema as Ollama's `format`.
    schema_file = yaml.safe_load((folder / "date-prose-schema.yaml").read_text())
    (request,) = [json.loads(i["request"]["body"]) for i in schema_file["interactions"]]
    assert request["format"]["properties"]["type"]["enum"] == ["AdaptiveCard"]
    assert "format" not in request["options"]

    # The tool arm of the schema condition is never asked: it is deselected, not run.
    left_out, _ = run(pytester, "--live", "-k", "date and tool and schema")
    left_out.stdout.fnmatch_lines(["*/ 0 selected*"])
    assert left_out.ret == pytest.ExitCode.NO_TESTS_COLLECTED

    replay, replay_report = run(pytester, "--server", CLOSED_PORT, *SLICE)
    assert replay.ret == 0, replay.stdout.str()
    assert samples(replay_report) == got
    assert measured(replay_report["arms"]) == measured(live_report["arms"])
