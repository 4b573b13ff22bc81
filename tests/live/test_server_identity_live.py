"""The server's identity in every recording (issue 25 item 6), against both real Ollamas.

A recording made on one Ollama release carries that release in its cassette metadata; a
live run that then finds the other release says so beside "model changed" (terminal,
Markdown, JSON); replay never asks the server, so it says nothing. One short slice (one
test, one sample, ``num_predict`` 96); assertions on metadata and messages, never on text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from test_plugin_live import CLOSED_PORT, make_project, run

pytestmark = pytest.mark.live

SLICE = (
    "-k", "date and prose and cold", "--cardprobe-samples", "1", "--cardprobe-no-warmup",
    "--cardprobe-md=r.md",
)  # fmt: skip


def recorded_server(pytester: pytest.Pytester, model: str) -> Any:
    model_dir = model.replace(":", "%3A")
    path = pytester.path / "cassettes" / "cards" / model_dir / "date-prose-cold.yaml"
    return yaml.safe_load(Path(path).read_text())["metadata"]["cardprobe"]["server"]


def test_a_recording_names_its_server_and_a_live_run_on_another_release_says_so(
    pytester: pytest.Pytester, each_ollama: Any, other_ollama: Any
) -> None:
    first, then = each_ollama, other_ollama
    make_project(pytester, first.base_url, first.model)
    live, _ = run(pytester, "--live", *SLICE)
    assert live.ret in (0, 1), live.stdout.str()
    assert recorded_server(pytester, first.model) == {"kind": "ollama", "version": first.version}
    assert "server changed" not in live.stdout.str()  # a first recording: nothing to compare

    # Replay asks no server: it cannot know, and says nothing.
    replay, replay_report = run(pytester, "--cardprobe-server", CLOSED_PORT, *SLICE)
    assert replay_report["tests"][0]["status"] in ("passed", "failed"), replay.stdout.str()
    assert "server changed" not in replay.stdout.str()

    # The same project, now live against the other release (same model name on both).
    assert then.model == first.model
    again, report = run(pytester, "--live", "--cardprobe-server", then.base_url, *SLICE)
    change = f"ollama {first.version} → {then.version}"
    out = again.stdout.str()
    assert "model or server changed since the recording:" in out, out
    assert f"  cards/{then.model}/prose/cold: server changed: {change}" in out.splitlines()
    assert report["arms"][0]["server_changed"] == [change]
    assert f"server changed: {change}" in (pytester.path / "r.md").read_text()
    assert recorded_server(pytester, then.model) == {"kind": "ollama", "version": then.version}
