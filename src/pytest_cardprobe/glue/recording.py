"""Which suite file a cassette folder belongs to, checked before a run records anything.

Cassettes live under ``<cassette dir>/<suite name>/``, so two suite files that share a
``name:`` would share one folder. Within one run the loader refuses that; across runs
(``pytest cases/other.yaml --live`` today, ``pytest cases/cards.yaml`` tomorrow) only the
cassettes can tell: each one records the suite file it came from, and a recording run whose
suite file differs from the one a folder already holds is a usage error naming both.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pytest_cardprobe.files import shown
from pytest_cardprobe.suite.builtin import BUILTIN_SUITES, builtin_suite_path
from pytest_cardprobe.suite.loader import Suite
from pytest_cardprobe.suite.matrix import Probe
from pytest_cardprobe.wire.cassettes.metadata import CassetteMeta
from pytest_cardprobe.wire.cassettes.paths import cassette_path_problem, path_part
from pytest_cardprobe.wire.cassettes.reading import read_cassette
from pytest_cardprobe.wire.errors import CassetteProblem

#: How many cassettes of a folder are read at most: enough to find a stranger in a folder
#: this plugin wrote (every cassette of one recording run names the same file).
MAX_READ = 2000


def suite_file(suite: Suite, root: Path) -> str:
    """The identity a cassette records for ``suite``: its file relative to ``root``.

    A built-in suite installed outside the project is ``cardprobe:<name>``; in this
    repository the built-in suites are ``cases/`` itself, so they resolve inside the root.
    """
    return file_identity(suite.path, root)


def file_identity(path: Path, root: Path) -> str:
    """A suite file as recordings name it (see :func:`suite_file`)."""
    real = path.resolve()
    try:
        return real.relative_to(root.resolve()).as_posix()
    except ValueError:
        pass
    for name in BUILTIN_SUITES:
        if builtin_suite_path(name).resolve() == real:
            return f"cardprobe:{name}"
    return real.as_posix()


def recorded_from(folder: Path, max_bytes: int) -> dict[str, Path]:
    """The suite files the cassettes under ``folder`` were recorded from, with one example each.

    Cassettes that do not say (recorded before this was kept) or cannot be read are left out.
    """
    found: dict[str, Path] = {}
    if not folder.is_dir():
        return found
    for count, path in enumerate(sorted(folder.rglob("*.yaml"))):
        if count >= MAX_READ:
            break
        try:
            data = read_cassette(path, max_bytes=max_bytes)
        except (CassetteProblem, OSError):
            continue
        source = CassetteMeta.of(data).suite_file
        if source is not None:
            found.setdefault(source, path)
    return found


def clashes(suites: Iterable[tuple[str, str]], cassette_dir: Path, max_bytes: int) -> list[str]:
    """For a recording run over ``(suite name, suite file)`` pairs: the usage errors.

    One per suite whose cassette folder already holds recordings of another suite file.
    """
    problems = []
    for name, source in sorted(set(suites)):
        folder = cassette_dir / path_part(name)
        for other, example in sorted(recorded_from(folder, max_bytes).items()):
            if other == source:
                continue
            problems.append(
                f"{source}: name: suite name {name!r} is also the name of {other}, whose "
                f"recordings are in {shown(folder)} (e.g. {shown(example)}); recording "
                "this suite would overwrite them — rename one suite (its name: key) or move "
                "the other's cassettes"
            )
    return problems


def _short(name: str, limit: int = 60) -> str:
    """``name`` quoted for a message, cut to ``limit`` characters."""
    return repr(name if len(name) <= limit else name[:limit] + "…")


def path_problems(root: Path, probes: list[Probe]) -> list[str]:
    """One line per case (or suite/model) whose cassette path the file system cannot take."""
    found: dict[str, str] = {}
    for p in probes:
        why = cassette_path_problem(root, p.suite.name, p.model, p.case.id, p.channel, p.condition)
        if not why:
            continue
        if why.startswith(("the suite name", "the model name")):
            names = f"suite {_short(p.suite.name)}, model {_short(p.model)}"
            found.setdefault(why, f"{why} ({names})")
        else:
            where = f"cases[id={_short(p.case.id)}] (line {p.case.line})"
            found.setdefault(p.case.id, f"{where}: {why}")
    return list(found.values())
