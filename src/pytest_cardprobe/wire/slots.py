"""At most N requests in flight per server, across every process of a run (xdist workers).

Each server has N lock files in a shared temporary folder, named by a hash of its URL; a
request holds one of them (``fcntl.flock``) while it is on the wire. The lock is taken before
the request is sent, so time spent waiting for a slot never counts against the request's
timeout. The kernel drops a dead process's locks, so a crashed worker frees its slot.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

POLL_S = 0.02


def slot_dir() -> Path:
    """The folder every process on this machine uses for the slot locks."""
    return Path(tempfile.gettempdir()) / "cardprobe-slots"


def _paths(server: str, parallel: int, directory: Path) -> list[Path]:
    key = hashlib.sha256(server.rstrip("/").encode()).hexdigest()[:16]
    return [directory / f"{key}-{i}.lock" for i in range(parallel)]


@contextlib.contextmanager
def server_slot(server: str, parallel: int, directory: Path | None = None) -> Iterator[float]:
    """Hold one of ``server``'s ``parallel`` slots; yields the seconds spent waiting for it."""
    directory = directory or slot_dir()
    directory.mkdir(parents=True, exist_ok=True)
    paths = _paths(server, max(1, parallel), directory)
    started = time.monotonic()
    fd = -1
    try:
        if len(paths) == 1:
            fd = os.open(paths[0], os.O_CREAT | os.O_RDWR, 0o666)
            fcntl.flock(fd, fcntl.LOCK_EX)  # one slot: wait in the kernel's queue
        else:
            while fd < 0:
                for path in paths:
                    candidate = os.open(path, os.O_CREAT | os.O_RDWR, 0o666)
                    try:
                        fcntl.flock(candidate, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        os.close(candidate)
                        continue
                    fd = candidate
                    break
                else:
                    time.sleep(POLL_S)
        yield time.monotonic() - started
    finally:
        if fd >= 0:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
