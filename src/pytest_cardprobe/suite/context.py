"""Suite stage: what a suite may make the plugin read, and the reading context of one file.

Every module that turns part of a suite into records reports through a :class:`Reader`:
it knows the file, the line of every key, the limits, and reads the files a suite names.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from pytest_cardprobe.files import DEFAULT_MAX_FILE_MB, MB, FileRefused, inside, read_capped
from pytest_cardprobe.suite.documents import decode_utf8
from pytest_cardprobe.suite.errors import KeyPath, SuiteError, format_key
from pytest_cardprobe.suite.schema import first_problem
from pytest_cardprobe.suite.sources import PromptSource, SourceProblem, Sources, prompt_source

_T = TypeVar("_T")

#: Upper bound of ``samples`` (suite key, marker, --samples); ini ``cardprobe_max_samples``.
MAX_SAMPLES = 100
#: Upper bound of a tool loop's ``max_turns`` (suite and case key); ini ``cardprobe_max_turns``.
#: Every turn is a request with its own deadline, so the bound is what caps a loop's time.
MAX_TURNS = 20
#: Default cap on every file a suite makes the plugin read; ini ``cardprobe_max_file_mb``.
DEFAULT_MAX_BYTES = DEFAULT_MAX_FILE_MB * MB


@dataclass(frozen=True)
class SuiteLimits:
    """What a suite may make the plugin read and do (set from ini keys by the glue).

    ``roots`` are the folders files named by a suite (prompts) must resolve into, symbolic
    links followed; ``None`` checks nothing (a suite loaded outside a pytest run).
    """

    roots: tuple[Path, ...] | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    max_samples: int = MAX_SAMPLES
    max_turns: int = MAX_TURNS


class Reader:
    """One file being read: where its keys are, and how a problem in it is raised."""

    def __init__(
        self,
        path: Path,
        lines: dict[KeyPath, int],
        limits: SuiteLimits,
        sources: Sources | None = None,
    ) -> None:
        self.path = path
        self.lines = lines
        self.limits = limits
        # Who reads a source a suite names (python:, mcp:); None outside a pytest run.
        self.sources = sources
        self.suite_name = path.stem

    def line_of(self, key: KeyPath) -> int | None:
        # A missing key has no line of its own; point at the nearest enclosing entry.
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return self.lines.get(())

    def fail(self, key: KeyPath, problem: str, line: int | None = None) -> NoReturn:
        raise SuiteError(
            self.path,
            self.wording(key, problem),
            self.key_text(key),
            line if line is not None else self.line_of(key),
        )

    def key_text(self, key: KeyPath) -> str | None:
        """How a key path is shown: ``cases[3].accept``."""
        return format_key(key)

    def wording(self, key: KeyPath, problem: str) -> str:
        """A problem's message as shown; a reader may name more (the case of a key)."""
        return problem

    def check(self, document: Any, definition: str | None = None) -> None:
        """Raise the first structural problem the schema finds in ``document``."""
        found = first_problem(document, definition, self.line_of)
        if found is not None:
            self.fail(*found)

    def read_text(self, key: KeyPath, relative: str, what: str) -> tuple[Path, str]:
        """A file named by the suite, relative to it: inside the roots, regular, capped, UTF-8.

        Every file a suite makes the plugin read goes through here, so a suite cannot send
        ``/etc/passwd`` to a model server (and into a cassette), hang on a FIFO or fill memory
        from ``/dev/zero``.
        """
        if "\x00" in relative:
            self.fail(key, f"{what} path contains a NUL character")
        named = self.path.parent / relative
        resolved = Path(os.path.realpath(named))
        roots = self.limits.roots
        if roots is not None and not inside(named, roots):
            self.fail(
                key,
                f"{what} {relative!r} resolves to {resolved}, outside the project "
                f"({', '.join(str(r) for r in roots)}); keep suite files inside it",
            )
        try:
            raw = read_capped(named, self.limits.max_bytes)
        except FileRefused as exc:
            self.fail(key, f"{what} {named} {exc}")
        except FileNotFoundError:
            self.fail(key, f"{what} not found: {resolved}")
        except OSError as exc:
            self.fail(key, f"cannot read {what} {resolved}: {exc.strerror or exc}")
        try:
            text = decode_utf8(named, raw, what)
        except SuiteError as exc:
            self.fail(key, f"{what} {named}: {exc.problem}")
        return resolved, text

    def read_file(self, key: KeyPath, relative: str, what: str) -> tuple[str, Path]:
        """The text of a non-empty file named relative to the suite (via :meth:`read_text`)."""
        resolved, text = self.read_text(key, relative, f"{what} file")
        if not text.strip():
            self.fail(key, f"{what} file is empty: {resolved}")
        return text, resolved

    def read_prompt(self, key: KeyPath, given: Any) -> tuple[str, Path | None]:
        """A system prompt: a file relative to the suite (its text and path), or a string in
        the application's code (``{python: package.module:NAME}``, its text and no path)."""
        if isinstance(given, str):
            return self.read_file(key, given, "prompt")
        source: PromptSource = prompt_source(given)
        text = self.from_source(
            key,
            lambda sources: sources.prompt(self.suite_name, self.path, _entry(key), source),
        )
        if not text.strip():
            self.fail(key, f"python: {source.python} is an empty string; a prompt has text")
        return text, None

    def from_source(self, key: KeyPath, ask: Callable[[Sources], _T]) -> _T:
        """What ``ask`` gets from the run's sources; a :class:`SourceProblem` fails ``key``."""
        if self.sources is None:
            self.fail(
                key,
                "this suite reads from the application (python: / mcp:), which only a pytest "
                "run of cardprobe does (it reads the source, or the snapshot recorded beside "
                "the cassettes)",
            )
        try:
            return ask(self.sources)
        except SourceProblem as exc:
            self.fail(key, str(exc))


def _entry(key: KeyPath) -> str:
    return ".".join(str(part) for part in key)


def at_least_of(reader: Reader, key: KeyPath, value: Any, samples: int) -> int | None:
    """A suite's or a case's ``at_least`` (the schema made it an integer >= 1), which may not
    ask more samples to pass than the suite asks for."""
    if value is None:
        return None
    if value > samples:
        reader.fail(
            key,
            f"at_least {value} is more than the suite's {samples} samples; a test cannot "
            f"pass on more samples than it asks for (at most samples: {samples})",
        )
    return int(value)
