"""Adding the starter's ini key to the project's pytest config file, keeping what is there.

An existing config file is only added to: keys that are already set keep their values, and
the result is parsed again and compared with the original before it is written. ``testpaths``
is never touched: what a plain ``pytest`` collects — the command a project's CI runs — stays
what it was; a note says where the starter stands (``testpaths_note``).
"""

from __future__ import annotations

import codecs
import configparser
import copy
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
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
    notes: list[str] = field(default_factory=list)


def _toml_value(values: Sequence[str]) -> str:
    return "[" + ", ".join(_toml_string(v) for v in values) + "]"


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _wanted(models: Sequence[str]) -> dict[str, list[str]]:
    return {"cardprobe_models": list(models)}


def _as_list(value: object) -> list[str]:
    """An ini value (text, one item per line or word) or a TOML list, as a list of strings."""
    return value.split() if isinstance(value, str) else [str(v) for v in value]  # type: ignore[attr-defined]


def _keep_notes(existing: dict[str, Any], where: str, wanted_models: Sequence[str]) -> list[str]:
    """What init leaves alone in a config file (models already set)."""
    models = existing.get("cardprobe_models")
    if models is not None and _as_list(models) != _wanted(wanted_models)["cardprobe_models"]:
        return [f"{where}: cardprobe_models is set already ({' '.join(_as_list(models))}); kept"]
    return []


def testpaths_note(existing: dict[str, Any], where: str) -> str:
    """Where the starter stands with the project's ``testpaths`` (which init leaves alone)."""
    paths = existing.get("testpaths")
    listed = _as_list(paths) if paths is not None else None
    reach = (PurePosixPath(STARTER_DIR), PurePosixPath("."))
    if listed is not None and not any(PurePosixPath(p) in reach for p in listed):
        return (
            f"{where}: testpaths ({' '.join(listed)}) leaves {STARTER_DIR}/ out, so a plain "
            f"`pytest` runs what it ran before; run the probes with `pytest {STARTER_DIR}`"
        )
    return (
        f"{where}: a plain `pytest` collects {STARTER_DIR}/ too: until they are recorded its "
        'probes are skipped (never recorded), not failed; `-m "not cardprobe"` leaves the '
        "probes out of a run, `-m cardprobe` runs only them"
    )


def _section_span(rows: list[str], header: re.Pattern[str], any_header: re.Pattern[str]) -> range:
    """The rows after the header that matches, up to the next section's header."""
    start = next(i for i, row in enumerate(rows) if header.match(row))
    end = next((i for i in range(start + 1, len(rows)) if any_header.match(rows[i])), len(rows))
    return range(start + 1, end)


# A line that starts a section: ``[name]`` at column 0 in ini files; ``[a.b]`` or ``[[a]]``,
# maybe indented, in TOML (a line of a multi-line array such as ``["x", "y"],`` is not one).
INI_HEADER = re.compile(r"^\[")
TOML_HEADER = re.compile(r"""^\s*\[\[?\s*[\w"'.\- ]+\]\]?\s*(#.*)?$""")


def read_config(path: Path) -> tuple[str, str, str]:
    """A config file's text as it is (line ends kept), its line end and its byte-order mark.

    Edits add lines with the line end most of the file uses and keep a UTF-8 BOM, so a CRLF
    file stays CRLF; a file that is not UTF-8 is refused rather than rewritten in another
    encoding.
    """
    data = path.read_bytes()
    bom = "\ufeff" if data.startswith(codecs.BOM_UTF8) else ""
    try:
        text = data[len(bom.encode()) :].decode("utf-8")
    except UnicodeDecodeError:
        raise InitError(
            f"{path}: not UTF-8 text; init edits UTF-8 files only, add its lines yourself"
        ) from None
    newline = "\r\n" if text.count("\r\n") * 2 > text.count("\n") else "\n"
    return text, newline, bom


def _appended(text: str, block: list[str], nl: str) -> str:
    """``block`` (lines) after ``text``, one blank line between them."""
    sep = (
        "" if not text or text.endswith(2 * nl) else (nl if text.endswith(("\n", "\r")) else 2 * nl)
    )
    return text + sep + "".join(f"{line}{nl}" for line in block)


def _insert_after_section(
    text: str, header: re.Pattern[str], lines: list[str], any_header: re.Pattern[str], nl: str
) -> str:
    """``lines`` added at the end of the section whose header matches, before the next one."""
    rows = text.splitlines(keepends=True)
    span = _section_span(rows, header, any_header)
    # Insert after the section's last line with content, so blank lines stay between sections.
    last = span.stop
    while last > span.start and not rows[last - 1].strip():
        last -= 1
    if rows[last - 1] and not rows[last - 1].endswith(("\n", "\r")):
        rows[last - 1] += nl
    return "".join([*rows[:last], *(f"{line}{nl}" for line in lines), *rows[last:]])


