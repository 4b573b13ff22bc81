"""``bench/probe_walk.py`` still finds its entry and walks the shipped replay end to end.

BENCHMARKS.md's "Walking one probe" figures come from it; when the function that asks a
probe is renamed or moved, the script's default ``--entry`` must follow, or it walks nothing.
The counts themselves are checked on a known package in ``tests/unit/test_probe_walk.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_walk_of_the_default_probe_adds_up() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "probe_walk.py"), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(proc.stdout[proc.stdout.index("\n{") :])
    assert figures["tests"] == ["cases/cards.yaml::date[smollm2:135m-tool-cold]"]
    assert figures["pytest_status"] == 0
    edges = figures["edges"]
    assert figures["calls"] == sum(e["calls"] for e in edges) > 0
    assert figures["moves"] == figures["calls"] + sum(e["returns"] for e in edges)
    assert figures["climbs"] == sum(e["calls"] for e in edges if e["climb"])
