"""Writing files so that a killed run leaves the old file or the new one, never half of one.

A leaf module: every stage that writes (cassettes, baseline, reports) uses it.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import secrets
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path


def shown(path: Path) -> str:
    """``path`` relative to the working directory when it is below it, for messages."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def folder_typed(text: str) -> str | None:
    """Why a path given for a file can only name a folder (it ends with a separator,
    ``out/``), or None. ``Path("out/")`` drops the slash, so a file called ``out`` would be
    read or written instead."""
    if text.endswith(tuple(sep for sep in (os.sep, os.altsep) if sep)):
        return f"wants a file path, got {text!r}, which names a folder"
    return None


def _temporary(path: Path) -> tuple[int, str]:
    """A new hidden file next to ``path``, opened for writing, and its name.

    Opened with mode 0o666, so the kernel applies the umask (and a folder's default ACL) as
    it would for any new file; ``tempfile.mkstemp`` would make it 0o600 whatever the umask.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        name = str(path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(name, flags, 0o666)
        except FileExistsError:
            continue
        # Held while the file is written: a leftover whose lock can be taken belongs to a
        # writer that is gone (the kernel drops a dead process's locks). Another write's
        # cleanup may have taken the lock first and removed the file in the moment between
        # creating and locking it: then start over with a new name.
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_nlink:
            return fd, name
        os.close(fd)


def _remove_leftovers(path: Path) -> None:
    """Remove temporary files of earlier writes of ``path`` whose writer is gone (killed
    between writing and renaming); one another process is still writing is left alone."""
    for stale in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with contextlib.suppress(OSError):
            fd = os.open(stale, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                stale.unlink()
            finally:
                os.close(fd)


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename.

    A run killed between the two leaves ``path`` as it was plus a hidden temporary file;
    the next write of the same path removes such leftovers, but never the temporary file of
    a write still going on in another process (each holds a lock on its own). A new file gets
    the mode the umask gives (``0o666 & ~umask``); a file that existed keeps its mode, and its
    owner and group where this process may set them (root may; others keep their own). A
    symbolic link is written through: the file it points at gets the new text, the link
    stays.
    """
    if path.is_symlink():
        # Write through the link, as an editor would: a linked config or baseline stays a
        # link to the file it names.
        path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(path)
    try:
        before: os.stat_result | None = os.stat(path)
    except OSError:
        before = None
    fd, tmp = _temporary(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            if before is not None:
                os.fchmod(handle.fileno(), stat.S_IMODE(before.st_mode))
                if (before.st_uid, before.st_gid) != (os.geteuid(), os.getegid()):
                    with contextlib.suppress(OSError):
                        os.fchown(handle.fileno(), before.st_uid, before.st_gid)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


#: How long an update waits for another process's update of the same file.
LOCK_WAIT_S = 120.0


class Busy(OSError):
    """Another process kept the lock of a file for longer than :data:`LOCK_WAIT_S`."""


@contextlib.contextmanager
def exclusive(path: Path, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Hold, across processes, the right to read-modify-write ``path`` (links resolved).

    A ``flock`` on the folder holding the file, so no lock file is left beside it: two runs
    that merge into one file (``--cardprobe-update-baseline``) take turns, and the second
    reads what the first wrote instead of writing over it. Raises :class:`Busy` when the
    other holds it longer than ``wait_s``.
    """
    folder = Path(os.path.realpath(path)).parent
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Busy(
                        f"another process has been updating a file in {folder} for over "
                        f"{wait_s:g} s (another run with --cardprobe-update-baseline?)"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing drops the lock


DEFAULT_MAX_FILE_MB = 10
MB = 1024 * 1024
# Said in every "too large" message so the user knows which knob raises the cap.
MAX_FILE_KEY = "cardprobe_max_file_mb"


class FileRefused(Exception):
    """A file the plugin will not read: what it is instead of a regular file, or too large.

    The message says what is wrong without the path; callers put the path (and key) in front.
    """


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_capped(path: Path, max_bytes: int) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``max_bytes``; else FileRefused.

    Devices, FIFOs and directories are refused before anything is opened (``/dev/zero`` would
    never end, a FIFO would block the run), and the read stops one byte past the cap, so a
    file that grows while it is read cannot exhaust memory either.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise FileRefused(f"is a dangling symbolic link (to {os.readlink(path)})") from None
        raise
    if not stat.S_ISREG(info.st_mode):
        raise FileRefused(f"is {_kind(info.st_mode)}, not a regular file")
    if info.st_size > max_bytes:
        raise FileRefused(_too_large(info.st_size, max_bytes))
    # O_NONBLOCK: if the path was swapped for a FIFO since the stat, open must not hang.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused("is not a regular file")
        # Plain reads sized by the file: a buffered read(max_bytes + 1) would set aside the
        # whole cap each time, which costs more than reading a cassette.
        want, chunks, size = min(info.st_size, max_bytes) + 1, [], 0
        while size <= max_bytes:
            chunk = os.read(fd, want)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            # Past the size the file had: small reads up to one byte over the cap.
            want = min(max_bytes + 1 - size, 1 << 16)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise FileRefused(_too_large(len(data), max_bytes))
    return data


def _too_large(size: int, max_bytes: int) -> str:
    return (
        f"is larger than the {max_bytes / MB:g} MB cap ({size:,} bytes or more); "
        f"raise ini {MAX_FILE_KEY} if it really is that big"
    )


def inside(path: Path, roots: Iterable[Path]) -> bool:
    """True when ``path``, with symbolic links resolved, lies in one of ``roots``."""
    real = Path(os.path.realpath(path))
    return any(real.is_relative_to(os.path.realpath(root)) for root in roots)
