"""cli"""

from __future__ import annotations

import argparse
from pathlib import Path


def output_file(text: str) -> Path:
    """An argparse ``type`` for a file a command writes: not empty, not typed as a folder."""
    from pytest_cardprobe.files import names_a_folder

    if not text.strip():
        raise argparse.ArgumentTypeError("wants a file path, got an empty one")
    if names_a_folder(text):
        raise argparse.ArgumentTypeError(f"wants a file path, got {text!r}, which names a folder")
    return Path(text)
