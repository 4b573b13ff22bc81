"""A call probe written as a plain Python test, recorded from the real Ollama, then replayed.

The test asks with ``condition="required"``: the request carries what an application sends
to force a call, which on Ollama's own API is a ``format`` JSON Schema of the declared calls
(the ``required`` condition of call suites; see tests/live/test_forced_live.py), so
SmolLM2-135M makes a real call the call judge reads. Nothing is hand-written: the cassette
holds the server's replies. Live, then offline against a closed port: the same outcome and
the same samples (label, route, failure class, calls). Assertions are on routes, calls and
labels, never on generated text.
"""

from __future__ import annotations

import json
import shutil
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
CLOSED_PORT = "http://127.0.0.1:9"

PROBE = """
import pytest


@pytest.mark.samples(2, at_least=1)
def test_reads_the_readme(cardprobe):
    asked = cardprobe.ask(
        "Show me what's in README.md.",
        system="You are a coding assistant with tools to read the user's project.",
        tools="tools/tools.json",
        options={"num_predict": 100},
        condition="required",
        expect={"call": "read_file", "args": {"path": {"regex": r"(\\./)?README\\.md"}}},
    )
    assert asked.passed, asked.label
"""


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / f"report-{time.monotonic_ns()}.json"
    result = pytester.runpytest("-p", "no:cacheprovider", *args, f"--cardprobe-json={out}")
    return result, json.loads(out.read_text()) if out.exists() else {}


def samples(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    (test,) = report["tests"]
    return [
        (s["passed"], s["label"], s["route"], s["failure"], s["calls"]) for s in test["samples"]
    ]


def test_a_python_call_probe_records_live_and_replays_offline_with_the_same_verdict(
    pytester: pytest.Pytester, real_ollama: Any
) -> None:
    shutil.copytree(ROOT / "cases" / "tools", pytester.path / "tools")
    pytester.makeini(
        f"[pytest]\ncardprobe_models = {real_ollama.model}\n"
        f"cardprobe_servers = {real_ollama.base_url}\n"
    )
    pytester.makepyfile(test_probe=textwrap.dedent(PROBE))

    live, live_report = run(pytester, "--live")
    # A failed sample rule fails the test (exit 1); anything else is a crash.
    assert live.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), live.stdout.str()
    recorded = samples(live_report)
    assert len(recorded) == 2, live.stdout.str()
    for sample in recorded:
        # A real call (written as JSON text by the forcing format and recovered from it),
        # judged by the call judge: never a card label, never infra.
        assert sample[2] == "recovered" and sample[4] and sample[4][0], sample
        assert sample[3] in (None, "wrong_arguments", "wrong_tool", "bad_arguments"), sample

    cassette = pytester.path / "cassettes" / "_tests" / "test_probe.py_test_reads_the_readme.yaml"
    interactions = yaml.safe_load(cassette.read_text())["interactions"]
    assert len(interactions) == 2
    body = json.loads(interactions[0]["request"]["body"])
    assert len(body["tools"]) == 6 and "tool_choice" not in body
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "anyOf" in body["format"]  # the forced condition's format of the declared calls

    replay, replay_report = run(pytester, "--cardprobe-server", CLOSED_PORT)
    assert replay.ret == live.ret, replay.stdout.str()
    assert samples(replay_report) == recorded
