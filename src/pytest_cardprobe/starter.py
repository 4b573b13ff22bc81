"""``python -m pytest_cardprobe init [DIR]``: a starter suite and its ini lines for a project.

Nothing is written unless everything can be: when a file init would write or edit already
exists, it says what would change and stops, and ``--force`` lets it go ahead. Even then an
existing config file is only added to: keys that are already set keep their values, and the
result is parsed again and compared with the original before it is written.
"""

from __future__ import annotations

import argparse
import configparser
import copy
import re
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_cardprobe.files import write_atomically
from pytest_cardprobe.suite.builtin import builtin_suite_path

#: The folder the starter goes into (and what ``testpaths`` names).
STARTER_DIR = "cardprobe"
STARTER_SUITE = "my-cards"
STARTER_TOOLS_SUITE = "my-tools"
#: The model written to ``cardprobe_models`` when ``--model`` is not given: the tiny model
#: this project's own tests use (``ollama pull smollm2:135m``); change it to yours.
DEFAULT_MODEL = "smollm2:135m"

_HEADER = """\
# A starter cardprobe suite, written by `python -m pytest_cardprobe init`. It is yours now:
# edit the cases, add your own, rename it. Every case becomes one pytest test per model,
# channel and condition; `pytest --live` records the model's replies under cassettes/,
# plain `pytest` replays them offline. Reference: the built-in suite
# (`pytest --cardprobe-suite cards`) and the README of pytest-cardprobe.
cardprobe: 1
name: {name}
judge: card
# prose: the card comes back as JSON text; tool: as the `body` argument of the tool below.
channels: [prose, tool]
# cold: the question comes first; history: after the two prose turns under `history`.
conditions: [cold, history]
# Each test asks this many times and passes only if every answer passes.
samples: 2

# System prompts, relative to this file (copied from the built-in cards suite).
prompts:
  prose: prompts/prose.md
  tool: prompts/tool.md

"""

_CASES = """
cases:
  # `accept`: the Adaptive Card element types that would answer the question.
  - id: meeting_day
    prompt: Let me choose the day for our next team meeting.
    accept: [Input.Date]
  - id: parcel_alerts
    prompt: Should I get a text when my parcel arrives? Let me switch that on or off.
    accept: [Input.Toggle]
  - id: weekly_steps
    prompt: Show how many steps I walked on each day of this week.
    accept: [Chart.VerticalBar, Chart.HorizontalBar, Chart.Line]
  - id: open_orders
    prompt: List my three open orders with their number, total and delivery status.
    accept: [Table, FactSet]
  # A negative control: a plain question whose right answer is prose, not a card.
  - id: plain_question
    prompt: How many minutes are there in a day?
    accept: []
"""


# A call suite: does the model call the tools your application declares, with the right
# arguments, and leave them alone when no tool fits? Its prompt comes from the built-in
# tools suite; the tools are declared inline here (point `tools:` at a JSON or YAML file to
# use the very file your application sends).
_TOOLS_SUITE = """\
# A starter call suite, written by `python -m pytest_cardprobe init`. Replace the tools with
# yours; each case says which call a good answer makes, or that no tool fits.
cardprobe: 1
name: {name}
judge: call
conditions: [cold]
samples: 2
prompts:
  call: prompts/call.md
options:
  num_predict: 160
tools:
  - type: function
    function:
      name: get_weather
      description: Current weather for one city.
      parameters:
        type: object
        properties:
          city: {{type: string, description: The city name, e.g. Lisbon.}}
          unit: {{type: string, enum: [celsius, fahrenheit], description: Temperature unit.}}
        required: [city]
  - type: function
    function:
      name: set_reminder
      description: Remind the user of something at a given time today.
      parameters:
        type: object
        properties:
          text: {{type: string, description: What to remind the user of.}}
          time: {{type: string, description: Time of day as HH:MM, 24-hour clock.}}
        required: [text, time]
cases:
  - id: weather_lisbon
    prompt: Is it raining in Lisbon right now?
    expect:
      call: get_weather
      args: {{city: {{regex: "(?i)lisbon"}}}}
  - id: remind_call
    prompt: Remind me to call the dentist at 15:30.
    expect:
      call: set_reminder
      args: {{time: "15:30", text: {{contains: dentist, ignore_case: true}}}}
  # Irrelevance: no tool fits, so any call is an over-call.
  - id: capital_question
    prompt: What is the capital of Norway?
    expect:
      no_call: true
"""

