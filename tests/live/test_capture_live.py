"""The capture proxy and ``draft`` against the real servers, driven by the official clients.

A small tool-using application (weather_app.py) runs on the ``ollama`` client against each
Ollama release and on the ``openai`` client against Ollama's ``/v1`` and llama-server,
plain and streamed, through the capture proxy. Between the proxy and the server sits a byte
tap (bytetap.py), and inside the client a transport tap: the NDJSON lines or SSE events the
client received must be exactly those the server sent, and every chat exchange must be in
the capture folder. Then ``draft`` writes a suite from that capture (and from Ollama's own
request logs, and from the application's OpenAI-shaped JSONL log), and the suite collects,
records with ``--live``, replays with its unreviewed cases counted apart, and — once a person
has marked them reviewed — passes the gate against the baseline it records.

The relay's timing (a client holding event 1 before the server sends event 2) needs a server
that can be held between two events: tests/unit/test_capture_proxy.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from bytetap import ByteTap, ClientTap, events
from private_ollama import private_ollama
from test_faults_live import live_lock
from weather_app import ask_ollama, ask_openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from scripted_upstream import running_proxy

from pytest_cardprobe.__main__ import main as cardprobe
from pytest_cardprobe.suite.loader import load_suite

pytestmark = pytest.mark.live
ollama = pytest.importorskip("ollama")
openai = pytest.importorskip("openai")
CHAT_PATHS = ("/api/chat", "/v1/chat/completions")


@contextlib.contextmanager
def through_capture(server: str, folder: Path) -> Iterator[tuple[str, ByteTap]]:
    """client -> capture proxy -> byte tap -> ``server``: the proxy's URL and the tap."""
    with ByteTap(server) as tap, running_proxy(tap.url, folder) as (proxy, _):
        yield proxy, tap


def check_relay(client: ClientTap, tap: ByteTap, folder: Path, stream: bool) -> int:
    """What the client read equals what the server sent, reply by reply, and the capture
    folder holds every chat exchange with the server's reply; returns how many."""
    got = [b"".join(chunks) for path, chunks in client.bodies if path.endswith(CHAT_PATHS)]
    sent = [body for _, _, body in tap.responses()]
    assert got and [events(b) for b in got] == [events(b) for b in sent]
    if stream:
        assert all(len(events(b)) > 1 for b in got)  # a stream, not one document
    files = sorted(folder.glob("*.json"))
    captured = [json.loads(p.read_text()) for p in files]
    assert len(captured) == len(got)
    assert [events(c["reply"]["body"].encode()) for c in captured] == [events(b) for b in sent]
    assert all(c["reply"]["status"] == 200 and c["error"] is None for c in captured)
    return len(got)


def draft(*args: str) -> tuple[int, str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = cardprobe(["draft", *args])
    return code, printed.getvalue()


# ------------------------------------------------------------------- the relay


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_the_ollama_client_gets_through_capture_what_ollama_sent(
    each_ollama: Any, stream: bool, tmp_path: Path
) -> None:
    client_tap = ClientTap()
    with live_lock(), through_capture(each_ollama.base_url, tmp_path / "caps") as (proxy, tap):
        client = ollama.Client(host=proxy, transport=client_tap, timeout=600)
        conversation = ask_ollama(client, each_ollama.model, stream)
    assert conversation[-1]["role"] == "assistant"
    exchanges = check_relay(client_tap, tap, tmp_path / "caps", stream)
    assert exchanges >= 2  # the question and the follow-up, at least


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("server", ["ollama-v1", "llama-server"])
def test_the_openai_client_gets_through_capture_what_the_server_sent(
    request: pytest.FixtureRequest, server: str, stream: bool, tmp_path: Path
) -> None:
    real = request.getfixturevalue("real_ollama" if server == "ollama-v1" else "real_llama_server")
    client_tap = ClientTap()
    with live_lock(), through_capture(real.base_url, tmp_path / "caps") as (proxy, tap):
        client = openai.OpenAI(
            base_url=f"{proxy}/v1", api_key="sk-capture-live-4420", timeout=600, max_retries=0,
            http_client=httpx.Client(transport=client_tap, timeout=600),
        )  # fmt: skip
        conversation = ask_openai(client, real.model, stream)
    assert conversation[-1]["role"] == "assistant"
    check_relay(client_tap, tap, tmp_path / "caps", stream)
    captured = "".join(p.read_text() for p in (tmp_path / "caps").glob("*.json"))
    assert "sk-capture-live-4420" not in captured and '"authorization": "[redacted]"' in captured


# ------------------------------------------------------------------- drafted suites


def project(pytester: pytest.Pytester, model: str, api: str, server: str) -> None:
    pytester.makeini(
        f"[pytest]\ncardprobe_models = {model}\ncardprobe_api = {api}\n"
        f"cardprobe_servers = {server}\ncardprobe_retries = 1\n"
    )


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / "report.json"
    out.unlink(missing_ok=True)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "cases", "--cardprobe-samples", "1",
        f"--cardprobe-json={out}", *args,
    )  # fmt: skip
    return result, (json.loads(out.read_text()) if out.exists() else {})


