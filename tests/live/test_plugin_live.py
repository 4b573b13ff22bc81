"""The plugin against the real servers started by scripts/real-servers (docs/design.md §8).

Each test runs pytest (pytester) on a copy of the shipped suite with a short ``num_predict``
so that a slice takes seconds per call on a CPU. Assertions are on verdict labels, routes,
counts and files — never on generated text.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
LABEL = re.compile(
    r"^(ok .+|ok prose|prose|no-input|unwanted-card|duplicate-key|prose-with-card|text-call"
    r"|invented .+"
    r"|wrong-shape got .+ want .+|broken: .+|infra: .+|truncated at the token limit .+"
    r"|swallowed: .+)$"
)
CLOSED_PORT = "http://127.0.0.1:9"  # discard port: nothing listens, so any request would fail
# One input case and the prose control on the suite's original four arms (prose and tool,
# cold and history): 8 tests, one request per sample.
SLICE = ("-k", "(date or control) and not retry", "--condition", "cold", "--condition", "history")


def make_project(pytester: pytest.Pytester, server: str, model: str, api: str = "ollama") -> None:
    shutil.copytree(ROOT / "cases", pytester.path / "cases")
    suite = pytester.path / "cases" / "cards.yaml"
    suite.write_text(suite.read_text().replace("num_predict: 512", "num_predict: 96"))
    pytester.makeini(
        f"[pytest]\ncardprobe_models = {model}\ncardprobe_servers = {server}\n"
        f"cardprobe_api = {api}\n"
    )


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / f"report-{time.monotonic_ns()}.json"
    result = pytester.runpytest("-p", "no:cacheprovider", "cases", *args, f"--cardprobe-json={out}")
    return result, json.loads(out.read_text()) if out.exists() else {}


def verdicts(report: dict[str, Any]) -> dict[str, list[tuple[str, str | None]]]:
    return {t["nodeid"]: [(s["label"], s["route"]) for s in t["samples"]] for t in report["tests"]}


def check_counts(report: dict[str, Any], tests: int, samples: int) -> None:
    assert len(report["tests"]) == tests
    for test in report["tests"]:
        assert test["status"] in ("passed", "failed"), test
        assert len(test["samples"]) == samples
        for sample in test["samples"]:
            assert LABEL.match(sample["label"]), sample["label"]
            assert sample["route"] in ("tool_calls", "recovered", "content", "swallowed")
            assert sample["passed"] == (sample["failure"] is None)
    for arm in report["arms"]:
        ran = [
            t
            for t in report["tests"]
            if [t["suite"], t["model"], t["channel"], t["condition"]]
            == [arm["suite"], arm["model"], arm["channel"], arm["condition"]]
        ]
        assert arm["scored"] == len(ran)
        assert arm["passed"] == sum(t["status"] == "passed" for t in ran)
        assert arm["calls"] == len(ran) * samples == sum(arm["routes"].values())
        failed = [s for t in ran for s in t["samples"] if not s["passed"]]
        assert sum(arm["failures"].values()) == len(failed)


def measured(arms: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The arms as this run measured them: without what depends on the baseline found.

    A recording run with no baseline yet has no baseline coverage (``cases_in_baseline`` is
    None); its replay, after ``--update-baseline`` wrote one, has it. Everything else about an
    arm must be the same on replay.
    """
    return [{k: v for k, v in arm.items() if k != "cases_in_baseline"} for arm in arms]


def test_slice_records_then_replays_offline_with_same_verdicts(
    pytester: pytest.Pytester, each_ollama: Any
) -> None:
    make_project(pytester, each_ollama.base_url, each_ollama.model)
    # Recorded as the baseline: a first run with no baseline shows the model's failures as
    # FAILED, and only --update-baseline forgives them (it records them).
    live, live_report = run(pytester, "--live", *SLICE, "--update-baseline")
    assert live.ret == 0, live.stdout.str()
    check_counts(live_report, tests=8, samples=2)
    live.stdout.fnmatch_lines(["*cardprobe scoreboard*", "*cards*smollm2*tool*cold*"])
    cassettes = sorted((pytester.path / "cassettes" / "cards").rglob("*.yaml"))
    assert len(cassettes) == 8
    for path in cassettes:
        assert len(yaml.safe_load(path.read_text())["interactions"]) == 2

    # Replay with the server pointed at a closed port: nothing may leave the machine.
    replay, replay_report = run(pytester, "--server", CLOSED_PORT, *SLICE)
    assert replay.ret == 0, replay.stdout.str()
    assert verdicts(replay_report) == verdicts(live_report)
    assert measured(replay_report["arms"]) == measured(live_report["arms"])
    assert all(a["cases_in_baseline"] == a["cases_run"] for a in replay_report["arms"])


