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
DISTRIBUTION = {"yaml": "pyyaml", "vcr": "vcrpy", "xdist": "pytest-xdist", "re2": "google-re2"}
SRC = ROOT / "src" / "pytest_cardprobe"
#: Modules whose third-party imports are an optional extra's, by extra: reading an MCP server
#: (``pip install 'pytest-cardprobe[mcp]'``) is the only user of the mcp SDK.
EXTRAS = {
    "mcp": (SRC / "source" / "mcp.py",),
    # The capture proxy listens with uvicorn; httptools is only the C parser uvicorn picks
    # up when it is there, so nothing imports it.
    "capture": (SRC / "wire" / "capture" / "serve.py", SRC / "cli" / "capture.py"),
}
#: Declared by an extra without being imported: picked up by another library when present.
PICKED_UP = {"httptools"}
#: Run by the source stage as a script in the application's environment, never imported by
#: the plugin: the client libraries it converts with (ollama, openai, pydantic) are the
#: application's, so they are no dependency of the plugin.
APP_SIDE = (SRC / "source" / "appside.py",)


def _name(requirement: str) -> str:
    return re.split(r"[ <>=!~;\[]", requirement, maxsplit=1)[0].lower()


def third_party_imports(paths: list[Path] | None = None) -> set[str]:
    found: set[str] = set()
    optional = {p for ps in EXTRAS.values() for p in ps} | set(APP_SIDE)
    for path in paths if paths is not None else sorted(set(SRC.rglob("*.py")) - optional):
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


def test_each_extra_declares_what_its_modules_import() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    core = {_name(d) for d in project["dependencies"]}
    for extra, paths in EXTRAS.items():
        declared = {_name(d) for d in extras[extra]}
        imported = {DISTRIBUTION.get(n, n) for n in third_party_imports(list(paths))} - core
        assert declared - PICKED_UP == imported, extra
    # The tests drive the real client libraries, so the dev extra has them and the mcp SDK.
    dev = {_name(d) for d in extras["dev"]}
    assert {"ollama", "openai", "mcp", "uvicorn"} <= dev


def test_an_optional_import_stays_in_the_modules_of_its_extra() -> None:
    # The plugin must load without any extra: only the extra's own modules import it.
    for paths in EXTRAS.values():
        names = third_party_imports(list(paths)) - third_party_imports()
        for path in sorted(SRC.rglob("*.py")):
            if path not in paths:
                assert not names & third_party_imports([path]), path


def test_the_application_side_script_imports_only_the_standard_library_at_its_top() -> None:
    # It must start in any environment: the client libraries are imported where they are
    # used, and the plugin's own package never (it may not be importable there).
    for path in APP_SIDE:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [(node.module or "").split(".")[0]]
            else:
                continue
            assert set(names) <= set(sys.stdlib_module_names) | {"__future__"}, names


def test_the_licence_file_is_the_declared_licence() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    text = (ROOT / "LICENSE").read_text()
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert text.startswith("MIT License\n\nCopyright (c) ")
    assert "WITHOUT WARRANTY OF ANY KIND" in text
