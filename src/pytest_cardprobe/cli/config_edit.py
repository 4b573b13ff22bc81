"""Adding the starter's ini keys to the project's pytest config file, keeping what is there.

An existing config file is only added to: keys that are already set keep their values, and
the result is parsed again and compared with the original before it is written.
"""

from __future__ import annotations

import configparser
import copy
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cardprobe.cli.starter import STARTER_DIR


class InitError(Exception):
    """Why init wrote nothing (printed as is)."""


@dataclass
class Change:
    """One file init would write: its new text and what the user should be told about it."""

    path: Path
    text: str
    existed: bool
    summary: str
    added_lines: list[str] = field(default_factory=list)


def _toml_value(values: Sequence[str]) -> str:
    return "[" + ", ".join(_toml_string(v) for v in values) + "]"


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _wanted(models: Sequence[str]) -> dict[str, list[str]]:
    return {"cardprobe_models": list(models), "testpaths": [STARTER_DIR]}


def _as_list(value: object) -> list[str]:
    """An ini value (text, one item per line or word) or a TOML list, as a list of strings."""
    return value.split() if isinstance(value, str) else [str(v) for v in value]  # type: ignore[attr-defined]


def _keep_notes(existing: dict[str, Any], where: str, wanted_models: Sequence[str]) -> list[str]:
    """What init leaves alone in a config file, and what the user may want to do about it."""
    notes = []
    models = existing.get("cardprobe_models")
    if models is not None and _as_list(models) != _wanted(wanted_models)["cardprobe_models"]:
        notes.append(
            f"{where}: cardprobe_models is set already ({' '.join(_as_list(models))}); kept"
        )
    paths = existing.get("testpaths")
    if paths is not None:
        listed = _as_list(paths)
        if STARTER_DIR not in listed:
            notes.append(
                f"{where}: testpaths is set already ({' '.join(map(str, listed))}); kept — add "
                f"{STARTER_DIR} to it, or run `pytest {STARTER_DIR}`, to collect the starter"
            )
    return notes


# A line that starts a section: ``[name]`` at column 0 in ini files; ``[a.b]`` or ``[[a]]``,
# maybe indented, in TOML (a line of a multi-line array such as ``["x", "y"],`` is not one).
INI_HEADER = re.compile(r"^\[")
TOML_HEADER = re.compile(r"""^\s*\[\[?\s*[\w"'.\- ]+\]\]?\s*(#.*)?$""")


def _insert_after_section(
    text: str, header: re.Pattern[str], lines: list[str], any_header: re.Pattern[str]
) -> str:
    """``lines`` added at the end of the section whose header matches, before the next one."""
    rows = text.splitlines(keepends=True)
    start = next(i for i, row in enumerate(rows) if header.match(row))
    end = next((i for i in range(start + 1, len(rows)) if any_header.match(rows[i])), len(rows))
    # Insert after the section's last line with content, so blank lines stay between sections.
    last = end
    while last > start + 1 and not rows[last - 1].strip():
        last -= 1
    if rows[last - 1] and not rows[last - 1].endswith("\n"):
        rows[last - 1] += "\n"
    return "".join([*rows[:last], *(f"{line}\n" for line in lines), *rows[last:]])


def _toml_change(path: Path, table: tuple[str, ...], models: Sequence[str]) -> Change | list[str]:
    """Add the missing keys to ``table`` of a TOML file; notes instead when nothing is added."""
    text = path.read_text(encoding="utf-8")
    shown = ".".join(table)
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InitError(f"{path}: not valid TOML ({exc}); fix it and run init again") from None
    current: Any = before
    for part in table:
        current = current.get(part, {}) if isinstance(current, dict) else {}
    existing = dict(current) if isinstance(current, dict) else {}
    add = {k: v for k, v in _wanted(models).items() if k not in existing}
    notes = _keep_notes(existing, f"{path.name} [{shown}]", models)
    if not add:
        return notes
    lines = [f"{key} = {_toml_value(values)}" for key, values in add.items()]
    pattern = re.compile(
        r"^\s*\[\s*" + r"\s*\.\s*".join(map(re.escape, table)) + r"\s*\]\s*(#.*)?$"
    )
    if any(pattern.match(row) for row in text.splitlines()):
        new = _insert_after_section(text, pattern, lines, TOML_HEADER)
        summary = f"add to [{shown}]"
    elif existing or _table_defined(before, table):
        raise InitError(
            f"{path}: [{shown}] is written in a form init does not edit (dotted keys or an "
            f"inline table); add these lines to it yourself: " + "; ".join(lines)
        )
    else:
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        new = text + sep + f"[{shown}]\n" + "".join(f"{line}\n" for line in lines)
        lines = [f"[{shown}]", *lines]
        summary = f"add a [{shown}] table"
    _check_toml_kept(path, before, new, table, add)
    return Change(path, new, True, summary, lines)