def test_streamed_and_plain_runs_give_the_same_verdicts(
    pytester: pytest.Pytester, each_ollama: Any
) -> None:
    make_project(pytester, each_ollama.base_url, each_ollama.model)
    _, plain = run(pytester, "--live", *SLICE, "--samples", "1", "--cassette-dir", "plain")
    _, streamed = run(pytester, "--live", "--stream", *SLICE, "--samples", "1")
    check_counts(streamed, tests=8, samples=1)
    assert verdicts(streamed) == verdicts(plain)
    # The streamed recording (an NDJSON body stored whole) replays to the same verdicts.
    _, replayed = run(pytester, "--stream", *SLICE, "--samples", "1")
    assert verdicts(replayed) == verdicts(streamed)
    body = next((pytester.path / "cassettes").rglob("date-prose-cold.yaml")).read_text()
    assert '\\"done\\":false' in body.replace(" ", "") or '"done":false' in body.replace(" ", "")


def test_unknown_model_is_one_usage_error_before_any_test(
    pytester: pytest.Pytester, each_ollama: Any
) -> None:
    make_project(pytester, each_ollama.base_url, "no-such-model:0b")
    started = time.monotonic()
    result, report = run(pytester, "--live", "-k", "date or time or toggle", "--channel", "prose")
    elapsed = time.monotonic() - started
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert err.count("no-such-model:0b") == 2, err  # named once, with the command that fetches it
    assert "fetch it with: ollama pull no-such-model:0b" in err
    assert "Traceback" not in err
    assert report.get("tests", []) == []  # no test ran
    assert not (pytester.path / "cassettes").exists()
    assert elapsed < 60


@pytest.mark.parametrize("target", ["llama-server", "ollama-v1"])
def test_a_server_url_without_ollamas_routes_is_said_so_not_a_missing_model(
    pytester: pytest.Pytester, target: str, real_ollama: Any, real_llama_server: Any
) -> None:
    """A model the server has, asked over the wrong route: llama-server asked as an Ollama,
    an Ollama's URL with ``/v1`` pasted in. Both answer 404 for the route itself; the
    preflight says so and points at the URL and the API, not at ``ollama pull``."""
    if target == "llama-server":
        server, model = real_llama_server.base_url, real_llama_server.model
    else:
        server, model = real_ollama.base_url.rstrip("/") + "/v1", real_ollama.model
    make_project(pytester, server, model)
    result, report = run(pytester, "--live", "-k", "date and cold", "--channel", "prose")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "ollama pull" not in err and "not found on" not in err, err
    assert "HTTP 404 from " + server + "/api/show" in err, err
    assert "no such route" in err and "--cardprobe-api" in err, err
    assert "Traceback" not in err
    assert report.get("tests", []) == []
    assert not (pytester.path / "cassettes").exists()


