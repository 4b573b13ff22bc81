"""Live runs as people run them (issue 15), against real Ollama servers.

Preflight, the circuit breaker, record modes, thinking, model identity and two servers.
Each test is a short slice (``num_predict`` 96, one sample); assertions are on statuses,
counts, files and messages, never on generated text.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from private_ollama import MODEL, private_ollama
from test_plugin_live import CLOSED_PORT, make_project, run

pytestmark = pytest.mark.live

ONE = ("--samples", "1", "--no-warmup")
# The suite's original four arms (prose and tool, cold and history): the retry channel may
# send two requests per sample, which would blur the request counts below.
FOUR = ("--channel", "prose", "--channel", "tool", "--condition", "cold", "--condition", "history")


def cassette(pytester: pytest.Pytester, model: str, name: str) -> Path:
    return pytester.path / "cassettes" / "cards" / model.replace(":", "%3A") / f"{name}.yaml"


def test_a_stopped_server_is_one_usage_error(pytester: pytest.Pytester, real_ollama: Any) -> None:
    make_project(pytester, real_ollama.base_url, real_ollama.model)
    result, _ = run(pytester, "--live", "--server", real_ollama.base_url, "--server", CLOSED_PORT)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert err.count("does not answer") == 1 and f"server {CLOSED_PORT} does not answer" in err
    assert real_ollama.base_url not in err  # the real server passed the check
    assert not (pytester.path / "cassettes").exists()


def test_breaker_opens_when_the_server_dies_mid_run(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    with private_ollama(tmp_path) as server:
        make_project(pytester, server.url, MODEL)
        ini = pytester.path / "tox.ini"
        keys = "\ncardprobe_retries = 0\ncardprobe_breaker = 2\n"
        pytester.makeini(ini.read_text().rstrip("\n") + keys)
        first, _ = run(
            pytester, "--live", "--update-baseline", "-k", "date", "--channel", "prose", *ONE
        )
        assert first.ret == 0, first.stdout.str()
        kept = cassette(pytester, MODEL, "date-prose-history")
        watched = cassette(pytester, MODEL, "date-prose-cold")
        old_kept, old_watched = kept.read_bytes(), watched.read_bytes()
        out = pytester.path / "breaker.json"
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "cases", "--live",
             "-k", "date or time or toggle", "--channel", "prose", *ONE,
             f"--cardprobe-json={out}"],
            cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        # Order: prose-cold date, time, toggle, then prose-history. Kill the server as soon
        # as the first test has re-recorded its cassette.
        deadline = time.monotonic() + 240
        while watched.read_bytes() == old_watched and time.monotonic() < deadline:
            time.sleep(0.05)
        server.kill()
        output = proc.communicate(timeout=300)[0].decode()
    report = json.loads(out.read_text())
    spared = [t for t in report["tests"] if t["status"] == "infra" and not t["samples"]]
    assert spared, output
    assert all("circuit breaker open" in t["message"] for t in spared)
    assert output.count("circuit breaker opened on") == 1, output
    assert f"circuit breaker opened on {server.url}: {len(spared)} test(s)" in output
    assert kept.read_bytes() == old_kept  # an infra failure never touches a cassette


def test_record_modes_ask_only_what_is_missing_or_stale(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    slice_ = ("-k", "date or time", *FOUR, *ONE)
    with private_ollama(tmp_path) as server:
        make_project(pytester, server.url, MODEL)

        def asked(*args: str) -> tuple[int, pytest.RunResult, dict[str, Any]]:
            before = server.chat_requests()
            result, report = run(pytester, *args)
            return server.chat_requests() - before, result, report

        count, result, _ = asked("--record-mode", "once", *slice_)
        assert count == 8, result.stdout.str()  # nothing recorded yet: all 8 tests asked
        count, result, report = asked("--record-mode", "once", *slice_)
        assert count == 0 and len(report["tests"]) == 8  # all replayed
        prompt = pytester.path / "cases" / "prompts" / "tool.md"
        prompt.write_text(prompt.read_text() + "\nKeep every card small.\n")
        count, result, report = asked("--record-mode", "once", *slice_)
        assert count == 0  # once leaves stale cassettes alone: they error as stale
        assert sum(t["status"] == "error" for t in report["tests"]) == 4
        count, result, report = asked("--record-mode", "stale", *slice_)
        assert count == 4, result.stdout.str()  # only the 4 tool-channel tests were stale
        assert {t["channel"] for t in report["tests"] if t["server"]} == {"tool"}
        # The warm-up: one unrecorded, unscored request before the first recorded one.
        count, result, _ = asked("--live", "-k", "date and prose and cold", "--samples", "1")
        assert count == 2
        result.stdout.fnmatch_lines([f"warm-up (unrecorded, unscored): {MODEL} on {server.url}*"])
        data = yaml.safe_load(cassette(pytester, MODEL, "date-prose-cold").read_text())
        assert len(data["interactions"]) == 1


def test_thinking_off_and_on(pytester: pytest.Pytester, each_ollama: Any) -> None:
    real_ollama = each_ollama  # on each release: the think field is part of the wire
    make_project(pytester, real_ollama.base_url, real_ollama.model)
    slice_ = ("-k", "date and prose and cold", *ONE)
    off, off_report = run(pytester, "--live", *slice_)
    assert off_report["tests"][0]["status"] in ("passed", "failed"), off.stdout.str()
    path = cassette(pytester, real_ollama.model, "date-prose-cold")
    body = json.loads(yaml.safe_load(path.read_text())["interactions"][0]["request"]["body"])
    assert body["think"] is False
    # SmolLM2 has no thinking capability; what the real Ollama answers to think:true is a
    # 400 "does not support thinking", so the test is unsupported, not failed.
    on, on_report = run(pytester, "--live", "--think", "on", *slice_)
    (test,) = on_report["tests"]
    assert test["status"] == "unsupported", on.stdout.str()
    assert "does not support thinking" in test["message"]
    body = json.loads(yaml.safe_load(path.read_text())["interactions"][0]["request"]["body"])
    assert body["think"] is True
    _, replay_report = run(pytester, "--server", CLOSED_PORT, "--think", "on", *slice_)
    assert replay_report["tests"][0]["status"] == "unsupported"
    stale, _ = run(pytester, "--server", CLOSED_PORT, *slice_, "-vv")  # -vv: the paragraph
    stale.stdout.fnmatch_lines(["*stale cassette*thinking changed since recording*"])


def test_model_digest_in_cassettes_and_reports(
    pytester: pytest.Pytester, real_ollama: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # the changed digest's line whole, as one line
    tags = httpx.get(f"{real_ollama.base_url}/api/tags", timeout=10).json()["models"]
    digest = next(m["digest"] for m in tags if m["name"] == real_ollama.model)
    make_project(pytester, real_ollama.base_url, real_ollama.model)
    slice_ = ("-k", "date and prose and cold", *ONE, "--cardprobe-md=r.md")
    live, report = run(pytester, "--live", *slice_)
    path = cassette(pytester, real_ollama.model, "date-prose-cold")
    data = yaml.safe_load(path.read_text())
    assert data["metadata"]["cardprobe"]["model"]["digest"] == digest
    assert report["arms"][0]["model_digest"] == [digest]
    # The tables name the model; a digest is shown only where an arm's digest changed.
    md = (pytester.path / "r.md").read_text()
    assert digest[:19] not in md and f"| {real_ollama.model} |" in md
    assert digest[:19] not in live.stdout.str()

    # As if the model had been re-pulled since the recording.
    data["metadata"]["cardprobe"]["model"]["digest"] = "0" * 12
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    replay, _ = run(pytester, "--server", CLOSED_PORT, *slice_)
    assert "model changed" not in replay.stdout.str()  # replay never asks the server
    assert replay.ret in (0, 1) and "stale" not in replay.stdout.str()
    again, again_report = run(pytester, "--live", *slice_)
    change = f"model changed: {'0' * 12} → {digest}"
    assert change in again.stdout.str()
    assert change in (pytester.path / "r.md").read_text()
    assert again_report["arms"][0]["model_changed"] == [f"{'0' * 12} → {digest}"]


def test_two_servers_under_xdist_merge_into_one_scoreboard(
    pytester: pytest.Pytester, real_ollama: Any, real_ollama_2: Any
) -> None:
    make_project(pytester, real_ollama.base_url, real_ollama.model)
    # Two servers on one small machine: each runner gets one thread. With Ollama's default
    # (one per core) two runners generating at once oversubscribe 2 cores and their spinning
    # threads stall each other: measured here, 37-38 s for a 96-token reply that takes 4.6 s
    # alone (6-7 s with one thread each), and the servers' own 2-minute limit answered 500.
    suite = pytester.path / "cases" / "cards.yaml"
    one_thread = suite.read_text().replace("num_predict: 96", "num_predict: 96\n  num_thread: 1")
    suite.write_text(one_thread)
    a, b = real_ollama.base_url, real_ollama_2.base_url
    result, report = run(
        pytester, "--live", "-n", "2", "--server", a, "--server", b, "-k", "date or time",
        *FOUR, *ONE,
    )  # fmt: skip
    servers = [t["server"] for t in report["tests"]]
    assert len(servers) == 8
    assert set(servers) == {a, b}, servers  # both servers got traffic
    assert sorted(servers).count(a) == 4  # contiguous halves of the run order
    assert len(report["arms"]) == 4
    assert all(arm["scored"] == 2 for arm in report["arms"])
    assert report["gate"]["decision"] == "pass"  # no baseline: every arm is new
    assert result.stdout.str().count("cardprobe scoreboard") == 1