def _toml_change(path: Path, table: tuple[str, ...], models: Sequence[str]) -> Change | list[str]:
    """Add the missing keys to ``table`` of a TOML file; notes instead when nothing is added."""
    text, nl, bom = read_config(path)
    shown = ".".join(table)
    where = f"{path.name} [{shown}]"
    try:
        before = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise InitError(
            f"{path}: not valid TOML ({_toml_problem(exc)}); fix it and run init again"
        ) from None
    current: Any = before
    for part in table:
        current = current.get(part, {}) if isinstance(current, dict) else {}
    existing = dict(current) if isinstance(current, dict) else {}
    add = {k: v for k, v in _wanted(models).items() if k not in existing}
    notes = _keep_notes(existing, where, models)
    pattern = re.compile(
        r"^\s*\[\s*" + r"\s*\.\s*".join(map(re.escape, table)) + r"\s*\]\s*(#.*)?$"
    )
    has_header = any(pattern.match(row) for row in text.splitlines())
    notes.append(testpaths_note(existing, where))
    if not add:
        return notes
    lines = [f"{key} = {_toml_value(values)}" for key, values in add.items()]
    expected = dict(add)
    if has_header:
        new = _insert_after_section(text, pattern, lines, TOML_HEADER, nl)
        summary = f"add to [{shown}]"
    elif existing or _table_defined(before, table):
        raise InitError(
            f"{path}: [{shown}] is written in a form init does not edit (dotted keys or an "
            f"inline table); add these lines to it yourself: " + "; ".join(lines)
        )
    else:
        lines = [f"[{shown}]", *lines]
        new = _appended(text, lines, nl)
        summary = f"add a [{shown}] table"
    _check_toml_kept(path, before, new, table, expected)
    return Change(path, bom + new, True, summary, lines, notes)


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
    except (tomllib.TOMLDecodeError, RecursionError):
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
        if len(values) == 1:
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
    text, nl, bom = read_config(path) if existed else ("", "\n", "")
    where = f"{path.name} [{section}]"
    before = _read_ini(path, text)
    existing = dict(before.items(section)) if before.has_section(section) else {}
    add = {k: v for k, v in _wanted(models).items() if k not in existing}
    notes = _keep_notes(existing, where, models)
    header = re.compile(r"^\[" + re.escape(section) + r"\]\s*$")
    notes.append(testpaths_note(existing, where))
    if not add:
        return notes
    lines = _ini_lines(add)
    changed = dict(existing)
    if before.has_section(section):
        new = _insert_after_section(text, header, lines, INI_HEADER, nl)
        summary = f"add to [{section}]"
    else:
        lines = [f"[{section}]", *lines]
        new = _appended(text, lines, nl)
        summary = f"add a [{section}] section" if existed else f"create with a [{section}] section"
    after = _read_ini(path, new)
    kept = all(
        after.has_section(s) and dict(after.items(s)) == dict(before.items(s))
        for s in before.sections()
        if s != section
    ) and all(after.get(section, k) == v for k, v in changed.items())
    if not kept or not all(after.has_option(section, k) for k in add):
        raise InitError(f"{path}: could not add the ini lines without changing other content")
    return Change(path, bom + new, existed, summary, lines, notes)


def _toml_problem(exc: Exception) -> str:
    # tomllib recurses into nested arrays and tables: a deep enough file exhausts the stack.
    return "nested too deeply to read" if isinstance(exc, RecursionError) else str(exc)


def _table(path: Path, data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The table at ``keys`` ({} when absent); InitError when a key on the way is no table."""
    found: Any = data
    for depth, key in enumerate(keys, start=1):
        found = found.get(key, {})
        if not isinstance(found, dict):
            kind = {str: "a string", list: "a list", bool: "a boolean"}.get(type(found))
            kind = kind or ("a number" if isinstance(found, int | float) else "a date or time")
            raise InitError(
                f"{path}: {'.'.join(keys[:depth])} is {kind}, not a table, so init cannot add "
                "its settings: fix the file first"
            )
    return dict(found)


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
            data = tomllib.loads(read_config(pyproject)[0])
        except (tomllib.TOMLDecodeError, RecursionError) as exc:
            raise InitError(
                f"{pyproject}: not valid TOML ({_toml_problem(exc)}); fix it first"
            ) from None
        tool_pytest = _table(pyproject, data, ("tool", "pytest"))
        if any(key != "ini_options" for key in tool_pytest):
            return _toml_change(pyproject, ("tool", "pytest"), models)
        if tool_pytest:
            return _toml_change(pyproject, ("tool", "pytest", "ini_options"), models)
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        path = root / name
        if path.is_file() and _read_ini(path, read_config(path)[0]).has_section(section):
            return _ini_change(path, section, models)
    if pyproject.is_file():
        return _toml_change(pyproject, ("tool", "pytest", "ini_options"), models)
    return _ini_change(root / "pytest.ini", "pytest", models)
