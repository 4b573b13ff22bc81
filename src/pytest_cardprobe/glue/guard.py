"""What the plugin may read and write, checked at configure and collection time.

Paths come from suites, ini keys and the command line. A path the user typed on the command
line may point anywhere (that is an explicit choice); anything else (ini keys, suite keys)
must stay inside the project: pytest's rootdir or the cassette folder. Outputs (baseline,
reports) are checked before the first test runs, so a typo costs seconds, not a live run.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from pytest_cardprobe.files import MB, inside
from pytest_cardprobe.glue.option_table import BY_NAME
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.suite.loader import Suite, SuiteLimits
from pytest_cardprobe.wire.slots import private_dir, slot_dir


def _arg_path(arg: str, invoked: Path) -> Path:
    path = Path(arg.split("::", 1)[0])
    return path if path.is_absolute() else invoked / path


def read_roots(config: pytest.Config, settings: Settings) -> tuple[Path, ...]:
    """Folders a suite may read files from: rootdir, the cassette folder, and whatever the
    command line named outside them (a suite given by path keeps its prompts next to it)."""
    roots = [Path(str(config.rootpath)), settings.cassette_dir]
    invoked = Path(str(config.invocation_params.dir))
    for arg in config.args:
        path = _arg_path(arg, invoked)
        if path.exists():
            roots.append(path if path.is_dir() else path.parent)
    if settings.suites:
        # Built-in suites read their prompts and tool files from the package.
        from pytest_cardprobe.suite.builtin import SUITES_DIR

        roots.append(SUITES_DIR.resolve())
    return tuple(roots)


def suite_limits(config: pytest.Config, settings: Settings) -> SuiteLimits:
    """The limits suites of this run are loaded with."""
    return SuiteLimits(
        roots=read_roots(config, settings),
        max_bytes=int(settings.max_file_mb * MB),
        max_samples=settings.max_samples,
        max_turns=settings.max_turns,
    )


def _writable_problem(path: Path) -> str | None:
    """Why a file could not be written at ``path``, found by trying, or None.

    The nearest existing folder gets a temporary file that is removed at once: permission
    bits alone do not tell (root ignores them, read-only mounts and /proc do not).
    """
    if path.is_dir():
        return "is a directory"
    if path.exists() and not path.is_file():
        return "exists and is not a regular file"
    folder = path.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        return f"cannot be created: {folder} is a file, not a folder"
    try:
        fd, tmp = tempfile.mkstemp(prefix=".cardprobe-check.", dir=folder)
    except OSError as exc:
        return f"cannot be written in {folder}: {exc.strerror or exc}"
    os.close(fd)
    os.unlink(tmp)
    return None


def _outside(path: Path, config: pytest.Config) -> bool:
    return not inside(path, [Path(str(config.rootpath))])


#: The settings of the report files a run writes.
REPORTS = ("json_report", "md_report", "html_report")


def check_outputs(config: pytest.Config, settings: Settings) -> list[str]:
    """Problems with where this run would write; [] when none.

    Called at configure time, before any test runs. A path typed on the command line may be
    anywhere; one from an ini key must stay inside the project (rootdir).
    """
    errors: list[str] = []
    for name in ("cassette_dir", "baseline", *REPORTS):
        spec = BY_NAME[name]
        path = getattr(settings, name)
        if path is not None and name not in settings.command_line and _outside(path, config):
            errors.append(
                f"ini key {spec.ini}: {path} is outside the project ({config.rootpath}); "
                f"use a path inside it, or give {spec.flag} on the command line to mean it"
            )
    if settings.live:
        try:  # created (or checked) now, so a foreign one stops the run before any request
            private_dir(slot_dir())
        except OSError as exc:
            errors.append(str(exc))
    cassettes = settings.cassette_dir
    if cassettes.exists() and not cassettes.is_dir():
        errors.append(f"cassette folder {cassettes} (--cardprobe-cassette-dir) is not a folder")
    if settings.live and not errors:
        problem = _writable_problem(cassettes / ".probe")
        if problem:
            errors.append(f"cassette folder {cassettes} (--cardprobe-cassette-dir): {problem}")
    # The baseline's content is read and checked once, by CardprobeState.read_baselines; here only
    # whether --cardprobe-update-baseline could write it.
    baseline = settings.baseline
    if settings.update_baseline:
        problem = _writable_problem(baseline)
        if problem:
            errors.append(
                f"baseline {baseline} (--cardprobe-baseline with --cardprobe-update-baseline): "
                f"{problem}"
            )
    config_file = Path(str(config.inipath)) if config.inipath else None
    if settings.update_baseline:
        clash = _clash(baseline, settings, config_file, is_baseline=True)
        if clash:
            errors.append(f"baseline {baseline} (--cardprobe-update-baseline): {clash}")
    written: dict[str, str] = {}
    outputs: list[tuple[str, Path | None]] = []
    for name in REPORTS:
        spec, report = BY_NAME[name], getattr(settings, name)
        flag = str(spec.flag) if name in settings.command_line else f"ini key {spec.ini}"
        outputs.append((flag, report))
    # pytest's own --junitxml is written at the end of the run like a report: it must not
    # land on the baseline, a recording, a suite or the configuration either.
    junit = getattr(config.option, "xmlpath", None)
    outputs.append(("--junitxml", Path(os.path.expanduser(junit)) if junit else None))
    for flag, report in outputs:
        if report is not None:
            problem = _clash(report, settings, config_file)
            if not problem and flag != "--junitxml":
                problem = _writable_problem(report)
            real = os.path.realpath(report)
            if not problem and real in written:
                problem = f"is the file {written[real]} writes too; give each report its own"
            written.setdefault(real, flag)
            if problem:
                errors.append(f"{flag} {report}: {problem}")
    return errors


def _clash(
    path: Path, settings: Settings, config_file: Path | None, is_baseline: bool = False
) -> str | None:
    """Why writing an output at ``path`` would destroy one of the run's inputs, or None.

    Links are resolved first: a report that is the baseline (or a link to it) would replace
    the verdicts it is compared with, one in the cassette folder would be a recording no
    more, one that is a suite would be the run's own cases, and one that is the pytest
    configuration file would be the project's settings.
    """
    from pytest_cardprobe.suite.loader import is_suite_file

    real = Path(os.path.realpath(path))
    if config_file is not None and real == Path(os.path.realpath(config_file)):
        return (
            f"is the pytest configuration file {config_file}, which the file would replace; "
            "write it somewhere else"
        )
    if not is_baseline and real == Path(os.path.realpath(settings.baseline)):
        return (
            f"resolves to the baseline ({settings.baseline}), which the report would replace; "
            "write the report somewhere else"
        )
    if inside(real, [settings.cassette_dir]):
        return (
            f"is inside the cassette folder {settings.cassette_dir}, where every file is a "
            "recording; write it somewhere else"
        )
    if real.is_file() and is_suite_file(real):
        return "is a cardprobe suite, which the file would replace; write it somewhere else"
    return None


def suite_inputs(suite: Suite) -> list[Path]:
    """The files ``suite`` was read from: itself, its prompts, its tools file."""
    read = [suite.path, *suite.prompt_files.values()]
    return read + ([suite.tools_file] if suite.tools_file else [])


def input_clashes(settings: Settings, suite: Suite) -> list[str]:
    """Outputs that would replace a file ``suite`` is read from (the suite itself, a prompt,
    its tools file); checked when the suite is collected, before any test runs."""
    real = {os.path.realpath(p): p for p in suite_inputs(suite)}
    outputs = [("--cardprobe-json", settings.json_report), ("--cardprobe-md", settings.md_report),
               ("--cardprobe-html", settings.html_report)]  # fmt: skip
    if settings.update_baseline:
        outputs.append(("--cardprobe-baseline", settings.baseline))
    return [
        f"{flag} {path}: is {real[os.path.realpath(path)]}, which the suite {suite.name!r} "
        "reads, and the file would replace it; write it somewhere else"
        for flag, path in outputs
        if path is not None and os.path.realpath(path) in real
    ]


def hidden_in_path(path: Path, root: Path) -> str | None:
    """Why a suite at ``path`` would put a hidden character (a bidi override, a control) into
    its test ids, which pytest prints raw: the part of the path below ``root`` holds one."""
    from pytest_cardprobe.text import hidden_character

    try:
        shown = str(path.relative_to(root))
    except ValueError:
        shown = str(path)
    found = hidden_character(shown)
    if found is None:
        return None
    return (
        f"{shown.encode('unicode_escape').decode('ascii')}: the path holds {found}, which "
        "would make the test ids of this suite read as something else; rename the file or "
        "folder"
    )
