"""cli: the commands ``cardprobe`` (and ``python -m pytest_cardprobe``) dispatches to."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

#: The console script's name (``[project.scripts]``).
SCRIPT = "cardprobe"

T = TypeVar("T")


def invoked_as() -> str:
    """How the user started the tools: ``cardprobe`` (the console script) or ``python -m
    pytest_cardprobe``; usage lines and each command's ``prog`` say it that way."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return SCRIPT if name in (SCRIPT, f"{SCRIPT}.exe") else "python -m pytest_cardprobe"


def arg_type(read: Callable[[str], T]) -> Callable[[str], T]:
    """A reader of ``wire/values.py`` as an argparse ``type``: its ValueError becomes
    argparse's refusal (``argument --x: wants ..., got ...``), so a command's flag refuses
    what the plugin's option or ini key of the same meaning refuses, in the same words."""

    def convert(text: str) -> T:
        try:
            return read(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def _file_path(text: str) -> Path:
    from pytest_cardprobe.wire.values import file_path_text

    return Path(file_path_text(text))


def _folder_path(text: str) -> Path:
    from pytest_cardprobe.wire.values import path_text

    return Path(path_text(text))


def _megabytes(text: str) -> int:
    from pytest_cardprobe.files import MB
    from pytest_cardprobe.wire.values import megabytes

    return int(megabytes(text) * MB)


def _seconds(text: str) -> float:
    from pytest_cardprobe.wire.values import seconds

    return float(seconds(text))


#: A file a command reads or writes: not empty, not typed as a folder (``values.file_path_text``).
file_arg = arg_type(_file_path)
#: A folder a command writes into: not empty (``values.path_text``).
folder_arg = arg_type(_folder_path)
#: A size in MB, as bytes: at least one byte, at most 1,000,000 MB (``values.megabytes``, the
#: reader of ini ``cardprobe_max_file_mb``).
megabytes_arg = arg_type(_megabytes)
#: A time in seconds, above 0 and at most a day (``values.seconds``, the reader of
#: ``--cardprobe-request-timeout``).
seconds_arg = arg_type(_seconds)


def add_redact_field(parse: argparse.ArgumentParser, does: str) -> None:
    """The ``--redact-field KEY`` flag of ``capture`` and ``draft`` (repeatable); ``does``
    says what is done to the key (``write as [redacted]``)."""
    parse.add_argument(
        "--redact-field", action="append", default=[], metavar="KEY",
        help=f"a request or reply body key to {does}, beside the built-in ones and "
        "ini cardprobe_redact_fields",
    )  # fmt: skip
