"""The reports a run writes at its end: JSON, Markdown (and ``$GITHUB_STEP_SUMMARY``), HTML.

Each is written atomically and on its own, so one that cannot be written leaves the others
(a live run may have taken many minutes); nothing is written over a file a suite is read
from.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from pytest_cardprobe.files import write_atomically
from pytest_cardprobe.glue.state import CardprobeState
from pytest_cardprobe.score.aggregate import ArmScore
from pytest_cardprobe.score.gate import Gate
from pytest_cardprobe.score.jsonreport import json_report
from pytest_cardprobe.score.markdown import markdown
from pytest_cardprobe.wire.redact import redact_url


def written(
    what: str, path: Path, write: Callable[[], None], inputs: Collection[str] = ()
) -> str | None:
    """Run ``write``; the one-line reason when it failed, else None.

    Outputs were checked before the first test, but a path can change while a long live run
    goes on; then the user gets one line, not a traceback, and the other outputs still land.
    A path in ``inputs`` (a file a suite of the run was read from) is never written.
    """
    if os.path.realpath(path) in inputs:
        return f"not writing the {what} to {path}: a suite of this run is read from it"
    try:
        write()
    except OSError as exc:
        return f"cannot write the {what} to {path}: {exc.strerror or exc}"
    return None


def run_info(state: CardprobeState) -> dict[str, object]:
    """The run's settings as shown in reports (no paths of this machine)."""
    s = state.settings
    return {
        "models": list(s.models),
        "mode": "live" if s.live else "replay",
        "api": s.api,
        "servers": [redact_url(u) for u in s.servers] if s.live else [],
        "samples": s.samples,
        "channels": list(s.channels),
        "conditions": list(s.conditions),
        "noise_floor": s.gate.noise_floor,
        "gate_mode": s.gate.mode,
        "alpha": s.gate.alpha,
        "request options": ", ".join(f"{k}={v}" for k, v in s.base_options().items()),
        "baseline": s.baseline.name,
    }


def write_reports(state: CardprobeState, arms: Sequence[ArmScore], gate: Gate | None) -> list[str]:
    """The JSON, Markdown and HTML files asked for, written atomically.

    Each on its own: one that cannot be written is one line in the returned list, and the
    others are still written (the run may have taken many minutes of live calls). The
    ``$GITHUB_STEP_SUMMARY`` file is CI's, not the user's, so a failure there is a warning
    in the summary, not a problem.
    """
    settings = state.settings
    problems: list[str | None] = []
    inputs = state.read_files
    json_path, html_path, md_path = settings.json_report, settings.html_report, settings.md_report
    if json_path:
        tests = [r.to_dict() for r in state.results]
        data = json_report(arms, tests, gate, run_info(state), state.blocks)
        problems.append(
            written("JSON report", json_path, lambda: write_atomically(json_path, data), inputs)
        )
    if html_path:
        from pytest_cardprobe.score.html import html_report

        results = [r for r in state.results if r.suite]
        page = html_report(arms, results, gate, run_info(state), state.blocks)
        problems.append(
            written("HTML report", html_path, lambda: write_atomically(html_path, page), inputs)
        )
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if arms and (md_path or step):
        text = markdown(arms, gate, state.blocks)
        if md_path:
            problems.append(
                written("Markdown report", md_path, lambda: write_atomically(md_path, text), inputs)
            )
        if step:
            failed = written("$GITHUB_STEP_SUMMARY", Path(step), lambda: _append(step, text))
            if failed:
                state.summary.append(f"warning: {failed}")
    return [p for p in problems if p]


def _append(path: str, text: str) -> None:
    """Append ``text`` to the step-summary file, which must be a regular file.

    Opened without blocking: a FIFO with no reader would hold ``open`` for ever (one with a
    reader is refused too, as is any other file that is not a regular one).
    """
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    refused = OSError(errno.EINVAL, "it is not a regular file (a FIFO, a device?)")
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise refused
    fd = os.open(path, flags, 0o666)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise refused
        os.set_blocking(fd, True)
        with os.fdopen(fd, "w", encoding="utf-8", closefd=False) as handle:
            handle.write(text)
    finally:
        os.close(fd)
