"""cli: the commands ``cardprobe`` (and ``python -m pytest_cardprobe``) dispatches to."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

#: The console script's name (``[project.scripts]``).
SCRIPT = "cardprobe"


def invoked_as() -> str:
    """How the user started the tools: ``cardprobe`` (the console script) or ``python -m
    pytest_cardprobe``; usage lines and each command's ``prog`` say it that way."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return SCRIPT if name in (SCRIPT, f"{SCRIPT}.exe") else "python -m pytest_cardprobe"


def file_arg(text: str) -> Path:
    """An argparse ``type`` for a file a command reads or writes: not empty, not typed as a
    folder."""
    from pytest_cardprobe.files import folder_typed

    if not text.strip():
        raise argparse.ArgumentTypeError("wants a file path, got an empty one")
    problem = folder_typed(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return Path(text)


def megabytes_arg(text: str) -> int:
    """An argparse ``type`` for a size in MB (above 0, at most 1,000,000; NaN and infinity
    refused), as bytes."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants a number of MB, got {text!r}") from None
    if not 0 < value <= 1_000_000:
        raise argparse.ArgumentTypeError(f"wants a number of MB above 0, got {text!r}")
    return max(1, int(value * 1024 * 1024))