def test_bearer_token_is_sent_but_never_recorded(
    pytester: pytest.Pytester, real_ollama: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "cardprobe-test-secret-7f3a"
    monkeypatch.setenv("CARDPROBE_API_KEY", token)
    make_project(pytester, real_ollama.base_url, real_ollama.model)
    result, _ = run(
        pytester,
        "--live",
        "-k",
        "date",
        "--channel",
        "prose",
        "--condition",
        "cold",
        "--samples",
        "1",
        "--update-baseline",
    )
    assert result.ret == 0, result.stdout.str()
    (cassette,) = (pytester.path / "cassettes").rglob("*.yaml")
    text = cassette.read_text()
    assert token not in text
    assert "authorization" not in text.lower()


def test_tool_arms_of_a_model_without_tools_are_unsupported(
    pytester: pytest.Pytester, real_ollama: Any
) -> None:
    name = "smollm2-notools:135m"
    created = httpx.post(
        f"{real_ollama.base_url}/api/create",
        json={
            "model": name,
            "from": real_ollama.model,
            "template": "{{ if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}"
            "<|im_start|>user\n{{ .Prompt }}<|im_end|>\n<|im_start|>assistant\n",
            "stream": False,
        },
        timeout=120,
    )
    assert created.status_code == 200, created.text
    make_project(pytester, real_ollama.base_url, name)
    result, report = run(pytester, "--live", *SLICE, "--channel", "tool", "--samples", "1")
    assert result.ret == 0, result.stdout.str()
    assert {t["status"] for t in report["tests"]} == {"unsupported"}
    result.stdout.fnmatch_lines(["*4 skipped*"])
    assert all(a["unsupported"] == 2 for a in report["arms"])
    # The verdict is recorded, so replay says the same without a server.
    _, replay_report = run(pytester, "--server", CLOSED_PORT, *SLICE, "--channel", "tool")
    assert {t["status"] for t in replay_report["tests"]} == {"unsupported"}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "sse"])
@pytest.mark.parametrize("target", ["llama-server", "ollama-v1"])
def test_openai_api_records_and_replays(
    pytester: pytest.Pytester, request: pytest.FixtureRequest, target: str, stream: bool
) -> None:
    if target == "llama-server":
        server: Any = request.getfixturevalue("real_llama_server")
    else:
        server = request.getfixturevalue("real_ollama")
    make_project(pytester, server.base_url, server.model, api="openai")
    mode = ["--stream"] if stream else []
    live, live_report = run(
        pytester, "--live", *mode, *SLICE, "--samples", "1", "--update-baseline"
    )
    assert live.ret == 0, live.stdout.str()
    check_counts(live_report, tests=8, samples=1)
    body = next((pytester.path / "cassettes").rglob("date-prose-cold.yaml")).read_text()
    assert ("data: " in body) == stream  # an SSE body is stored whole, as the server sent it
    replay, replay_report = run(pytester, "--server", CLOSED_PORT, *mode, *SLICE, "--samples", "1")
    assert replay.ret == 0, replay.stdout.str()
    assert verdicts(replay_report) == verdicts(live_report)


