"""bench/capture.py still runs: it starts the capture command and its own fast server, drafts
with the package's own code, and prints its tables. It times nothing that is asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("uvicorn")


def test_the_capture_benchmark_runs_small_and_prints_its_tables() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "capture.py"), "--requests", "8",
         "--exchanges", "60", "--questions", "12", "--repeat", "1"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "| fast server, whole reply | 8 |" in out
    assert "| fast server, first of 20 chunks | 2 |" in out
    assert "| a captured chat exchange | 8 |" in out
    assert "The suite: 12 case(s) (2 call, 9 no call, 1 tool loop) from 60 exchange(s)" in out
    assert "real Ollama" not in out  # only with --real
