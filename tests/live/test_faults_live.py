"""Server faults and kills against the real servers (issue 14).

A fault proxy of ours (``faultproxy.py``) sits on loopback in front of the real Ollama or
llama-server and breaks replies the ways servers and networks do. Every fault must end as
``infra``: retried with backoff within ``cardprobe_retries``, never recorded, the old
cassette byte for byte as it was, and counted unscored by the gate. A run killed with
SIGKILL while it writes a cassette leaves the old file, and the next run writes a whole new
one.

The live lock (``/tmp/cardprobe-live.lock``) is held only while a test makes the real
server generate, not while it sets up, replays or waits on a fault that never reaches it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from faultproxy import FaultProxy
from killing import BLOCKING_CONFTEST, kill_during_write

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
LOCK = "/tmp/cardprobe-live.lock"
# No warm-up: its unrecorded chat request would meet the first fault meant for the test.
ONE = ("-k", "date", "--channel", "prose", "--condition", "cold", "--samples", "1", "--no-warmup")
CASSETTE = Path("cassettes/cards/smollm2%3A135m/date-prose-cold.yaml")


def _lock_held_by_an_ancestor() -> bool:
    """True when this process runs under ``flock <LOCK> ...`` (taking it again would hang)."""
    pid = os.getppid()
    while pid > 1:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        if any(b"flock" in part for part in cmdline[:1]) and LOCK.encode() in cmdline:
            return True
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


@contextlib.contextmanager
def live_lock() -> Iterator[None]:
    """Hold the machine's live lock while the real server generates."""
    if _lock_held_by_an_ancestor():
        yield
        return
    with open(LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def make_project(pytester: pytest.Pytester, model: str, api: str = "ollama") -> None:
    """The shipped suite and its cassettes and baseline, replies capped short."""
    shutil.copytree(ROOT / "cases", pytester.path / "cases")
    shutil.copytree(ROOT / "cassettes", pytester.path / "cassettes")
    suite = pytester.path / "cases" / "cards.yaml"
    suite.write_text(suite.read_text().replace("num_predict: 512", "num_predict: 16"))
    pytester.makeini(
        f"[pytest]\ncardprobe_models = {model}\ncardprobe_api = {api}\ncardprobe_retries = 1\n"
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / f"report-{time.monotonic_ns()}.json"
    # A subprocess: in this process vcrpy, while it records, would also catch the proxy's
    # own forwarding calls (it patches http.client) and write them into the cassette.
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "cases", *args, f"--cardprobe-json={out}"
    )
    return result, json.loads(out.read_text()) if out.exists() else {}


# Which faults need the real server to answer first (the others never reach it), the
# options they run with, and the words the infra label must hold.
FAULT_CASES = [
    pytest.param("500", False, ("--request-timeout", "30"), "HTTP 500", id="http-500"),
    pytest.param("503", False, ("--request-timeout", "30"), "HTTP 503", id="http-503"),
    pytest.param("reset", False, ("--request-timeout", "30"), "127.0.0.1", id="reset"),
    pytest.param("hang", False, ("--request-timeout", "2"), "timed out", id="hang"),
    pytest.param("truncate", True, ("--request-timeout", "60"), "broken reply", id="truncated"),
    pytest.param(
        "error-line",
        True,
        ("--request-timeout", "60", "--stream"),
        "error inside stream",
        id="error-line-in-stream",
    ),
    # Recording, vcrpy reads the whole reply below the client, so the drip is cut when it
    # ends (some seconds past the deadline), not at the deadline; it is infra either way.
    pytest.param("drip", True, ("--request-timeout", "8"), "timed out", id="slow-drip"),
]


@pytest.mark.parametrize(("fault", "forwards", "options", "said"), FAULT_CASES)
def test_a_server_fault_is_infra_retried_unrecorded_and_unscored(
    pytester: pytest.Pytester,
    real_ollama: Any,
    fault: str,
    forwards: bool,
    options: tuple[str, ...],
    said: str,
) -> None:
    make_project(pytester, real_ollama.model)
    cassette = pytester.path / CASSETTE
    before = digest(cassette)
    lock = live_lock() if forwards else contextlib.nullcontext()
    with lock, FaultProxy(real_ollama.base_url, [fault, fault], drip_delay_s=0.02) as proxy:
        started = time.monotonic()
        result, report = run(pytester, "--live", "--server", proxy.url, *ONE, *options)
        took = time.monotonic() - started
    out = result.stdout.str()
    assert "Traceback" not in out + result.stderr.str(), out
    (test,) = report["tests"]
    assert test["status"] == "infra", test
    (sample,) = test["samples"]
    assert sample["failure"] == "infra" and sample["route"] is None, sample
    assert said in sample["label"], sample["label"]
    assert sample["label"].startswith("infra: after 2 attempts: "), sample["label"]
    # Both attempts met the fault: retried once (cardprobe_retries = 1), then given up.
    assert [s.split()[0] for s in proxy.seen] == [fault, fault], proxy.seen
    assert digest(cassette) == before, "the old cassette changed"
    assert report["gate"]["unscored"] == 1
    assert report["gate"]["decision"] == "inconclusive"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert took < 90, took


def test_a_fault_then_a_good_reply_is_retried_and_recorded(
    pytester: pytest.Pytester, real_ollama: Any
) -> None:
    make_project(pytester, real_ollama.model)
    cassette = pytester.path / CASSETTE
    before = digest(cassette)
    with live_lock(), FaultProxy(real_ollama.base_url, ["503"]) as proxy:
        result, report = run(pytester, "--live", "--server", proxy.url, *ONE)
    assert [s.split()[0] for s in proxy.seen] == ["503", "pass"], proxy.seen
    (test,) = report["tests"]
    assert test["status"] in ("passed", "failed"), test
    assert digest(cassette) != before
    data = yaml.safe_load(cassette.read_text())
    assert len(data["interactions"]) == 1
    assert data["interactions"][0]["response"]["status"]["code"] == 200
    assert "Traceback" not in result.stdout.str()


def test_a_truncated_openai_reply_from_llama_server_is_infra(
    pytester: pytest.Pytester, real_llama_server: Any
) -> None:
    make_project(pytester, real_llama_server.model, api="openai")
    with (
        live_lock(),
        FaultProxy(real_llama_server.base_url, ["truncate", "drip"], drip_delay_s=0.02) as proxy,
    ):
        result, report = run(
            pytester, "--live", "--server", proxy.url, *ONE, "--request-timeout", "8"
        )
    (test,) = report["tests"]
    assert test["status"] == "infra", test
    assert [s.split()[0] for s in proxy.seen] == ["truncate", "drip"]
    assert not (pytester.path / "cassettes" / "cards" / "smollm2-135m").exists()
    assert "Traceback" not in result.stdout.str()


def test_sigkill_during_a_live_recording_leaves_the_old_cassette_then_a_new_one(
    pytester: pytest.Pytester, real_ollama: Any
) -> None:
    make_project(pytester, real_ollama.model)
    pytester.makeconftest(BLOCKING_CONFTEST)
    cassette = pytester.path / CASSETTE
    old = cassette.read_bytes()
    with live_lock():
        kill_during_write(pytester.path, "cases", "--live", "--server", real_ollama.base_url, *ONE)
    assert cassette.read_bytes() == old, "the cassette is not the old one after the kill"
    leftovers = list(cassette.parent.glob(f".{cassette.name}.*.tmp"))
    assert len(leftovers) == 1, "the kill did not land between writing and renaming"
    with live_lock():
        result, report = run(pytester, "--live", "--server", real_ollama.base_url, *ONE)
    assert report["tests"][0]["status"] in ("passed", "failed"), result.stdout.str()
    new = cassette.read_bytes()
    assert new != old
    assert len(yaml.safe_load(new)["interactions"]) == 1  # a whole recording
    assert list(cassette.parent.glob(f".{cassette.name}.*.tmp")) == []  # leftover swept
