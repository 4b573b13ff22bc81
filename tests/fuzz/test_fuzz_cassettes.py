"""Fuzz: hostile cassettes through the cassette reader, replay, the judges and the reports.

The shipped cassettes of a few probes (card prose, tool, retry; call suite single call, tool
loop, no call), each with hostile edits: in the recorded reply's JSON text (NaN, ``1e999``,
a 400-digit integer, lone surrogates, control characters, wrong types, duplicate keys, deep
nesting), in the cassette's own structure, or in its bytes (invalid UTF-8); written as YAML
or as JSON, with secrets planted where a hand-edited cassette might carry them (the URL's
password and key, an ``Authorization`` header). Replay (``Runtime`` over ``Replay``, as a
test item runs it) ends in a :class:`ProbeResult` or a :class:`CassetteProblem` naming the
cassette; record mode ``stale``'s check (``Replay.problem``) and ``recorded_identity``
decide without raising; the session end makes every report; no secret reaches any of it.

Budget: see ``test_fuzz_replies.py``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from fuzzing import (
    KEY,
    PASSWORD,
    SERVER,
    TOKEN,
    corrupted,
    fuzz_settings,
    leaked,
    mutated,
    to_json,
    to_yaml,
)
from hypothesis import given
from hypothesis import strategies as st
from pipeline import PROBES, as_text, run_probe, session_end

from pytest_cardprobe.run.runtime import Runtime
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.types import ProbeResult
from pytest_cardprobe.wire.cassettes.fingerprint import fingerprint
from pytest_cardprobe.wire.cassettes.reading import recorded_identity
from pytest_cardprobe.wire.cassettes.replay import Replay
from pytest_cardprobe.wire.errors import CassetteProblem

SHIPPED = Path(__file__).resolve().parents[2] / "cassettes"


def settings_for(folder: Path) -> Settings:
    return Settings(
        models=["smollm2:135m"],
        servers=[SERVER],
        cassette_dir=folder / "cassettes",
        headers={"X-Auth": TOKEN},
        retries=0,
    )


_SHIPPED = Runtime(settings_for(SHIPPED.parent), Replay())
BASES = [yaml.safe_load(_SHIPPED.cassette_for(p).read_text(encoding="utf-8"))
         for p in PROBES]  # fmt: skip


def _with_secrets(data: dict[str, Any]) -> dict[str, Any]:
    """A hand-edited cassette that kept what a recording scrubs: credentials."""
    interactions = []
    for interaction in data["interactions"]:
        request = dict(interaction["request"])
        request["uri"] = f"http://alice:{PASSWORD}@127.0.0.1:9/api/chat?key={KEY}"
        request["headers"] = {"Authorization": [f"Bearer {TOKEN}"], "X-Api-Key": [KEY]}
        interactions.append({**interaction, "request": request})
    return {**data, "interactions": interactions}


@st.composite
def cassette(draw: st.DrawFn, base: dict[str, Any]) -> bytes:
    data = _with_secrets(base) if draw(st.integers(0, 3)) == 3 else base
    where = draw(st.integers(0, 5))
    if where < 4:
        # The recorded reply: the most common hand edit, and what a server really sent.
        interactions = list(data["interactions"])
        index = draw(st.integers(0, len(interactions) - 1))
        response = interactions[index]["response"]
        body = json.loads(response["body"]["string"])
        text = to_json(draw(mutated(body)), ascii_only=draw(st.booleans()))
        interactions[index] = {
            **interactions[index],
            "response": {**response, "body": {"string": text}},
        }
        data = {**data, "interactions": interactions}
    else:
        data = draw(mutated(data, yaml_too=True))
    text = to_yaml(data) if draw(st.booleans()) else to_json(data)
    return draw(corrupted(text, rate=0.05))


@fuzz_settings(400)
@given(data=st.data(), which=st.integers(0, len(PROBES) - 1))
def test_a_hostile_cassette_replays_to_a_result_or_a_cassette_problem(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch, data: st.DataObject, which: int
) -> None:
    folder = Path(tempfile.mkdtemp(dir=sandbox))
    probe = PROBES[which]
    runtime = Runtime(settings_for(folder), Replay(redact=["api_key"]))
    path = runtime.cassette_for(probe)
    path.parent.mkdir(parents=True)
    path.write_bytes(data.draw(cassette(BASES[which])))

    outcome = run_probe(runtime, probe, samples=2)
    said = as_text(outcome)
    if isinstance(outcome, CassetteProblem):
        assert path.name in str(outcome), str(outcome)
    else:
        assert isinstance(outcome, ProbeResult)
        said += session_end([outcome], folder=folder)
    # Record mode stale's question, and what a live run reads of an old recording.
    problem = runtime.backend.problem(
        path,
        lambda: fingerprint_of(probe),
        lambda: runtime.client.wire_request(first_request(probe)),
        2,
    )
    said += str(problem)
    said += json.dumps(recorded_identity(path))
    assert not leaked(said), leaked(said)


def first_request(probe: Any) -> Any:
    from pytest_cardprobe.suite.request import build_request

    return build_request(probe, {"temperature": 0, "num_ctx": 16384})


def fingerprint_of(probe: Any) -> Any:
    label = "tools" if probe.suite.is_call_suite else "tool declaration"
    return fingerprint(first_request(probe), tools_label=label)
