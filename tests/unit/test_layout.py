"""The layout rules of docs/design.md §4, read from the source with ``ast``.

Stages are folders under ``src/pytest_cardprobe`` (``suite``, ``wire``, ``judge``, ``score``);
``types`` and ``files`` are leaves every part may use. The rest is glue, in three parts:
``run`` (asking a probe: runtime, ways of asking, preflight, settings), ``glue`` (pytest's
side: items, state, options, session end) and ``cli`` (the ``python -m`` tools), with the
pytest entry point (``plugin``), the hook declarations and ``__main__`` at the top.
Besides the edges between parts, the checker refuses import circles between modules (at any
level of a file, so a function-level import counts too) and modules above the size limit.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = "pytest_cardprobe"
SRC = Path(__file__).resolve().parents[2] / "src" / PACKAGE
LEAVES = {"types", "files", "jsonread", "text", "gitread", "gatesettings"}
STAGES = ("suite", "wire", "judge", "score", "source")
#: What each part may import besides itself and the leaves.
ALLOWED: dict[str, set[str]] = {
    "leaf": set(),
    "suite": set(),
    "wire": set(),
    "judge": {"suite"},
    "score": {"suite", "judge"},
    # Reading what a suite takes from the application starts processes, which the suite
    # stage may not: the source stage does, after the suite stage (and redacts as the wire).
    "source": {"suite", "wire"},
    "run": {"suite", "wire", "judge"},
    "glue": {"suite", "wire", "judge", "score", "run", "source"},
    "draft": {"suite", "wire", "judge"},
    "cli": {"suite", "wire", "judge", "score", "draft"},
    "top": {"suite", "wire", "judge", "score", "run", "glue", "cli", "source", "draft"},
}
#: Lines a module of ``src/`` may have at most.
MAX_LINES = 400


def stage_of(module: str) -> str:
    """``pytest_cardprobe.wire.client`` -> ``wire``; top-level modules are leaves or ``top``."""
    parts = module.split(".")
    if len(parts) < 2:
        return "top"  # the package itself (__init__)
    if parts[1] in LEAVES:
        return "leaf"
    if parts[1] in ALLOWED and parts[1] not in ("leaf", "top"):
        return parts[1]  # a module of a stage or glue part, or the part's own __init__
    return "top"


def module_name(path: Path, root: Path = SRC) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str | None:
    """The absolute module an ``ImportFrom`` names (relative imports resolved)."""
    if node.level == 0:
        return node.module
    base = importer.split(".")
    if not is_package:
        base = base[:-1]  # a module's own package
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    if not base:
        return None
    return ".".join([*base, node.module]) if node.module else ".".join(base)


def imports_of(path: Path, root: Path = SRC) -> set[str]:
    """Every module of this package that ``path`` imports, at any level of the file."""
    importer = module_name(path, root) if path.is_relative_to(root) else PACKAGE + ".m"
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(PACKAGE))
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, importer, is_package)
            if module is None or not (module == PACKAGE or module.startswith(PACKAGE + ".")):
                continue
            # ``from pkg import name``: name may be a module of pkg; count it as one when it is.
            for alias in node.names:
                candidate = f"{module}.{alias.name}"
                if _is_module(candidate, root):
                    found.add(candidate)
                else:
                    found.add(module)
    found.discard(importer)
    return found


def _is_module(name: str, root: Path) -> bool:
    rel = Path(*name.split(".")[1:])
    base = root / rel
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def import_graph(root: Path = SRC) -> dict[str, set[str]]:
    return {module_name(p, root): imports_of(p, root) for p in sorted(root.rglob("*.py"))}


def violations(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Edges that break the rules, as ``importer -> imported (part -> part)``."""
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


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Import circles between modules: every strongly connected group of two or more.

    A package's ``__init__`` is left out as a target: importing ``pkg.mod`` runs it, but it
    imports nothing of its own here, so it closes no circle.
    """
    edges = {m: sorted(t for t in targets if t in graph) for m, targets in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative (no recursion limit)
        nonlocal counter
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            targets = edges[node]
            if i < len(targets):
                work.append((node, i + 1))
                nxt = targets[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    group.append(top)
                    if top == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return sorted(found)


def oversized(root: Path = SRC, limit: int = MAX_LINES) -> list[str]:
    """Modules longer than ``limit`` lines, with their length."""
    out = []
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            out.append(f"{path.relative_to(root.parent)}: {lines} lines")
    return out


def test_the_package_keeps_its_import_rules() -> None:
    graph = import_graph()
    assert {stage_of(m) for m in graph} >= {"leaf", *STAGES, "run", "glue", "cli", "draft", "top"}
    assert violations(graph) == []


def test_no_module_imports_itself_back_through_others() -> None:
    assert cycles(import_graph()) == []


def test_no_module_is_bigger_than_the_limit() -> None:
    assert oversized() == []


def test_the_package_top_holds_only_the_entry_points_and_the_leaves() -> None:
    top = sorted(p.name for p in SRC.glob("*.py"))
    entry_points = ["__init__.py", "__main__.py", "plugin.py", "hookspecs.py"]
    assert top == sorted([*entry_points, *(f"{leaf}.py" for leaf in LEAVES)])


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        # Edges this layout removed or never allowed: judging read the wire's reply type, the
        # wire asked the recovery scanner, and scoring wrote files through the cassette module.
        ("pytest_cardprobe.judge.routing", "pytest_cardprobe.wire.client"),
        ("pytest_cardprobe.wire.streaming", "pytest_cardprobe.judge.recovery"),
        ("pytest_cardprobe.score.gate", "pytest_cardprobe.wire.cassettes"),
        ("pytest_cardprobe.suite.loader", "pytest_cardprobe.wire.client"),
        ("pytest_cardprobe.score.report", "pytest_cardprobe.glue.session"),
        ("pytest_cardprobe.types", "pytest_cardprobe.suite.loader"),
        ("pytest_cardprobe.files", "pytest_cardprobe.types"),
        ("pytest_cardprobe.run.runtime", "pytest_cardprobe.glue.state"),
        ("pytest_cardprobe.cli.diff", "pytest_cardprobe.glue.options"),
        ("pytest_cardprobe.judge.call", "pytest_cardprobe.run.runtime"),
        ("pytest_cardprobe.glue.items", "pytest_cardprobe.plugin"),
        # Starting a subprocess or an MCP server is the source stage's; the suite stage
        # only parses what a suite says about it, and the run never reads a source.
        ("pytest_cardprobe.suite.loader", "pytest_cardprobe.source.reader"),
        ("pytest_cardprobe.run.runtime", "pytest_cardprobe.source.reader"),
        ("pytest_cardprobe.source.reader", "pytest_cardprobe.glue.state"),
        ("pytest_cardprobe.source.mcp", "pytest_cardprobe.judge.call"),
        # Drafting reads the wire's formats and writes the suite's; scoring, the run and
        # pytest's side are no business of it, and nothing of the pipeline uses it.
        ("pytest_cardprobe.draft.plan", "pytest_cardprobe.score.gate"),
        ("pytest_cardprobe.draft.write", "pytest_cardprobe.glue.state"),
        ("pytest_cardprobe.draft.sources", "pytest_cardprobe.run.runtime"),
        ("pytest_cardprobe.run.runtime", "pytest_cardprobe.draft.plan"),
        ("pytest_cardprobe.wire.capture.relay", "pytest_cardprobe.draft.sources"),
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
        "pytest_cardprobe.run.runtime": {
            "pytest_cardprobe.wire.client",
            "pytest_cardprobe.judge.card",
        },
        "pytest_cardprobe.glue.state": {"pytest_cardprobe.run.runtime"},
        "pytest_cardprobe.plugin": {"pytest_cardprobe.glue.state"},
    }
    assert violations(graph) == []


def test_a_circle_is_found_and_named() -> None:
    graph = {
        "pytest_cardprobe.glue.items": {"pytest_cardprobe.glue.state"},
        "pytest_cardprobe.glue.state": {"pytest_cardprobe.glue.items"},
        "pytest_cardprobe.glue.session": {"pytest_cardprobe.glue.state"},
        "pytest_cardprobe.a": {"pytest_cardprobe.b"},
        "pytest_cardprobe.b": {"pytest_cardprobe.c"},
        "pytest_cardprobe.c": {"pytest_cardprobe.a"},
    }
    assert cycles(graph) == [
        ["pytest_cardprobe.a", "pytest_cardprobe.b", "pytest_cardprobe.c"],
        ["pytest_cardprobe.glue.items", "pytest_cardprobe.glue.state"],
    ]
    assert cycles({"pytest_cardprobe.x": {"pytest_cardprobe.y"}, "pytest_cardprobe.y": set()}) == []


def test_the_reader_sees_every_kind_of_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "import pytest_cardprobe.wire.client\n"
        "from pytest_cardprobe.glue import options\n"
        "def f():\n    from pytest_cardprobe.judge.card import judge_card\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pytest_cardprobe.score.gate import Gate\n"
        "import httpx\n"
    )
    assert imports_of(source) == {
        "pytest_cardprobe.wire.client",
        "pytest_cardprobe.glue.options",
        "pytest_cardprobe.judge.card",
        "pytest_cardprobe.score.gate",
    }


def test_relative_imports_are_read_as_the_modules_they_name(tmp_path: Path) -> None:
    """A synthetic ``from ..wire import client`` inside judge/ breaks the rules."""
    root = tmp_path / PACKAGE
    for folder in ("judge", "wire"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "wire" / "client.py").write_text("")
    (root / "judge" / "card.py").write_text("")
    (root / "judge" / "sneaky.py").write_text(
        "from ..wire import client\nfrom . import card\nfrom .card import x\n"
    )
    graph = import_graph(root)
    assert graph[f"{PACKAGE}.judge.sneaky"] == {
        f"{PACKAGE}.wire.client",
        f"{PACKAGE}.judge.card",
    }
    assert violations(graph) == [f"{PACKAGE}.judge.sneaky -> {PACKAGE}.wire.client (judge -> wire)"]


def test_the_size_limit_names_the_module(tmp_path: Path) -> None:
    root = tmp_path / PACKAGE
    root.mkdir()
    (root / "small.py").write_text("x = 1\n" * MAX_LINES)
    (root / "big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    assert oversized(root) == [f"{PACKAGE}/big.py: {MAX_LINES + 1} lines"]
