"""The suites that ship inside the package, offered by ``pytest --cardprobe-suite NAME``.

The package folder ``pytest_cardprobe/suites`` is, in the repository, a symbolic link to the
repository's ``cases/`` folder, so the reference suites have one source: what the repository
runs is what a wheel ships (the build copies the files the link points at). A suite is
offered as built-in by one entry in :data:`BUILTIN_SUITES`; the files it names (prompts,
tool files) are found relative to it, as for any suite.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from pytest_cardprobe.suite.loader import SuiteError, load_suite

#: Where the built-in suites live inside the installed package.
SUITES_DIR: Path = Path(__file__).resolve().parent.parent / "suites"

#: Built-in suite name -> its file under :data:`SUITES_DIR`. One line per suite.
BUILTIN_SUITES: dict[str, str] = {
    "cards": "cards.yaml",
    "tools": "tools.yaml",
}

#: The word ``--cardprobe-suite`` takes to print the built-in suites instead of running.
LIST_WORD = "list"


class UnknownSuite(ValueError):
    """A name that is not a built-in suite; the message lists the known ones."""

    def __init__(self, name: str) -> None:
        known = ", ".join(sorted(BUILTIN_SUITES))
        super().__init__(
            f"unknown built-in suite {name!r}; known: {known} "
            f"(`pytest --cardprobe-suite {LIST_WORD}` describes them)"
        )
        self.name = name


def builtin_suite_path(name: str) -> Path:
    """The file of the built-in suite ``name``; :class:`UnknownSuite` when there is none."""
    try:
        return SUITES_DIR / BUILTIN_SUITES[name]
    except KeyError:
        raise UnknownSuite(name) from None


def describe_builtin(name: str, known_judges: Collection[str]) -> str:
    """One line about a built-in suite: name, cases, judge, channels and conditions."""
    path = builtin_suite_path(name)
    try:
        suite = load_suite(path, known_judges=known_judges)
    except SuiteError as exc:  # a broken install: say so on its line rather than stop
        return f"{name}  (cannot be read: {exc})"
    return (
        f"{name}  {len(suite.cases)} cases; judge {suite.judge}; "
        f"channels {', '.join(suite.channels)}; conditions {', '.join(suite.conditions)}"
    )
