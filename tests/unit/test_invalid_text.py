"""Text that is no text: a lone surrogate in a reply, a cassette, a card or a tools file,
and a live reply that is not UTF-8.

Each test here pins an example a fuzz test (tests/fuzz) found; each failed before the fix
its docstring names."""

from __future__ import annotations

import json
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
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.wire.cassettes.record import Record

# --------------------------------------------------------------------------- lone surrogates

LONE = '"caf\\udfff"'  # JSON text: a valid escape that decodes to no Unicode text


def test_a_reply_whose_text_holds_a_lone_surrogate_is_malformed_not_a_crash_at_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by test_fuzz_replies (an OpenAI stream whose content held ``\\udfff``): the
    reply was judged, and the session end crashed writing the reports (UnicodeEncodeError).
    Fixed in jsonread.load_json, which every reply goes through: a lone surrogate is not
    text, so the reply is malformed (infra, live; a corrupt cassette, replayed)."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    body = '{"message":{"role":"assistant","content":' + LONE + '},"done":true}'
    serving(monkeypatch, body.encode())
    live = run_once(
        Runtime(settings_for(tmp_path, "http://127.0.0.1:9", live=True), Record()), cards_probe()
    )
    assert live.status == "infra"
    assert "reply is not JSON: a string holds a lone surrogate" in live.samples[0].label
    json.dumps(live.to_dict(), ensure_ascii=False).encode("utf-8")


def test_a_recorded_reply_with_a_lone_surrogate_is_a_corrupt_cassette(tmp_path: Path) -> None:
    """The same fix, replayed: the cassette reader names the interaction."""
    from pytest_cardprobe.wire.cassettes.reading import read_cassette
    from pytest_cardprobe.wire.errors import CorruptCassette

    reply = '{"message":{"role":"assistant","content":' + LONE + '},"done":true}'
    data = {
        "version": 1,
        "interactions": [
            {
                "request": {"method": "POST", "uri": "http://h/api/chat", "body": "{}"},
                "response": {"status": {"code": 200}, "body": {"string": reply}},
            }
        ],
    }
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(data))
    with pytest.raises(CorruptCassette, match=r"interaction 1: reply is not JSON: a string "):
        read_cassette(path)


def test_a_card_whose_type_is_a_lone_surrogate_is_broken_json(tmp_path: Path) -> None:
    """Found by test_fuzz_judges: a model may type the six characters ``\\ud800`` inside
    its card; the judge's label and types then held a lone surrogate, which no report can
    be written with. Fixed in judge/carddetect.py: such a card is ``broken: invalid JSON``."""
    from pytest_cardprobe.judge.card import judge_card

    text = '```json\n{"type":"AdaptiveCard","body":[{"type":"\\ud800"}]}\n```'
    verdict = judge_card(text, accept=["Table"], requires_input=False)
    assert verdict.label == "broken: invalid JSON lone surrogate \\ud800 in a string"
    json.dumps(verdict.to_dict(), ensure_ascii=False).encode("utf-8")


def test_a_tools_file_with_a_lone_surrogate_is_a_suite_error(tmp_path: Path) -> None:
    """Found by test_fuzz_suites (a JSON tools file, ``\\udfff`` in a string): the suite
    loaded and every request it built failed to encode. Fixed in suite/documents.py: the
    JSON walk (and the YAML reading) refuses it, naming line and key."""
    from pytest_cardprobe.suite.loader import SuiteError

    (tmp_path / "tools.json").write_text(
        '[{"type": "function", "function": {"name": "f",\n "description": ' + LONE + "}}]"
    )
    (tmp_path / "s.yaml").write_text(
        "cardprobe: 1\nname: s\njudge: call\nconditions: [cold]\ntools: tools.json\n"
        "cases:\n  - id: c\n    prompt: q\n    expect: {call: f}\n"
    )
    with pytest.raises(SuiteError) as caught:
        load_suite(tmp_path / "s.yaml")
    assert str(caught.value).startswith(f"{tmp_path / 'tools.json'}:2: $[0].function.description")
    assert "lone surrogate" in str(caught.value)


# --------------------------------------------------------------------------- bytes and text


def test_a_live_reply_that_is_not_utf8_is_infra_not_a_recording_that_cannot_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by test_fuzz_replies (an OpenAI stream with a byte 0xff spliced in): the client
    decoded the reply with replacement characters and judged it, and the cassette kept the
    raw bytes, which replay refuses as not UTF-8: a recording that could never replay.
    Fixed in wire/client.py: a reply that is not UTF-8 is malformed (infra, not recorded)."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    serving(monkeypatch, b"\xff" + RECORDED.encode())
    result = run_once(
        Runtime(settings_for(tmp_path, "http://127.0.0.1:9", live=True), Record()), cards_probe()
    )
    assert result.status == "infra"
    assert "malformed reply: not UTF-8 (invalid start byte at byte 0)" in result.samples[0].label
    assert not (tmp_path / "cassettes").exists()  # nothing recorded


def test_a_json_cassette_whose_reply_holds_a_lone_surrogate_is_corrupt(tmp_path: Path) -> None:
    """Found by test_fuzz_cassettes (a cassette written as JSON, its body string holding
    ``\\ud800``): replay raised UnicodeEncodeError encoding the body. Fixed in
    wire/cassettes/reading.py: a body string that is no text is a corrupt cassette."""
    from pytest_cardprobe.wire.cassettes.reading import read_cassette
    from pytest_cardprobe.wire.errors import CorruptCassette

    reply = '{"message": {"role": "assistant", "content": "hi"}, "done": true}\ud800'
    data = {
        "version": 1,
        "interactions": [
            {
                "request": {"method": "POST", "uri": "http://h/api/chat", "body": "{}"},
                "response": {"status": {"code": 200}, "body": {"string": reply}},
            }
        ],
    }
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))  # ASCII JSON: the surrogate travels as an escape
    with pytest.raises(CorruptCassette, match="interaction 1: response body is not text"):
        read_cassette(path)