# Blocks taken from the built-in cards suite, with what each is for.
_SHARED = (
    ("options", "Extra request options; num_predict caps a rambling reply."),
    ("tool", "The function the tool channel declares; nothing ever runs it."),
    ("history", "The two prose turns the history condition puts before each question."),
)


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


@dataclass
class Plan:
    """Everything init would do in one project folder."""

    changes: list[Change]
    notes: list[str]


# ------------------------------------------------------------------------ the starter suite


def starter_files(root: Path) -> dict[Path, str]:
    """The starter card and call suites and their prompt files, built from the built-in ones."""
    cards = builtin_suite_path("cards")
    data = yaml.safe_load(cards.read_text(encoding="utf-8"))
    # The tool declaration, history and options come from the built-in suite so the two
    # start out asking the same way; only the questions are the starter's own.
    body = "".join(
        f"# {comment}\n"
        + yaml.safe_dump({key: data[key]}, sort_keys=False, width=92, allow_unicode=True)
        + "\n"
        for key, comment in _SHARED
        if key in data
    )
    suite = _HEADER.format(name=STARTER_SUITE) + body + _CASES
    folder = root / STARTER_DIR
    files = {folder / f"{STARTER_SUITE}.yaml": suite}
    for channel, relative in data["prompts"].items():
        source = cards.parent / relative
        files[folder / "prompts" / f"{channel}.md"] = source.read_text(encoding="utf-8")
    tools = builtin_suite_path("tools")
    tools_data = yaml.safe_load(tools.read_text(encoding="utf-8"))
    files[folder / f"{STARTER_TOOLS_SUITE}.yaml"] = _TOOLS_SUITE.format(name=STARTER_TOOLS_SUITE)
    files[folder / "prompts" / "call.md"] = (
        tools.parent / tools_data["prompts"]["call"]
    ).read_text(encoding="utf-8")
    return files


# ------------------------------------------------------------------------ config files


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


# ------------------------------------------------------------------------ the command


def plan(root: Path, models: Sequence[str]) -> Plan:
    """What init would write in ``root``."""
    changes = []
    for path, text in starter_files(root).items():
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue  # already there as init would write it
        changes.append(
            Change(path, text, path.exists(), "overwrite" if path.exists() else "create")
        )
    config = config_change(root, models)
    notes: list[str] = []
    if isinstance(config, Change):
        changes.append(config)
    else:
        notes.extend(config)
    return Plan(changes, notes)


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def run(root: Path, models: Sequence[str], force: bool, out: Any = None) -> int:
    """Write the starter into ``root``; 1 without writing anything when it would change files."""
    out = out or sys.stdout
    try:
        todo = plan(root, models)
    except InitError as exc:
        print(f"init: {exc}", file=sys.stderr)
        return 1
    clashes = [c for c in todo.changes if c.existed]
    if clashes and not force:
        print("init: nothing written; these files exist and would change:", file=sys.stderr)
        for change in clashes:
            print(f"  {_shown(change.path, root)}: {change.summary}", file=sys.stderr)
            for line in change.added_lines:
                print(f"      + {line}", file=sys.stderr)
        print(
            "run again with --force to write them (ini keys already set are kept)", file=sys.stderr
        )
        return 1
    for change in todo.changes:
        write_atomically(change.path, change.text)
        print(f"{_shown(change.path, root)}: {change.summary}", file=out)
        for line in change.added_lines:
            print(f"    + {line}", file=out)
    if not todo.changes:
        print("init: the starter is in place already; nothing to do", file=out)
    for note in todo.notes:
        print(f"note: {note}", file=out)
    print(
        "next: start your model server, then `pytest --live` records the starter's cassettes "
        "and `pytest` replays them; `pytest --cardprobe-suite cards` adds the built-in suite",
        file=out,
    )
    return 0


def main(argv: Sequence[str]) -> int:
    """``init [DIR] [--model NAME ...] [--force]``."""
    parser = argparse.ArgumentParser(
        prog="python -m pytest_cardprobe init",
        description="Write a starter cardprobe suite and its ini lines into a project folder.",
    )
    parser.add_argument("dir", nargs="?", default=".", help="project folder (default: .)")
    parser.add_argument(
        "--model",
        action="append",
        dest="models",
        metavar="NAME",
        help=f"model for cardprobe_models; repeatable (default: {DEFAULT_MODEL})",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite starter files and add to existing config files (set keys are kept)",
    )
    args = parser.parse_args(list(argv))
    root = Path(args.dir)
    if root.exists() and not root.is_dir():
        parser.error(f"{root} is not a folder")
    return run(root, args.models or [DEFAULT_MODEL], args.force)
