"""Recordings made on an older Ollama keep replaying with the verdicts they had.

The shipped cassettes come from today's Ollama (their metadata says which server). A set of
real recordings from Ollama 0.11.4, with the suites they were recorded from, is kept in
``tests/data/ollama-0.11.4``; replaying them must give the verdicts written beside them when
they were moved there. A change in how the wire, the cassette reader or the judges read an
older server's replies (no tool-call ids, ``done_reason`` before ``done``, other number
formats) fails here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from real_servers import pins

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "ollama-0.11.4"


def test_recordings_from_ollama_0_11_4_replay_with_their_verdicts(
    pytester: pytest.Pytester,
) -> None:
    for part in ("cases", "cassettes"):
        shutil.copytree(FIXTURE / part, pytester.path / part)
    shutil.copy(FIXTURE / "cardprobe-baseline.json", pytester.path)
    # Kept as *.yaml.recorded so that no run of this repository takes them for its suites.
    for kept in (pytester.path / "cases").glob("*.yaml.recorded"):
        kept.rename(kept.with_suffix(""))
    pytester.makeini("[pytest]\ncardprobe_models = smollm2:135m\n")
    expected = json.loads((FIXTURE / "verdicts.json").read_text(encoding="utf-8"))
    selected = " or ".join(sorted({nodeid.split("::")[1].split("[")[0] for nodeid in expected}))
    result = pytester.runpytest_subprocess(
        "cases", "-p", "no:cacheprovider", "-k", selected, "--cardprobe-json=r.json"
    )
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    got = {
        t["nodeid"]: {
            "status": t["status"],
            "labels": [s["label"] for s in t["samples"]],
            "routes": [s["route"] for s in t["samples"]],
        }
        for t in report["tests"]
    }
    assert got == expected
    assert "stale" not in result.stdout.str() and "corrupt cassette" not in result.stdout.str()
    # The baseline written when they were moved here: the same verdicts, so the gate passes.
    assert result.ret == 0, result.stdout.str()[-2000:]
    assert report["gate"]["decision"] == "pass"
    assert all(t["server"] is None for t in report["tests"])  # replay asks no server


def test_shipped_recordings_come_from_todays_ollama() -> None:
    """Every shipped cassette was recorded on the newest Ollama that ``scripts/real-servers``
    builds (its ``OLLAMA_LATEST``), of one model with one digest: ``pytest cases`` replays
    what a new user's Ollama says.
    Bumping the constant without re-recording fails here; the 0.11.4 set above is the one
    kept from the release before."""
    from pytest_cardprobe.wire.cassettes.reading import read_cassette

    root = Path(__file__).resolve().parents[2]
    latest = pins.plain(pins.OLLAMA_LATEST)
    found: dict[str, list[str]] = {}
    for path in sorted((root / "cassettes").rglob("*.yaml")):
        meta = read_cassette(path).get("metadata", {}).get("cardprobe", {})
        server = meta.get("server") or {}
        model = meta.get("model") or {}
        where = (
            f"{server.get('kind', '?')} {server.get('version', '?')}, "
            f"{model.get('name', '?')} {model.get('digest', '?')}"
        )
        found.setdefault(where, []).append(path.relative_to(root).as_posix())
    assert sum(map(len, found.values())) >= 270  # cards.yaml 200 tests, tools.yaml 70
    # One server and one model: a re-recording that mixed releases, models or digests fails.
    assert len(found) == 1, {k: v[:3] for k, v in found.items()}
    assert next(iter(found)).startswith(f"ollama {latest}, smollm2:135m "), list(found)
