"""The project's pytest configuration, as the commands read it: the rootdir, the config file
and the ``cardprobe_*`` paths the plugin shares with them (baseline, reports).

The commands run outside pytest and import none of its private modules (``_pytest``): the
config file is found as pytest documents it ("Initialization: determining rootdir and
configfile"), from the current folder upwards. In each folder, the first of these that holds
pytest configuration wins, and its folder is the rootdir:

- ``pytest.toml``, ``.pytest.toml`` (always; table ``[pytest]``),
- ``pytest.ini``, ``.pytest.ini`` (always; section ``[pytest]``),
- ``pyproject.toml`` with ``[tool.pytest.ini_options]`` (or pytest 9's ``[tool.pytest]``),
- ``tox.ini`` with ``[pytest]``, ``setup.cfg`` with ``[tool:pytest]``.

With none, the nearest ``pyproject.toml`` is the config file all the same (without values),
else the nearest folder holding ``setup.py`` is the rootdir, else the current folder. A
relative path in the config file is relative to the rootdir, as the plugin reads it.
TOML is read with ``tomllib``, ini files with ``configparser``. What pytest's command line
could change (``-c``, ``--rootdir``, ``-o``, ``PYTEST_ADDOPTS``) the commands do not see;
their own flags (``--baseline``) stand in for it.
"""

from __future__ import annotations

import configparser
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from pytest_cardprobe.files import folder_typed
from pytest_cardprobe.text import escape_control

#: The ini keys of the paths the commands share with the plugin, and their defaults (the
#: option table, glue/option_table.py, owns them; tests/unit/test_project_config.py checks
#: these names against it).
BASELINE_KEY = "cardprobe_baseline"
DEFAULT_BASELINE = "cardprobe-baseline.json"
JSON_REPORT_KEY = "cardprobe_json"
#: The body keys written as ``[redacted]`` beside the built-in ones: ``capture`` and ``draft``
#: honour the project's list as a run does.
REDACT_FIELDS_KEY = "cardprobe_redact_fields"


class ConfigProblem(Exception):
    """A config file that cannot be read (the message names it and what to do)."""


Values = dict[str, Any]


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        # tomllib recurses into nested arrays and tables: a deep enough file exhausts the stack.
        why = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise ConfigProblem(
            f"{escape_control(str(path))}: cannot read it as TOML ({why}); pytest cannot "
            "either: fix the file"
        ) from None


def _ini(path: Path, section: str) -> Values | None:
    # No DEFAULT section leaking into [pytest]: pytest's own ini reader has none.
    parser = configparser.RawConfigParser(strict=False, default_section="\x00none")
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    try:
        parser.read_string(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError, configparser.Error) as exc:
        raise ConfigProblem(
            f"{escape_control(str(path))}: cannot read it as an ini file "
            f"({escape_control(str(exc))}); fix the file"
        ) from None
    return dict(parser[section]) if parser.has_section(section) else None


def _pytest_toml(path: Path) -> Values | None:
    table = _toml(path).get("pytest", {})
    return dict(table) if isinstance(table, dict) else {}


def _pytest_ini(path: Path) -> Values | None:
    return _ini(path, "pytest") or {}


def _pyproject(path: Path) -> Values | None:
    tool = _toml(path).get("tool", {})
    table = tool.get("pytest") if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        return None
    legacy = table.get("ini_options")
    native = {k: v for k, v in table.items() if k != "ini_options"}
    if native or not isinstance(legacy, dict):
        return native or None
    return dict(legacy)


#: The files pytest looks for in each folder, in its order, and how each is read: None when
#: the file holds no pytest configuration (and the search goes on).
CONFIG_FILES: dict[str, Callable[[Path], Values | None]] = {
    "pytest.toml": _pytest_toml,
    ".pytest.toml": _pytest_toml,
    "pytest.ini": _pytest_ini,
    ".pytest.ini": _pytest_ini,
    "pyproject.toml": _pyproject,
    "tox.ini": lambda path: _ini(path, "pytest"),
    "setup.cfg": lambda path: _ini(path, "tool:pytest"),
}


@dataclass(frozen=True)
class Project:
    """Where pytest would root a run started in a folder, and its configuration values."""

    rootdir: Path
    configfile: Path | None
    values: Mapping[str, Any] = field(default_factory=dict)

    def where(self, key: str) -> str:
        """``ini key cardprobe_baseline in /x/pyproject.toml``: where a value came from."""
        return f"ini key {key} in {escape_control(str(self.configfile))}"

    @overload
    def path(self, key: str) -> Path | None: ...
    @overload
    def path(self, key: str, default: str) -> Path: ...

    def path(self, key: str, default: str | None = None) -> Path | None:
        """The file the ini ``key`` names (relative: to the rootdir), else ``default`` in the
        rootdir, else None."""
        raw = self.values.get(key)
        if raw is None:
            return None if default is None else self.rootdir / default
        if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
            raise ConfigProblem(f"{self.where(key)} wants a file path, got {raw!r}")
        problem = folder_typed(raw)
        if problem:
            raise ConfigProblem(f"{self.where(key)} {problem}")
        return self.rootdir / raw.strip()


def ini_lines(project: Project, key: str) -> list[str]:
    """A ``linelist`` ini value as pytest reads it: one item a line (a TOML list item by
    item), blank ones dropped; [] when the key is not set."""
    raw = project.values.get(key)
    if raw is None:
        return []
    items = raw.splitlines() if isinstance(raw, str) else raw
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        shown = escape_control(repr(raw))
        raise ConfigProblem(f"{project.where(key)} wants one name a line, got {shown[:80]}")
    return [item.strip() for item in items if item.strip()]


def find_project(start: Path) -> Project:
    """The project ``start`` is in, found as pytest finds its rootdir and config file."""
    start = Path(start).absolute()
    first_pyproject = None
    for folder in (start, *start.parents):
        for name, read in CONFIG_FILES.items():
            path = folder / name
            if not path.is_file():
                continue
            if name == "pyproject.toml" and first_pyproject is None:
                first_pyproject = path
            values = read(path)
            if values is not None:
                return Project(folder, path, values)
    if first_pyproject is not None:
        return Project(first_pyproject.parent, first_pyproject)
    for folder in (start, *start.parents):
        if (folder / "setup.py").is_file():
            return Project(folder, None)
    return Project(start, None)


def redact_keys(given: Sequence[str]) -> list[str] | None:
    """The body keys ``capture`` and ``draft`` blank: the built-in ones, the project's ini
    ``cardprobe_redact_fields`` (the project of the working folder; a run blanks the same)
    and the command's ``--redact-field`` keys. None, the problem said on stderr, when the
    project's config cannot be read (the command then exits 2)."""
    import sys

    from pytest_cardprobe.wire.redact import DEFAULT_REDACT_FIELDS

    try:
        project_fields = ini_lines(find_project(Path.cwd()), REDACT_FIELDS_KEY)
    except ConfigProblem as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    return [*DEFAULT_REDACT_FIELDS, *project_fields, *given]
