"""Two pytest sessions updating one baseline at the same time keep both runs' arms."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SLOW_READ = """
import time
from pytest_cardprobe.score import baseline
_read = baseline.read_file
def slow(*a, **k):
    data = _read(*a, **k)
    time.sleep(1.0)  # both sessions read before either writes, unless they take turns
    return data
baseline.read_file = slow
"""


def test_two_sessions_updating_the_baseline_at_once_keep_both_arms(
    recorded: pytest.Pytester,
) -> None:
    recorded.makeconftest(SLOW_READ)
    base = recorded.path / "cardprobe-baseline.json"
    base.unlink()
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
            "--cardprobe-update-baseline", "-k"]  # fmt: skip
    procs = [
        subprocess.Popen(
            [*args, f"date and {channel} and cold"],
            cwd=recorded.path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for channel in ("prose", "tool")
    ]
    outs = [p.communicate(timeout=300)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    arms = json.loads(base.read_text(encoding="utf-8"))["arms"]
    assert {"cards/smollm2:135m/prose/cold", "cards/smollm2:135m/tool/cold"} <= set(arms), outs