def test_fixture_asks_under_samples_marker_live_then_replay(
    pytester: pytest.Pytester, real_ollama: Any
) -> None:
    pytester.makeini(
        f"[pytest]\ncardprobe_models = {real_ollama.model}\n"
        f"cardprobe_servers = {real_ollama.base_url}\n"
    )
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.samples(2)
        def test_ask(cardprobe):
            asked = cardprobe.ask(
                [{"role": "user", "content": "Show a date picker card."}],
                accept=["Input.Date"],
                options={"num_predict": 48},
            )
            assert asked.route == "content"
            assert asked.record.label
            assert len(cardprobe.samples) == cardprobe.run + 1
        """
    )
    assert pytester.runpytest("--live").ret == 0
    (cassette,) = (pytester.path / "cassettes" / "_tests").rglob("*.yaml")
    assert len(yaml.safe_load(cassette.read_text())["interactions"]) == 2
    assert pytester.runpytest("--server", "http://127.0.0.1:9").ret == 0


def test_killed_live_run_leaves_old_or_new_cassette(
    pytester: pytest.Pytester, real_ollama: Any
) -> None:
    make_project(pytester, real_ollama.base_url, real_ollama.model)
    args = ["-k", "date", "--channel", "prose", "--condition", "cold"]
    first, _ = run(pytester, "--live", *args, "--samples", "1", "--update-baseline")
    assert first.ret == 0, first.stdout.str()
    (cassette,) = (pytester.path / "cassettes").rglob("*.yaml")
    old = cassette.read_text()
    outcomes = []
    for sig, delay in ((signal.SIGKILL, 1.0), (signal.SIGINT, 1.0), (signal.SIGKILL, 3.0)):
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "cases",
                "--live",
                *args,
                "--samples",
                "3",
            ],
            cwd=pytester.path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        time.sleep(delay + 2.0)  # interpreter start-up, then into the first calls
        proc.send_signal(sig)
        proc.wait(timeout=60)
        text = cassette.read_text()
        data = yaml.safe_load(text)  # never a partial file
        if text == old:
            outcomes.append("old")
        else:
            assert len(data["interactions"]) == 3  # a complete new recording
            outcomes.append("new")
            old = text
    assert "old" in outcomes
    leftovers = [p for p in cassette.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_prompt_change_workflow_stale_rerecord_gate_accept(
    pytester: pytest.Pytester, real_ollama: Any
) -> None:
    """The guide's workflow for a prompt edit (docs/guide/gating.md), every step against the
    real Ollama."""
    make_project(pytester, real_ollama.base_url, real_ollama.model)
    recorded, _ = run(pytester, "--live", *SLICE, "--update-baseline")
    assert recorded.ret == 0, recorded.stdout.str()
    assert (pytester.path / "cardprobe-baseline.json").exists()

    prompt = pytester.path / "cases" / "prompts" / "tool.md"
    prompt.write_text(prompt.read_text() + "\nKeep every card as small as it can be.\n")
    stale, stale_report = run(pytester, "--server", CLOSED_PORT, *SLICE, "-vv")  # paragraphs
    assert stale.ret == pytest.ExitCode.TESTS_FAILED
    tool_tests = [t for t in stale_report["tests"] if t["channel"] == "tool"]
    assert len(tool_tests) == 4 and {t["status"] for t in tool_tests} == {"error"}
    stale.stdout.fnmatch_lines(["*stale cassette*system prompt changed since recording*"])

    rerecorded, _ = run(pytester, "--live", *SLICE, "--channel", "tool")
    gated, gated_report = run(pytester, "--server", CLOSED_PORT, *SLICE)
    decision = gated_report["gate"]["decision"]
    assert decision in ("pass", "fail")  # what the model did with the new prompt decides
    assert rerecorded.ret == gated.ret == (0 if decision == "pass" else 1)
    gated.stdout.fnmatch_lines([f"gate: {decision}*"])

    # An update with regressions needs its reason (whatever the model did, it is given one).
    why = "the new prompt's behaviour, as the test accepts it"
    accepted, _ = run(
        pytester, "--server", CLOSED_PORT, *SLICE, "--update-baseline",
        "--cardprobe-accept-reason", why,
    )  # fmt: skip
    assert accepted.ret == 0, accepted.stdout.str()
    after, after_report = run(pytester, "--server", CLOSED_PORT, *SLICE)
    assert after.ret == 0, after.stdout.str()
    assert after_report["gate"]["decision"] == "pass"
    assert all(a["passed_delta"] == 0 for a in after_report["gate"]["arms"].values())


def test_fixture_asking_two_models_records_one_cassette_in_order(
    pytester: pytest.Pytester, real_ollama: Any
) -> None:
    other = "cardprobe-copy:135m"  # a second real model: a copy of the first on the same server
    copied = httpx.post(
        f"{real_ollama.base_url}/api/copy",
        json={"source": real_ollama.model, "destination": other},
        timeout=60,
    )
    assert copied.status_code == 200, copied.text
    pytester.makeini(
        f"[pytest]\ncardprobe_models = {real_ollama.model}\n"
        f"cardprobe_servers = {real_ollama.base_url}\n"
    )
    pytester.makepyfile(
        f"""
        def test_two_models(cardprobe):
            for model in ({real_ollama.model!r}, {other!r}, {real_ollama.model!r}):
                asked = cardprobe.ask(
                    [{{"role": "user", "content": "Show a date picker card."}}],
                    accept=["Input.Date"],
                    model=model,
                    options={{"num_predict": 32}},
                )
                assert asked.record.label
        """
    )
    assert pytester.runpytest("--live").ret == 0
    (cassette,) = (pytester.path / "cassettes" / "_tests").rglob("*.yaml")
    models = [
        json.loads(i["request"]["body"])["model"]
        for i in yaml.safe_load(cassette.read_text())["interactions"]
    ]
    assert models == [real_ollama.model, other, real_ollama.model]
    assert pytester.runpytest("--server", CLOSED_PORT).ret == 0
