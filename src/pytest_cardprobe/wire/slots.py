"""At most N requests in flight per server, across every process of a run (xdist workers).

Each server has N lock files in a folder of the user's own (``$XDG_RUNTIME_DIR``, else the
temporary folder with the uid in the name, mode 0700), named by a hash of its URL; a request
holds one of them (``fcntl.flock``) while it is on the wire. The lock is taken before
the request is sent, so time spent waiting for a slot never counts against the request's
timeout. The kernel drops a dead process's locks, so a crashed worker frees its slot.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

POLL_S = 0.02


class SlotDirRefused(OSError):
    """The slot folder exists but is not this user's private folder, and cannot be made so."""


def slot_dir() -> Path:
    """This user's folder for the slot locks, the same for every process of the user.

    Another user's run on the same machine uses another folder, so neither can lock the
    other out (or fail with ``PermissionError`` on a folder the first one created).
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and _is_ours(runtime):
        return Path(runtime) / "cardprobe-slots"
    # Unset, or inherited from another user (``su``, ``sudo -E``): the temp folder, per uid.
    return Path(tempfile.gettempdir()) / f"cardprobe-slots-{os.getuid()}"


def _is_ours(folder: str) -> bool:
    """Whether ``folder`` is a folder of this user that this user may write in."""
    try:
        info = os.stat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and os.access(folder, os.W_OK)


def private_dir(directory: Path) -> Path:
    """``directory`` created 0700, or checked: ours, a real folder, no access for others.

    A folder with looser permission bits is repaired (chmod 0700); one owned by another user,
    or a symbolic link or a file in its place, is refused with :class:`SlotDirRefused`.
    """
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700, parents=True)
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode):
        raise SlotDirRefused(f"request-slot folder {directory} is not a folder; remove it")
    if info.st_uid != os.getuid():
        raise SlotDirRefused(
            f"request-slot folder {directory} belongs to uid {info.st_uid}, not to this user "
            f"(uid {os.getuid()}); remove it or set XDG_RUNTIME_DIR"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(directory, 0o700)
    return directory


def _paths(server: str, parallel: int, directory: Path) -> list[Path]:
    key = hashlib.sha256(server.rstrip("/").encode()).hexdigest()[:16]
    return [directory / f"{key}-{i}.lock" for i in range(parallel)]


@contextlib.contextmanager
def server_slot(server: str, parallel: int, directory: Path | None = None) -> Iterator[float]:
    """Hold one of ``server``'s ``parallel`` slots; yields the seconds spent waiting for it."""
    directory = private_dir(directory or slot_dir())
    paths = _paths(server, max(1, parallel), directory)
    started = time.monotonic()
    fd = -1
    try:
        if len(paths) == 1:
            fd = os.open(paths[0], os.O_CREAT | os.O_RDWR, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)  # one slot: wait in the kernel's queue
        else:
            while fd < 0:
                for path in paths:
                    candidate = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
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
