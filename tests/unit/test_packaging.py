"""The runtime dependencies in pyproject.toml are exactly the third-party packages src/ imports.

A dependency nothing imports would load into every user's session for nothing (syrupy, a
pytest plugin, once did); an import without a dependency would fail on a fresh install.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Import name -> distribution name, where they differ.
DISTRIBUTION = {"yaml": "pyyaml", "vcr": "vcrpy", "xdist": "pytest-xdist"}


def third_party_imports() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "src" / "pytest_cardprobe").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"pytest_cardprobe", "__future__", "_pytest"}


def test_runtime_dependencies_are_what_src_imports() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[ <>=!~;\[]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    imported = {DISTRIBUTION.get(name, name) for name in third_party_imports()}
    assert declared == imported
    assert "syrupy" in " ".join(project["optional-dependencies"]["dev"])  # the tests use it


def test_the_licence_file_is_the_declared_licence() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    text = (ROOT / "LICENSE").read_text()
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert text.startswith("MIT License\n\nCopyright (c) ")
    assert "WITHOUT WARRANTY OF ANY KIND" in text
