"""The server's identity in every recording (issue 25 item 6), against both real Ollamas.

A recording made on one Ollama release carries that release in its cassette metadata; a
live run that then finds the other release says so beside "model changed" (terminal,
Markdown, JSON); replay never asks the server, so it says nothing. One short slice (one
test, one sample, ``num_predict`` 96); assertions on metadata and messages, never on text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from test_plugin_live import CLOSED_PORT, make_project, run

from pytest_cardprobe.wire.identity import ollama_defaults, sampling_text

pytestmark = pytest.mark.live

SLICE = (
    "-k", "date and prose and cold", "--cardprobe-samples", "1", "--cardprobe-no-warmup",
    "--cardprobe-md=r.md",
)  # fmt: skip


def recorded_server(pytester: pytest.Pytester, model: str) -> Any:
    model_dir = model.replace(":", "%3A")
    path = pytester.path / "cassettes" / "cards" / model_dir / "date-prose-cold.yaml"
    return yaml.safe_load(Path(path).read_text())["metadata"]["cardprobe"]["server"]


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The change lines are read whole: a terminal wide enough that none wraps (the
    scoreboard wraps its lines to the terminal's width)."""
    monkeypatch.setenv("COLUMNS", "250")


def test_a_recording_names_its_server_and_a_live_run_on_another_release_says_so(
    pytester: pytest.Pytester, each_ollama: Any, other_ollama: Any
) -> None:
    first, then = each_ollama, other_ollama
    make_project(pytester, first.base_url, first.model)
    live, _ = run(pytester, "--live", *SLICE)
    assert live.ret in (0, 1), live.stdout.str()
    defaults = ollama_defaults(first.version)
    assert defaults is not None
    assert recorded_server(pytester, first.model) == {
        "kind": "ollama",
        "version": first.version,
        "sampling": sampling_text(defaults),
    }
    assert "server changed" not in live.stdout.str()  # a first recording: nothing to compare

    # Replay asks no server: it cannot know, and says nothing.
    replay, replay_report = run(pytester, "--cardprobe-server", CLOSED_PORT, *SLICE)
    assert replay_report["tests"][0]["status"] in ("passed", "failed"), replay.stdout.str()
    assert "server changed" not in replay.stdout.str()

    # The same project, now live against the other release (same model name on both).
    assert then.model == first.model
    again, report = run(pytester, "--live", "--cardprobe-server", then.base_url, *SLICE)
    # The suite's options leave repeat_penalty to the server, whose default moved in 0.32.10.
    was, now = ollama_defaults(first.version), ollama_defaults(then.version)
    assert was is not None and now is not None
    moved = f"repeat_penalty {was['repeat_penalty']} → {now['repeat_penalty']}"
    change = f"ollama {first.version} → {then.version} ({moved})"
    out = again.stdout.str()
    assert "model or server changed since the recording:" in out, out
    assert f"  cards/{then.model}/prose/cold: server changed: {change}" in out.splitlines()
    assert report["arms"][0]["server_changed"] == [change]
    assert f"server changed: {change}" in (pytester.path / "r.md").read_text()
    assert recorded_server(pytester, then.model) == {
        "kind": "ollama",
        "version": then.version,
        "sampling": sampling_text(now),
    }


def test_a_change_of_the_models_parser_is_named(
    pytester: pytest.Pytester, real_ollama: Any
) -> None:
    """The model's built-in parser is part of its identity (Ollama 0.12+, read from
    /api/show's modelfile): a live run after the model lost its PARSER says so. The variant
    is this test's own, created and re-created on the running server."""
    variant = f"{real_ollama.model}-parserswap"

    def create(**extra: str) -> None:
        body = {"model": variant, "from": real_ollama.model, "stream": False, **extra}
        answer = httpx.post(f"{real_ollama.base_url}/api/create", json=body, timeout=120)
        assert answer.status_code == 200, answer.text

    create(parser="qwen3")
    make_project(pytester, real_ollama.base_url, variant)
    first, _ = run(pytester, "--live", *SLICE)
    assert first.ret in (0, 1), first.stdout.str()
    model_dir = variant.replace(":", "%3A")
    path = pytester.path / "cassettes" / "cards" / model_dir / "date-prose-cold.yaml"
    assert yaml.safe_load(path.read_text())["metadata"]["cardprobe"]["model"]["parser"] == "qwen3"
    create()  # the same name, now without a parser (a new digest too)
    again, report = run(pytester, "--live", *SLICE)
    (change,) = report["arms"][0]["model_changed"]
    assert change.endswith("; parser qwen3 → (none)"), change
    assert f"  cards/{variant}/prose/cold: model changed: {change}" in again.stdout.str()
