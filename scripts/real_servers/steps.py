"""What every step shares: a failed step (`Fail`), printing, running a command into a log."""

from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path

LOG_TAIL_LINES = 25


class Fail(Exception):
    """A failed step: one-line reason, optionally the log whose tail explains it."""

    def __init__(self, reason: str, log: Path | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.log = log


def say(msg: str) -> None:
    print(msg, flush=True)


def log_tail(path: Path, n: int = LOG_TAIL_LINES) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as exc:
        return f"(cannot read {path}: {exc})"
    return "\n".join(lines[-n:])


def run_logged(
    argv: list[str], log: Path, env: dict[str, str] | None = None, what: str = ""
) -> float:
    """Run argv with output appended to log; return seconds taken; raise Fail on error."""
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with log.open("a") as fh:
        fh.write(f"\n### {time.strftime('%Y-%m-%dT%H:%M:%S')} $ {shlex.join(argv)}\n")
        fh.flush()
        try:
            rc = subprocess.call(
                argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )
        except OSError as exc:
            raise Fail(f"{what or argv[0]}: cannot run {argv[0]}: {exc}", log) from exc
        took = time.monotonic() - t0
        fh.write(f"### exit {rc} after {took:.1f} s\n")
    if rc != 0:
        raise Fail(f"{what or argv[0]} failed (exit {rc}, log {log})", log)
    return took


def step_done(name: str, t0: float, how: str, detail: str) -> None:
    say(f"  {name}: {how} in {time.monotonic() - t0:.1f} s  {detail}")
