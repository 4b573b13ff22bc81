"""Writing files so that a killed run leaves the old file or the new one, never half of one.

A leaf module: every stage that writes (cassettes, baseline, reports) uses it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def shown(path: Path) -> str:
    """``path`` relative to the working directory when it is below it, for messages."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
