"""cli"""

from __future__ import annotations

import argparse
from pathlib import Path


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
