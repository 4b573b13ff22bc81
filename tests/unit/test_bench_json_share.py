"""``bench/json_share.py``: the pieces it counts do their work over the shipped recordings,
and its table subtracts the floor. The counting itself needs valgrind and minutes."""

from __future__ import annotations

import json
from pathlib import Path

from bench_scripts import load_bench  # tests/ is on sys.path (rootdir-relative)

ROOT = Path(__file__).resolve().parents[2]


def test_each_piece_works_over_every_shipped_recording() -> None:
    bench = load_bench("json_share")
    cassettes = sorted((ROOT / "cassettes").rglob("*.yaml"))
    requests = sum(len(json.loads(p.read_text())["interactions"]) for p in cassettes)
    assert bench.run_piece("parse") == len(cassettes) > 0
    assert bench.run_piece("write") == requests > len(cassettes)
    assert bench.run_piece("suites") == 1


def test_the_table_counts_each_piece_above_the_floor() -> None:
    bench = load_bench("json_share")
    found = {
        "read": (1_000_000, 1),
        "write": (1_000_000 + 300_000 * 10, 10),
        "parse": (1_000_000 + 2_000_000, 4),
        "jsonschema": (201_000_000, 1),
        "suites": (401_000_000, 1),
    }
    table = bench.report(found)
    assert "| write |" in table and "| 3.0 M | 300 k per request (10) |" in table
    assert "| 2.0 M | 500 k per cassette (4) |" in table
    assert "| 200.0 M | — |" in table and "| 400.0 M | — |" in table
