"""``pytest --help``, the reference's Options table and docs/design.md §3 agree with the
option table.

The table of docs/reference/options.md is generated from glue/option_table.py: when this test
fails on it, it prints the table to paste. §3 lists every flag and ini key by name; ``--help``
shows every flag with its help text and hides the deprecated spellings.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_cardprobe.glue.option_table import RENAMED, SPECS, Spec

ROOT = Path(__file__).resolve().parents[2]
FLAGS = {spec.flag for spec in SPECS if spec.flag}
INI_KEYS = {spec.ini for spec in SPECS if spec.ini}


def row(spec: Spec) -> str:
    ini = f"`{spec.ini}`" if spec.ini else ""
    return f"| {spec.shown_flag} | {ini} | {spec.shown_default} | {spec.help} |"


def options_table() -> str:
    lines = ["| option | ini key | default | meaning |", "|---|---|---|---|"]
    return "\n".join([*lines, *(row(spec) for spec in SPECS)])


def renamed_table() -> str:
    lines = ["| old spelling | new spelling |", "|---|---|"]
    return "\n".join([*lines, *(f"| `{old}` | `{spec.flag}` |" for old, spec in RENAMED.items())])


def section(text: str, heading: str) -> str:
    start = text.index(heading)
    rest = text[start + len(heading) :]
    end = re.search(r"^#{1,3} ", rest, re.M)
    return rest[: end.start()] if end else rest


OPTIONS_PAGE = ROOT / "docs" / "reference" / "options.md"


def test_the_reference_options_table_is_the_option_table() -> None:
    page = OPTIONS_PAGE.read_text(encoding="utf-8")
    table = options_table()
    assert table in section(page, "# Options"), f"{OPTIONS_PAGE} should hold:\n{table}"


def test_the_reference_lists_every_renamed_option() -> None:
    page = OPTIONS_PAGE.read_text(encoding="utf-8")
    table = renamed_table()
    assert table in section(page, "# Options"), f"{OPTIONS_PAGE} should hold:\n{table}"


def test_design_section_3_names_every_option_and_ini_key_and_no_other() -> None:
    design = section((ROOT / "docs" / "design.md").read_text(encoding="utf-8"), "## 3. Interface")
    bullet = design[design.index("- **Options**") :]
    bullet = bullet[: bullet.index("\n- **", 1)]
    assert set(re.findall(r"`(--[a-z-]+)", bullet)) == FLAGS | set(RENAMED)
    assert set(re.findall(r"\bcardprobe_[a-z_]+", bullet)) == INI_KEYS


def test_pytest_help_shows_every_flag_with_its_help_and_hides_old_spellings(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest("--help")
    assert result.ret == pytest.ExitCode.OK
    out = result.stdout.str()
    group = out[out.index("local-model behaviour tests (pytest-cardprobe):") :]
    group = group[: group.index("\n\n")]
    shown = set(re.findall(r"^  (--[a-z-]+)", group, re.M))
    assert shown == FLAGS
    flat = " ".join(group.split())
    for spec in SPECS:
        if spec.flag:
            assert " ".join(spec.help.split()) in flat, spec.flag
    for old in RENAMED:
        assert not re.search(rf"^\s+{old}\b", out, re.M), old
    ini = out[out.index("[pytest] configuration options") :]
    for key in INI_KEYS:
        assert re.search(rf"^  {key} \(", ini, re.M), key
