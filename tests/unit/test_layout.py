"""The import rules of docs/design.md §4, read from the source with ``ast``.

Stages are folders under ``src/pytest_cardprobe``; ``types`` and ``files`` are leaves every
stage may use; the modules at the top are pytest glue and may import anything.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = "pytest_cardprobe"
SRC = Path(__file__).resolve().parents[2] / "src" / PACKAGE
LEAVES = {"types", "files"}
# What each stage may import besides itself and the leaves.
ALLOWED: dict[str, set[str]] = {
    "leaf": set(),
    "suite": set(),
    "wire": set(),
    "judge": {"suite"},
    "score": {"suite", "judge"},
    "glue": {"suite", "wire", "judge", "score", "glue"},
}


def stage_of(module: str) -> str:
    """``pytest_cardprobe.wire.client`` -> ``wire``; top-level modules are glue or leaves."""
    parts = module.split(".")
    if len(parts) < 2:
        return "glue"  # the package itself (__init__)
    if parts[1] in LEAVES:
        return "leaf"
    if parts[1] in ALLOWED and parts[1] not in ("leaf", "glue"):
        return parts[1]
    return "glue"


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Every module of this package that ``path`` imports, at any level of the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(PACKAGE))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == PACKAGE:  # from pytest_cardprobe import x
                found.update(f"{PACKAGE}.{a.name}" for a in node.names)
            elif node.module.startswith(PACKAGE + "."):
                found.add(node.module)
    return found


def import_graph(root: Path = SRC) -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in sorted(root.rglob("*.py"))}


def violations(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Edges that break the rules, as ``importer -> imported (stage -> stage)``."""
    bad = []
    for importer, targets in graph.items():
        source = stage_of(importer)
        for target in sorted(targets):
            dest = stage_of(target)
            if dest == source and source != "leaf":
                continue
            if dest == "leaf" and source != "leaf":
                continue
            if dest not in ALLOWED[source]:
                bad.append(f"{importer} -> {target} ({source} -> {dest})")
    return bad


def test_the_package_keeps_its_import_rules() -> None:
    graph = import_graph()
    assert {stage_of(m) for m in graph} >= {"leaf", "suite", "wire", "judge", "score", "glue"}
    assert violations(graph) == []


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        # The three edges this layout removed: judging read the wire's reply type, the wire
        # asked the recovery scanner, and scoring wrote files through the cassette module.
        ("pytest_cardprobe.judge.routing", "pytest_cardprobe.wire.client"),
        ("pytest_cardprobe.wire.streaming", "pytest_cardprobe.judge.recovery"),
        ("pytest_cardprobe.score.gate", "pytest_cardprobe.wire.cassettes"),
        ("pytest_cardprobe.suite.loader", "pytest_cardprobe.wire.client"),
        ("pytest_cardprobe.score.report", "pytest_cardprobe.session"),
        ("pytest_cardprobe.types", "pytest_cardprobe.suite.loader"),
        ("pytest_cardprobe.files", "pytest_cardprobe.types"),
    ],
)
def test_a_forbidden_edge_is_reported(importer: str, imported: str) -> None:
    graph = {importer: {imported}, "pytest_cardprobe.plugin": {importer, imported}}
    assert violations(graph) == [
        f"{importer} -> {imported} ({stage_of(importer)} -> {stage_of(imported)})"
    ]


def test_allowed_edges_pass() -> None:
    graph = {
        "pytest_cardprobe.judge.routing": {
            "pytest_cardprobe.types",
            "pytest_cardprobe.judge.recovery",
        },
        "pytest_cardprobe.score.gate": {
            "pytest_cardprobe.files",
            "pytest_cardprobe.score.aggregate",
        },
        "pytest_cardprobe.judge.registry": {"pytest_cardprobe.suite.loader"},
        "pytest_cardprobe.runtime": {"pytest_cardprobe.wire.client", "pytest_cardprobe.judge.card"},
    }
    assert violations(graph) == []


def test_the_reader_sees_every_kind_of_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "import pytest_cardprobe.wire.client\n"
        "from pytest_cardprobe import options\n"
        "def f():\n    from pytest_cardprobe.judge.card import judge_card\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pytest_cardprobe.score.gate import Gate\n"
        "import httpx\n"
    )
    assert imports_of(source) == {
        "pytest_cardprobe.wire.client",
        "pytest_cardprobe.options",
        "pytest_cardprobe.judge.card",
        "pytest_cardprobe.score.gate",
    }
