"""The replay benchmark still builds and runs its matrix with the package's own code.

BENCHMARKS.md's replay figures come from ``bench/replay.py``, which builds its cassettes with
the plugin's functions; when those change, the script breaks silently unless something runs
it. This runs it small (one model: 100 tests) and checks the tables it prints. It times
nothing: the figures it prints are not asserted.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_replay_bench_runs_its_matrix_and_prints_its_tables(tmp_path: Path) -> None:
    keep = tmp_path / "bench"
    args = ["--models", "1", "--repeat", "1", "--per-test", "3", "--baseline", "--keep", str(keep)]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "replay.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    # 25 cases x 2 channels x 2 conditions, one cassette each, every one replayed cleanly
    # (the script stops on "not recorded", "stale" or "corrupt") against its own baseline.
    assert "100 tests," in out
    outcome = re.search(r"Replay outcome: (\d+) passed, (\d+) xfailed\.", out)
    assert outcome and sum(map(int, outcome.groups())) == 100, out
    assert len(list((keep / "replay" / "cassettes").rglob("*.yaml"))) == 100
    for row in ("| replay |", "| bare |", "| bare-fail |", "| replay / bare |"):
        assert row in out
    assert re.search(r"\| \*\*`Runtime.run` as a whole\*\* \| \d+\.\d\d \|", out)


def test_the_call_matching_bench_judges_every_size() -> None:
    # Small: one round, without the permutation pairing (which takes seconds at 8 calls).
    # The bench asserts each judgement's label itself; this checks it ran and printed its rows.
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "call_matching.py"), "--rounds", "1", "--no-old"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = re.findall(r"^\| (\d+) \| [\d.]+ / [\d.]+ / [\d.]+ \|", proc.stdout, re.MULTILINE)
    assert rows == ["4", "8", "16", "32"], proc.stdout
