"""docs/design.md stays true to the tree: every module of ``src/`` is named in its module
list (§4 "Modules", under its part), and the import rules it states are the ones
``tests/unit/test_layout.py`` enforces."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_layout import ALLOWED, LEAVES, SRC  # tests/unit is on sys.path (rootdir-relative)

DOC = (Path(__file__).resolve().parents[2] / "docs" / "design.md").read_text("utf-8")
MODULES = DOC.split("### Modules", 1)[1].split("### Import rules", 1)[0]
RULES = DOC.split("### Import rules", 1)[1].split("### ", 1)[0]
PARTS = sorted(p for p in ALLOWED if p not in ("leaf", "top"))


def part_text(part: str) -> str:
    """The paragraph of the module list that starts with `` `part/` — `` and its items."""
    start = re.search(rf"^`{part}/` —", MODULES, re.M)
    assert start, f"design.md §4 Modules has no `{part}/` paragraph"
    rest = MODULES[start.end() :]
    end = re.search(r"^(`[a-z]+/` —|The glue drives)", rest, re.M)
    return rest[: end.start()] if end else rest


def modules() -> list[Path]:
    return sorted(
        p.relative_to(SRC)
        for p in SRC.rglob("*.py")
        if p.name != "__init__.py" and "__pycache__" not in p.parts
    )


@pytest.mark.parametrize("module", modules(), ids=str)
def test_every_module_is_named_in_the_module_list(module: Path) -> None:
    text = MODULES if len(module.parts) == 1 else part_text(module.parts[0])
    assert f"`{module.name}`" in text, f"docs/design.md §4 Modules does not name {module}"


def test_the_leaves_are_the_layout_tests_leaves() -> None:
    tree = MODULES.split("```", 2)[1]  # the layout tree
    tree_line = next(line for line in tree.splitlines() if line.rstrip().endswith(" leaves"))
    assert set(re.findall(r"(\w+)\.py", tree_line)) == LEAVES


@pytest.mark.parametrize("part", PARTS)
def test_the_import_rules_state_what_each_part_may_import(part: str) -> None:
    """The sentence of "Import rules" that gives what ``part`` may import names exactly
    the parts ``ALLOWED`` lets it import."""
    allowed = sorted(ALLOWED[part])
    match = re.search(rf"^- `{part}` may import (.*?)(?:;|\.)$", RULES, re.M)
    assert match, f"design.md Import rules has no line '- `{part}` may import ...'"
    named = sorted(re.findall(r"`(\w+)`", match.group(1).split("(")[0]))  # not the aside
    assert named == (allowed or []), (part, named, allowed)
