"""Suite stage: the one error a suite file can raise, and how its messages name things.

Every module of the stage reports a problem the same way: a :class:`SuiteError` naming the
file, the key path inside it (``cases[3].accept``) and, where it is known, the line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

#: A path into a document: mapping keys and list indexes, outermost first.
KeyPath = tuple[str | int, ...]
#: Raise the SuiteError for a problem at a key path (the caller knows file and lines).
Fail = Callable[[KeyPath, str], NoReturn]


class SuiteError(Exception):
    """A usage error about one suite file: what is wrong, and where.

    ``str()`` reads ``cases/bad.yaml:12: cases[3].accept: <problem>``; the line and key parts
    are left out when unknown.
    """

    def __init__(
        self,
        path: Path | str,
        problem: str,
        key: str | None = None,
        line: int | None = None,
    ) -> None:
        # All four go to ``args`` in __init__ order so the error pickles (xdist workers).
        super().__init__(path, problem, key, line)
        self.path = Path(path)
        self.problem = problem
        self.key = key
        self.line = line

    def __str__(self) -> str:
        where = str(self.path)
        if self.line is not None:
            where += f":{self.line}"
        if self.key:
            where += f": {self.key}"
        return f"{where}: {self.problem}"


class SuiteWarning:
    """A doubt about one suite file that does not stop the run (shown as a pytest warning at
    its file and line); ``str()`` reads like a :class:`SuiteError`."""

    def __init__(self, path: Path, problem: str, key: str | None, line: int | None) -> None:
        self.source = path
        self.problem = problem
        self.key = key
        self.line = line

    def __str__(self) -> str:
        return str(SuiteError(self.source, self.problem, self.key, self.line))


#: Note a doubt at a key path (the caller knows file and lines).
Warn = Callable[[KeyPath, str], None]


def format_key(key: KeyPath) -> str | None:
    """``("cases", 3, "accept")`` → ``"cases[3].accept"``; ``None`` for the document itself."""
    text = ""
    for part in key:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text or None


def json_path(key: KeyPath) -> str:
    """``(2, "function", "name")`` → ``"$[2].function.name"`` (a place in a tools file)."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in key)


def describe(value: object) -> str:
    """Name a wrong value the way it was written in YAML."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return repr(shown)
    if isinstance(value, int | float):
        shown = repr(value)
        return shown if len(shown) <= 40 else shown[:37] + "..."
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    return f"a {type(value).__name__} ({value!s})"


def one_of(options: Sequence[object]) -> str:
    """``a, b, c``: the allowed choices, as a message lists them."""
    return ", ".join(str(o) for o in options)
