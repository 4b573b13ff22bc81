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


#: Values of the wrong type for each metadata entry the plugin reads.
WRONG_TYPES: list[Any] = [["x"], {"a": 1}, 7, True, None, 1.5, "text", {"k": ["v"]}]
METADATA_KEYS = ["format", "unsupported", "suite_file", "recorded", "fingerprint", "model",
                 "server"]  # fmt: skip


@st.composite
def aliased_cassette(draw: st.DrawFn, base: dict[str, Any]) -> tuple[str, bool]:
    """A shipped cassette as YAML, its metadata given values of other types, and anchors
    and aliases (an alias bomb, a merge key, an alias of a real part) written into it."""
    data = json.loads(json.dumps(base))
    meta = data["metadata"]["cardprobe"]
    wrong = False
    for key in draw(st.lists(st.sampled_from(METADATA_KEYS), max_size=2)):
        meta[key] = value = draw(st.sampled_from(WRONG_TYPES))
        wrong = wrong or not _fits(key, value)
    text = yaml.safe_dump(data, allow_unicode=True)
    kind = draw(st.integers(0, 3))
    if kind == 0:  # a bomb under a key of its own, then used as a metadata value
        levels = draw(st.integers(1, 9))
        lines = ['  b0: &b0 ["lol"]'] + [
            f"  b{n}: &b{n} [" + ", ".join([f"*b{n - 1}"] * 9) + "]" for n in range(1, levels + 1)
        ]
        text = "bomb:\n" + "\n".join(lines) + "\n" + text
        text = text.replace("  cardprobe:\n", f"  cardprobe:\n    unsupported: *b{levels}\n", 1)
    elif kind == 1:  # a merge key
        merged = text.replace("  cardprobe:\n", "  cardprobe:\n    <<: *base\n", 1)
        text = "base: &base {format: 1}\n" + merged
    elif kind == 2:  # an anchor on the interactions, aliased in the metadata
        text = text.replace("interactions:\n", "interactions: &all\n", 1)
        text = text.replace("  cardprobe:\n", "  cardprobe:\n    extra: *all\n", 1)
    return text, wrong


def _fits(key: str, value: Any) -> bool:
    if key == "format":
        return isinstance(value, int) and not isinstance(value, bool)
    if key in ("unsupported", "suite_file", "recorded"):
        return isinstance(value, str)
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


@fuzz_settings(100)
@given(data=st.data(), which=st.integers(0, len(PROBES) - 1))
def test_a_cassette_with_aliases_or_wrongly_typed_metadata_is_refused_or_replays_at_once(
    sandbox: Path, data: st.DataObject, which: int
) -> None:
    import time

    folder = Path(tempfile.mkdtemp(dir=sandbox))
    probe = PROBES[which]
    runtime = Runtime(settings_for(folder), Replay())
    path = runtime.cassette_for(probe)
    path.parent.mkdir(parents=True)
    text, wrong = data.draw(aliased_cassette(BASES[which]))
    path.write_text(text, encoding="utf-8")
    started = time.monotonic()
    outcome = run_probe(runtime, probe, samples=2)
    said = as_text(outcome)
    assert time.monotonic() - started < 60  # a hang guard, not a measurement
    # Six levels or more stand for 9**6 values and more, past the 200,000 a cassette may hold.
    bomb = "bomb:" in text and text.count("*b") >= 9 * 6 + 1
    if bomb:  # an alias bomb: refused, naming the file
        assert isinstance(outcome, CassetteProblem), said
        assert path.name in str(outcome) and "alias bomb" in str(outcome), said
    elif wrong and "bomb:" not in text:  # a metadata value of another type: refused by key
        assert isinstance(outcome, CassetteProblem), said
        assert "metadata cardprobe." in str(outcome), said
    else:
        assert isinstance(outcome, (ProbeResult, CassetteProblem)), said