def _table_defined(data: dict[str, Any], table: tuple[str, ...]) -> bool:
    current: Any = data
    for part in table:
        if not isinstance(current, dict) or part not in current:
            return False
        current = current[part]
    return True


def _check_toml_kept(
    path: Path, before: dict[str, Any], new: str, table: tuple[str, ...], add: dict[str, Any]
) -> None:
    """The edited file must parse to the old content plus exactly the added keys."""
    expected = copy.deepcopy(before)
    target = expected
    for part in table:
        target = target.setdefault(part, {})
    target.update(add)
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        after = None
    if after != expected:
        raise InitError(
            f"{path}: init could not add its lines here without changing other content; "
            "add them to ["
            + ".".join(table)
            + "] yourself: "
            + "; ".join(f"{key} = {_toml_value(values)}" for key, values in add.items())
        )


def _ini_lines(add: dict[str, list[str]]) -> list[str]:
    lines = []
    for key, values in add.items():
        if key == "testpaths":  # an args-type key: one line, separated by spaces
            lines.append(f"{key} = {' '.join(values)}")
        elif len(values) == 1:
            lines.append(f"{key} = {values[0]}")
        else:  # a linelist key: one value per indented line
            lines.extend([f"{key} =", *(f"    {value}" for value in values)])
    return lines


def _read_ini(path: Path, text: str) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        raise InitError(f"{path}: cannot be read as an ini file ({exc})") from None
    return parser


def _ini_change(path: Path, section: str, models: Sequence[str]) -> Change | list[str]:
    """Add the missing keys to ``[section]`` of an ini-style file (created when missing)."""
    existed = path.exists()
    text = path.read_text(encoding="utf-8") if existed else ""
    before = _read_ini(path, text)
    existing = dict(before.items(section)) if before.has_section(section) else {}
    add = {k: v for k, v in _wanted(models).items() if k not in existing}
    notes = _keep_notes(existing, f"{path.name} [{section}]", models)
    if not add:
        return notes
    lines = _ini_lines(add)
    if before.has_section(section):
        header = re.compile(r"^\[" + re.escape(section) + r"\]\s*$")
        new = _insert_after_section(text, header, lines, INI_HEADER)
        summary = f"add to [{section}]"
    else:
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        new = text + sep + f"[{section}]\n" + "".join(f"{line}\n" for line in lines)
        lines = [f"[{section}]", *lines]
        summary = f"add a [{section}] section" if existed else f"create with a [{section}] section"
    after = _read_ini(path, new)
    kept = all(
        after.has_section(s) and dict(after.items(s)) == dict(before.items(s))
        for s in before.sections()
        if s != section
    ) and all(after.get(section, k) == v for k, v in existing.items())
    if not kept or not all(after.has_option(section, k) for k in add):
        raise InitError(f"{path}: could not add the ini lines without changing other content")
    return Change(path, new, existed, summary, lines)


def config_change(root: Path, models: Sequence[str]) -> Change | list[str]:
    """The edit to the config file pytest would read in ``root``, or notes when none is needed.

    The file is the one pytest itself picks (its own order); with none, a ``pyproject.toml``
    gets a ``[tool.pytest.ini_options]`` table, else a ``pytest.ini`` is created.
    """
    for name in ("pytest.toml", ".pytest.toml"):
        if (root / name).is_file():
            return _toml_change(root / name, ("pytest",), models)
    for name in ("pytest.ini", ".pytest.ini"):
        if (root / name).is_file():
            return _ini_change(root / name, "pytest", models)
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            tool_pytest = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise InitError(f"{pyproject}: not valid TOML ({exc}); fix it first") from None
        tool_pytest = tool_pytest.get("tool", {}).get("pytest", {})
        if any(key != "ini_options" for key in tool_pytest):
            return _toml_change(pyproject, ("tool", "pytest"), models)
        if tool_pytest:
            return _toml_change(pyproject, ("tool", "pytest", "ini_options"), models)
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        path = root / name
        if path.is_file() and _read_ini(path, path.read_text(encoding="utf-8")).has_section(
            section
        ):
            return _ini_change(path, section, models)
    if pyproject.is_file():
        return _toml_change(pyproject, ("tool", "pytest", "ini_options"), models)
    return _ini_change(root / "pytest.ini", "pytest", models)
