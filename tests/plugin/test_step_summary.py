"""The Markdown report appended to ``$GITHUB_STEP_SUMMARY``: CI's file, never a reason to hang."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest


@pytest.mark.parametrize("reader", [False, True], ids=["no-reader", "with-reader"])
def test_a_step_summary_that_is_a_fifo_is_a_warning_not_a_hang(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, reader: bool
) -> None:
    fifo = recorded.path / "summary.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(fifo))
    held = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK) if reader else None
    try:
        started = time.monotonic()
        result = recorded.runpytest_subprocess(
            "-p", "no:cacheprovider", "-q", "-k", "date and prose and cold", timeout=60
        )
    finally:
        if held is not None:
            os.close(held)
    out = result.stdout.str() + result.stderr.str()
    assert time.monotonic() - started < 60
    assert result.ret == pytest.ExitCode.OK, out
    assert f"warning: cannot write the $GITHUB_STEP_SUMMARY to {fifo}" in out, out


def test_a_step_summary_that_is_a_regular_file_is_appended_to(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = recorded.path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = recorded.runpytest("-p", "no:cacheprovider", "-q", "-k", "date and prose and cold")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    text = Path(summary).read_text(encoding="utf-8")
    assert text.startswith("earlier step\n<!-- cardprobe-report -->")
