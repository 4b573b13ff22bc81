"""A cassette's metadata read and written through one record (wire/cassettes/metadata.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_cardprobe.wire.cassettes.metadata import CassetteMeta

SHIPPED = Path(__file__).resolve().parents[2] / "cassettes/cards/smollm2%3A135m"


def test_a_shipped_cassette_reads_as_the_record() -> None:
    data = json.loads((SHIPPED / "badge-prose-cold.yaml").read_text(encoding="utf-8"))
    meta = CassetteMeta.of(data)
    assert meta.raw is data["metadata"]["cardprobe"]  # a view, not a copy
    assert meta.suite_file == "cases/cards.yaml"
    assert meta.recorded == "2026-12-01T16:12:35Z"
    assert meta.server == {"kind": "ollama", "version": "0.33.0"}
    assert meta.digest is not None and meta.digest.startswith("410834b94dda")
    assert meta.fingerprint is not None and meta.fingerprint["model"] == "smollm2:135m"
    assert meta.unsupported is None and meta.problem() is None


def test_a_recording_writes_its_keys_in_the_order_it_always_did() -> None:
    meta = CassetteMeta(CassetteMeta.fresh({"model": "m"}))
    meta.stamp("cases/cards.yaml", {"kind": "ollama"})
    meta.unsupported = "no tools"
    meta.model = {"name": "m"}
    assert list(meta.raw) == [
        "format", "fingerprint", "server", "suite_file", "recorded", "unsupported", "model"
    ]  # fmt: skip
    unknown = CassetteMeta(CassetteMeta.fresh({}))
    unknown.stamp("s.yaml", {})
    assert "server" not in unknown.raw


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"cardprobe": {"format": True}}, "format is bool, not a whole number"),
        ({"cardprobe": {"recorded": 3}}, "recorded is int, not text"),
        ({"cardprobe": {"model": {"digest": 1}}}, "model is dict, not a mapping of text"),
    ],
)
def test_entries_of_the_wrong_type_are_named(data: dict[str, object], said: str) -> None:
    problem = CassetteMeta.of({"metadata": data}).problem()
    assert problem is not None and said in problem


def test_metadata_that_is_no_mapping_reads_as_empty() -> None:
    assert CassetteMeta.of({"metadata": ["x"]}).raw == {}
    assert CassetteMeta.of({"metadata": {"cardprobe": "x"}}).raw == {}
    assert CassetteMeta.of({}).suite_file is None
