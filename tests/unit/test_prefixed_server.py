"""A server URL with a path of its own (a gateway's prefix): recordings made through it
replay, and a stale request names its body, not the path.

Each test here pins an example a fuzz test (tests/fuzz) found; each failed before the fix
its docstring names."""

from __future__ import annotations

from pathlib import Path

import pytest
from probing import (
    RECORDED,
    cards_probe,
    run_once,
    serving,
    settings_for,
)

from pytest_cardprobe.run.runtime import Runtime
from pytest_cardprobe.wire.cassettes.record import Record
from pytest_cardprobe.wire.cassettes.replay import Replay


def test_a_recording_through_a_server_url_with_a_path_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by test_fuzz_replies (the server URL had a path, ``/v``): the cassette holds
    ``/v/api/chat`` and replay asks ``/api/chat``, so a recording made through a gateway's
    prefix (``https://gw/ollama``) was stale at once. Fixed in wire/cassettes/matching.py
    (``same_path``) and reading.py (``shapes.chat_api``): the server's own base path is
    where the server is, not part of the request."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    serving(monkeypatch, RECORDED.encode())
    server = "http://127.0.0.1:9/ollama"
    recorded = run_once(Runtime(settings_for(tmp_path, server, live=True), Record()), cards_probe())
    cassette = tmp_path / "cassettes" / "cards" / "smollm2%3A135m" / "date-prose-cold.yaml"
    assert "/ollama/api/chat" in cassette.read_text()
    replayed = run_once(
        Runtime(settings_for(tmp_path, server, live=False), Replay()), cards_probe()
    )
    assert replayed.status == recorded.status == "failed"
    assert [s.label for s in replayed.samples] == [s.label for s in recorded.samples]


def test_a_stale_request_through_a_prefixed_server_names_the_body_not_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same fix, for the message of a request that really changed."""
    from pytest_cardprobe.wire.cassettes.matching import CassettePlayer

    data = {
        "interactions": [
            {"request": {"method": "POST", "uri": "http://h/ollama/api/chat", "body": '{"a":1}'}}
        ]
    }
    error = CassettePlayer(tmp_path / "c.yaml", data, "hint").mismatch("POST", "/api/chat", "{}")
    assert "(body.a only in recording)" in str(error), str(error)
