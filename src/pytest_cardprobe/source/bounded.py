"""Source stage: a subprocess with a deadline, capped output and a kill that reaches its children.

A module that loops at import, or an MCP helper that never exits, cannot be stopped from
inside the process that imported it; a subprocess in a session of its own can: on the
deadline its whole process group is killed. Output is read as it comes, so a child that
writes without end fills no memory: standard output is capped (past the cap the child is
killed) and only the tail of standard error is kept, for the message.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Bytes of standard error kept for a message (the end of it: where a traceback's cause is).
STDERR_TAIL = 4000


@dataclass(frozen=True)
class Finished:
    """How a bounded run ended: its exit code (None when killed), output and why it stopped."""

    code: int | None
    stdout: bytes
    stderr_tail: str
    timed_out: bool = False
    too_much: bool = False


def run_bounded(
    argv: Sequence[str],
    *,
    stdin: bytes,
    timeout: float,
    max_stdout: int,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Finished:
    """Run ``argv``, feed it ``stdin`` and collect its output within ``timeout`` seconds."""
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    out = bytearray()
    err = bytearray()
    timed_out = too_much = False
    assert process.stdin and process.stdout and process.stderr
    try:
        try:
            process.stdin.write(stdin)
            process.stdin.close()
        except BrokenPipeError:  # it exited before reading: its output says why
            pass
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ, out)
            selector.register(process.stderr, selectors.EVENT_READ, err)
            grace: float | None = None
            while selector.get_map():
                now = time.monotonic()
                if now >= deadline:
                    timed_out = True
                    break
                if grace is None and _exited(process):
                    # A helper it left behind may hold a pipe open: read a moment more.
                    grace = now + 0.5
                if grace is not None and now >= grace:
                    break
                left = min(deadline, grace or deadline) - now
                for key, _ in selector.select(min(left, 0.5)):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    buffer: bytearray = key.data
                    buffer += chunk
                    if buffer is err and len(err) > 2 * STDERR_TAIL:
                        del err[:-STDERR_TAIL]
                if len(out) > max_stdout:
                    too_much = True
                    break
        if timed_out or too_much:
            _kill_group(process)
        code = _exit_code(process, deadline)
        if code is None:
            timed_out = True
        # Whatever the leader left behind in its group (a helper holding a pipe) goes too:
        # killed while the leader is not yet reaped, so the group's id is still ours.
        _kill_group(process)
    finally:
        for pipe in (process.stdout, process.stderr):
            pipe.close()
        if process.returncode is None:
            _kill_group(process)
        process.wait()
    tail = bytes(err[-STDERR_TAIL:]).decode("utf-8", errors="replace")
    shown = None if (timed_out or too_much) else code
    return Finished(shown, bytes(out), tail, timed_out=timed_out, too_much=too_much)


def _exited(process: subprocess.Popen[bytes]) -> bool:
    return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _exit_code(process: subprocess.Popen[bytes], deadline: float) -> int | None:
    """The leader's exit code once it has exited, without reaping it; None past the deadline
    (plus a second for a child whose pipes closed just before it)."""
    while time.monotonic() < deadline + 1.0:
        found = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if found is not None:
            return found.si_status if found.si_code == os.CLD_EXITED else -found.si_status
        time.sleep(0.02)
    return None


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
