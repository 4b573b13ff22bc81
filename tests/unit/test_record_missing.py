"""Record modes ``once`` and ``stale`` decide which tests to record by replay's own rules.

``stale`` must record exactly the tests whose replay would fail (stale, corrupt or missing),
whatever made them so: a request option outside the fingerprint (``keep_alive``,
``stream``) as much as a prompt inside it. Each cassette here is written by the package's
own functions from a request the client builds; its reply is a stand-in (not judged).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe.types import ChatRequest
from pytest_cardprobe.wire.cassettes.fingerprint import fingerprint
from pytest_cardprobe.wire.cassettes.format import FORMAT, METADATA_KEY, dump_cassette
from pytest_cardprobe.wire.cassettes.modes import RecordMissing, backend_for
from pytest_cardprobe.wire.cassettes.replay import Replay
from pytest_cardprobe.wire.client import ChatClient, ClientSettings
from pytest_cardprobe.wire.errors import CassetteProblem, StaleCassette

SERVER = "http://127.0.0.1:11434"
REPLY = json.dumps({"message": {"role": "assistant", "content": "ok"}, "done": True})
SETTINGS = ClientSettings(base_url=SERVER, keep_alive="10m")


def request(**changes: Any) -> ChatRequest:
    base = ChatRequest(
        model="smollm2:135m",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "q"}],
        options={"temperature": 0, "num_ctx": 4096},
    )
    return replace(base, **changes)


def record(path: Path, asked: ChatRequest, settings: ClientSettings, samples: int = 2) -> None:
    """The cassette a recording of ``samples`` asks of ``asked`` would write."""
    method, wire_path, body = ChatClient(settings).wire_request(asked)
    interaction = {
        "request": {"method": method, "uri": SERVER + wire_path, "body": body, "headers": {}},
        "response": {"status": {"code": 200, "message": "OK"}, "body": {"string": REPLY}},
    }
    meta = {"format": FORMAT, "fingerprint": fingerprint(asked)}
    data = {"interactions": [interaction] * samples, "metadata": {METADATA_KEY: meta}}
    path.write_text(dump_cassette({**data, "version": 1}), encoding="utf-8")


def replay_fails(path: Path, asked: ChatRequest, settings: ClientSettings, samples: int) -> bool:
    """What plain replay says: True when the test would error on its cassette."""
    backend = Replay()
    client = ChatClient(settings, player=backend.player())
    try:
        with backend.open(path, fingerprint=lambda: fingerprint(asked), rerecord_hint="-"):
            for _ in range(samples):
                client.chat(asked)
    except CassetteProblem:
        return True
    return False


def decides(
    mode: str, path: Path, asked: ChatRequest, settings: ClientSettings, samples: int
) -> bool:
    backend = backend_for(mode)
    assert isinstance(backend, RecordMissing)
    first = lambda: ChatClient(settings).wire_request(asked)  # noqa: E731
    return backend.records(path, lambda: fingerprint(asked), first, samples)


Change = Callable[[ChatRequest, ClientSettings], tuple[ChatRequest, ClientSettings]]
CHANGES: dict[str, Change] = {
    "nothing": lambda r, s: (r, s),
    # Outside the fingerprint: only the request body tells.
    "keep_alive": lambda r, s: (r, replace(s, keep_alive="5m")),
    "stream": lambda r, s: (r, replace(s, stream=True)),
    "api": lambda r, s: (r, replace(s, api="openai")),
    # Inside it.
    "model": lambda r, s: (replace(r, model="smollm2:360m"), s),
    "question": lambda r, s: (
        replace(r, messages=[*r.messages[:1], {"role": "user", "content": "Q"}]),
        s,
    ),
    "options": lambda r, s: (replace(r, options={**r.options, "num_ctx": 8192}), s),
    "think": lambda r, s: (replace(r, think="on"), s),
    # Same meaning, other text: never stale.
    "key order": lambda r, s: (replace(r, options=dict(reversed(list(r.options.items())))), s),
}


@pytest.mark.parametrize("samples", [1, 2, 3])
@pytest.mark.parametrize("change", list(CHANGES))
def test_stale_records_exactly_what_replay_would_refuse(
    tmp_path: Path, change: str, samples: int
) -> None:
    path = tmp_path / "c.yaml"
    record(path, request(), SETTINGS, samples=2)
    asked, settings = CHANGES[change](request(), SETTINGS)
    refused = replay_fails(path, asked, settings, samples)
    assert decides("stale", path, asked, settings, samples) is refused
    # once leaves an existing cassette alone, stale or not.
    assert decides("once", path, asked, settings, samples) is False
    expected = change not in ("nothing", "key order") or samples > 2
    assert refused is expected, (change, samples)


def test_missing_and_corrupt_cassettes(tmp_path: Path) -> None:
    missing, corrupt = tmp_path / "missing.yaml", tmp_path / "corrupt.yaml"
    corrupt.write_text('{"interactions": [', encoding="utf-8")
    for mode in ("once", "stale"):
        assert decides(mode, missing, request(), SETTINGS, 1) is True
    assert decides("stale", corrupt, request(), SETTINGS, 1) is True
    assert decides("once", corrupt, request(), SETTINGS, 1) is False


def test_a_cassette_recorded_as_unsupported_is_replayed_while_its_fingerprint_holds(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.yaml"
    meta = {"format": FORMAT, "fingerprint": fingerprint(request()), "unsupported": "no tools"}
    data = {"interactions": [], "metadata": {METADATA_KEY: meta}, "version": 1}
    path.write_text(dump_cassette(data), encoding="utf-8")
    assert decides("stale", path, request(), SETTINGS, 2) is False
    assert decides("stale", path, request(model="other"), SETTINGS, 2) is True


def test_open_follows_the_decision_records_made(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    record(path, request(), SETTINGS)
    backend = backend_for("stale")
    assert isinstance(backend, RecordMissing)
    asked, settings = request(), replace(SETTINGS, keep_alive="5m")
    first = lambda: ChatClient(settings).wire_request(asked)  # noqa: E731
    assert backend.records(path, lambda: fingerprint(asked), first, 2)
    with backend.open(path, fingerprint=lambda: fingerprint(asked), rerecord_hint="-") as rec:
        assert rec.live  # recorded: the request goes to the server through vcrpy
        rec.keep = False
    # Without a request to match (the cardprobe fixture), open decides by itself.
    with backend.open(path, fingerprint=None, rerecord_hint="-") as rec:
        assert not rec.live


def test_replay_names_the_option_that_made_it_stale(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    record(path, request(), SETTINGS)
    problem = Replay().problem(
        path,
        lambda: fingerprint(request()),
        lambda: ChatClient(replace(SETTINGS, keep_alive="5m")).wire_request(request()),
    )
    assert isinstance(problem, StaleCassette)
    assert "body.keep_alive differs" in str(problem)
