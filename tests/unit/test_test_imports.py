"""Test modules import their helpers the way CI's plain ``pytest`` can.

``tests`` is not a package (no ``__init__.py``): pytest puts each test folder on ``sys.path``
(rootdir-relative, "prepend" import mode), so a helper is imported by its bare name
(``from probing import ...``). ``from tests.unit.x import ...`` works only when the current
folder happens to be on ``sys.path`` (``python -m pytest``) and fails to collect under
``pytest``, which is what ``.ci/run`` runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def package_imports(source: str) -> list[str]:
    """The ``tests.``-package imports in one module's source, as ``line: module``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        found += [f"{node.lineno}: {name}" for name in names if name.split(".")[0] == "tests"]
    return found


def test_the_checker_finds_a_package_import() -> None:
    assert package_imports("from tests.unit.test_draft import ASK\n") == [
        "1: tests.unit.test_draft"
    ]
    assert package_imports("import tests.hostile_inputs\n") == ["1: tests.hostile_inputs"]
    assert package_imports("from test_draft import ASK\nimport testsuite\n") == []


def test_no_test_module_imports_the_tests_folder_as_a_package() -> None:
    offenders = {
        str(path.relative_to(TESTS)): found
        for path in sorted(TESTS.rglob("*.py"))
        if (found := package_imports(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}