def record_and_count(pytester: pytest.Pytester, suite: Path) -> int:
    """Collect the drafted suite, record it live, replay it: the unreviewed cases are counted
    on the scoreboard and no gate reads them. Returns how many tests it has."""
    cases = load_suite(suite).cases
    assert cases and all(not c.reviewed for c in cases)
    collected = pytester.runpytest("-p", "no:cacheprovider", "cases", "--collect-only", "-q")
    assert collected.ret == 0, collected.stdout.str()
    collected.stdout.fnmatch_lines([f"{len(cases)} test* collected*"])
    with live_lock():
        live, _ = run(pytester, "--live")
    assert live.ret == 0, live.stdout.str()
    replay, report = run(pytester)
    assert replay.ret == 0, replay.stdout.str()
    replay.stdout.fnmatch_lines(["unreviewed drafts: * test(s) of cases marked `reviewed: false`*"])
    assert report["arms"] == [] and all(t["draft"] is True for t in report["tests"])
    return len(cases)


def review_and_gate(pytester: pytest.Pytester, suite: Path) -> None:
    """A person has checked the drafts (here: accepted them as drafted): the suite records a
    baseline and the replay passes the gate against it."""
    suite.write_text(suite.read_text().replace("reviewed: false", "reviewed: true"))
    (pytester.path / "cardprobe-baseline.json").unlink(missing_ok=True)
    update, _ = run(pytester, "--cardprobe-update-baseline")
    assert update.ret == 0, update.stdout.str()
    gate, report = run(pytester)
    assert gate.ret == 0, gate.stdout.str()
    assert report["gate"]["decision"] == "pass" and report["arms"]
    assert not any(t.get("draft") for t in report["tests"])
    gate.stdout.fnmatch_lines(["gate: pass*"])


def test_a_suite_drafted_from_the_ollama_clients_capture_records_replays_and_gates(
    real_ollama: Any, pytester: pytest.Pytester
) -> None:
    caps = pytester.path / "captures"
    with live_lock(), through_capture(real_ollama.base_url, caps) as (proxy, _):
        for stream in (False, True):
            ask_ollama(ollama.Client(host=proxy, timeout=600), real_ollama.model, stream)
    suite = pytester.path / "cases" / "weather.yaml"
    code, printed = draft(str(caps), "--out", str(suite))
    assert code == 0, printed
    assert "all marked reviewed: false" in printed and "--live" in printed
    drafted = load_suite(suite)
    assert list(drafted.tools) == json.loads((suite.parent / "tools" / "weather.json").read_text())
    assert drafted.prompts["call"].startswith("You are a weather assistant.")
    assert any(c.conversation for c in drafted.cases)  # the follow-up keeps the turns before it
    project(pytester, real_ollama.model, "ollama", real_ollama.base_url)
    record_and_count(pytester, suite)
    review_and_gate(pytester, suite)


def test_a_suite_drafted_from_the_openai_clients_capture_and_its_jsonl_log_records_and_gates(
    real_llama_server: Any, pytester: pytest.Pytester
) -> None:
    caps, log = pytester.path / "captures", pytester.path / "traffic.jsonl"
    with live_lock(), through_capture(real_llama_server.base_url, caps) as (proxy, _):
        client = openai.OpenAI(base_url=f"{proxy}/v1", api_key="sk-x", timeout=600, max_retries=0)
        ask_openai(client, real_llama_server.model, stream=False, log=log)
        ask_openai(client, real_llama_server.model, stream=True)
    project(pytester, real_llama_server.model, "openai", real_llama_server.base_url)
    from_log = pytester.path / "cases" / "from-log.yaml"
    code, printed = draft(str(log), "--out", str(from_log))
    assert code == 0, printed
    assert len(load_suite(from_log).cases) >= 2
    record_and_count(pytester, from_log)
    from_log.unlink()
    suite = pytester.path / "cases" / "weather.yaml"
    code, printed = draft(str(caps), "--out", str(suite))
    assert code == 0, printed
    assert "--cardprobe-api openai" in printed
    record_and_count(pytester, suite)
    review_and_gate(pytester, suite)


def test_a_suite_drafted_from_ollamas_own_request_logs_records_and_replays(
    real_ollama: Any, pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """Ollama 0.18.3 and later log each request body with OLLAMA_DEBUG_LOG_REQUESTS=1; a
    private Ollama (today's release) logs the application's traffic, no proxy in between."""
    logs_in = tmp_path / "tmp"
    logs_in.mkdir()
    env = {"OLLAMA_DEBUG_LOG_REQUESTS": "1", "TMPDIR": str(logs_in)}
    with live_lock(), private_ollama(tmp_path, env) as server:
        version = httpx.get(f"{server.url}/api/version").json()["version"]
        for stream in (False, True):
            ask_ollama(ollama.Client(host=server.url, timeout=600), "smollm2:135m", stream)
    (folder,) = logs_in.glob("ollama-request-logs-*")
    bodies = sorted(folder.glob("*_api_chat_body.json"))
    assert len(bodies) >= 4, f"Ollama {version} logged {[p.name for p in folder.iterdir()]}"
    suite = pytester.path / "cases" / "weather.yaml"
    code, printed = draft(str(folder), "--out", str(suite))
    assert code == 0, printed
    drafted = load_suite(suite)
    # Requests only: the question's draft comes from the follow-up request, which repeats
    # the model's answer; the last question has nothing after it, so no expectation.
    assert drafted.cases[0].expect is not None
    assert any(c.expect is None for c in drafted.cases)
    project(pytester, real_ollama.model, "ollama", real_ollama.base_url)
    record_and_count(pytester, suite)
