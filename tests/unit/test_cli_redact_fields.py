"""``capture`` and ``draft`` blank the body keys the project lists in ini
``cardprobe_redact_fields``, as a run does (docs/guide/from-traffic.md says so): a key a team
added there must not reach a capture file or a drafted suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_draft import ASK, WEATHER

from pytest_cardprobe.__main__ import main

SECRET = "S3CR3T-VALUE-4821"
INI = "[pytest]\ncardprobe_redact_fields =\n    session_secret\n"


def test_draft_blanks_the_projects_redact_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pytest.ini").write_text(INI)
    request = {"model": "m", "messages": [ASK], "tools": [WEATHER]}
    request["options"] = {"seed": 1, "session_secret": SECRET}
    (tmp_path / "t.jsonl").write_text(json.dumps({"input": request}) + "\n")
    monkeypatch.chdir(tmp_path)
    assert main(["draft", "t.jsonl", "--out", "cases/app.yaml"]) == 0, capsys.readouterr()
    suite = (tmp_path / "cases" / "app.yaml").read_text()
    assert "session_secret: '[redacted]'" in suite and SECRET not in suite


def test_draft_refuses_a_redact_fields_value_that_is_no_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pytest.toml").write_text("[pytest]\ncardprobe_redact_fields = 3\n")
    (tmp_path / "t.jsonl").write_text("")
    monkeypatch.chdir(tmp_path)
    assert main(["draft", "t.jsonl", "--out", "cases/app.yaml"]) == 2
    assert "ini key cardprobe_redact_fields in" in capsys.readouterr().err


def test_capture_blanks_the_projects_redact_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("uvicorn")
    from pytest_cardprobe.wire.capture import serve

    (tmp_path / "pytest.ini").write_text(INI)
    monkeypatch.chdir(tmp_path)
    seen: dict[str, Any] = {}
    monkeypatch.setattr(serve, "serve", lambda app, sock, say: seen.update(app=app))
    argv = ["capture", "--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:0"]
    assert main(argv) == 0
    store = seen["app"].store
    assert "session_secret" in store.redact and "api_key" in store.redact
