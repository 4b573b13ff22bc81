"""The documentation: the MkDocs site builds with ``--strict`` (a broken link, an anchor no
heading makes, a page left out of the nav or a missing included file fails it), and the
README stays a short way in: the two commands first, exactly as they have always read, a
your-own-tools quickstart that loads on its first screen, links that lead somewhere.

Where mkdocs is not installed the build test skips, except in CI (``CI`` set) and under
``CARDPROBE_REQUIRE_LIVE=1`` (what ``.ci/run`` sets), where a missing tool is a failure: the
``dev`` extra brings it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest
import yaml

from pytest_cardprobe.suite.loader import load_suite

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

# The README's two commands, as they have read since the project began; changing them is
# changing what "works on a fresh machine" means, so this test pins them byte for byte.
COMMANDS = "\n".join(
    (
        "```bash",
        "# 1. Set up and run the main job: replay the shipped cassettes (no model, no network), "
        "print the scoreboard",
        "python3 -m pip install -e '.[dev]' && pytest cases",
        "",
        "# 2. Set up and run the tests, live ones included (installs the project and Chromium, "
        "builds/starts two real Ollamas + llama-server on loopback)",
        "scripts/setup-tests && scripts/real-servers install && scripts/real-servers start "
        "--ollama 2 && CARDPROBE_REQUIRE_LIVE=1 pytest",
        "```",
        "",
    )
)


def missing(what: str, extra: str) -> NoReturn:
    """Skip on a developer's machine; fail in CI, where the ``extra`` has been installed."""
    message = f"{what} is not installed (python -m pip install -e '.[{extra}]')"
    if os.environ.get("CARDPROBE_REQUIRE_LIVE") == "1" or os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def needed(module: str, extra: str) -> None:
    """``module`` importable, or :func:`missing`."""
    if importlib.util.find_spec(module) is None:
        missing(module, extra)


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_the_site_builds_strict(tmp_path: Path) -> None:
    needed("mkdocs", "docs")
    needed("material", "docs")
    done = mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    for page in ("index", "guide/own-tools", "reference/options", "reference/suite-schema"):
        assert (tmp_path / "site" / f"{page}.html").is_file(), page
    # The included files arrived whole: the schema's last key, the benchmarks' last section.
    schema = (tmp_path / "site" / "reference" / "suite-schema.html").read_text(encoding="utf-8")
    assert "x-" in schema and "$defs" in schema
    bench = (tmp_path / "site" / "benchmarks.html").read_text(encoding="utf-8")
    assert "The capture proxy and drafting from traffic" in bench


def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    """The strictness the site relies on: a copy with one bad link and one bad anchor fails."""
    needed("mkdocs", "docs")
    needed("material", "docs")
    copy = tmp_path / "repo"
    shutil.copytree(DOCS, copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    shutil.copy(ROOT / "BENCHMARKS.md", copy / "BENCHMARKS.md")
    schema = copy / "src" / "pytest_cardprobe" / "suite"
    schema.mkdir(parents=True)
    shutil.copy(ROOT / "src" / "pytest_cardprobe" / "suite" / "suite.schema.json", schema)
    assert mkdocs_build(copy / "mkdocs.yml", tmp_path / "ok").returncode == 0
    index = copy / "docs" / "index.md"
    index.write_text(index.read_text() + "\n[a](guide/gone.md) [b](guide/ci.md#no-such-heading)\n")
    done = mkdocs_build(copy / "mkdocs.yml", tmp_path / "bad")
    assert done.returncode == 1
    assert "guide/gone.md" in done.stderr and "#no-such-heading" in done.stderr


def test_every_page_under_docs_is_in_the_nav() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)

    def pages(entries: object) -> list[str]:
        if isinstance(entries, str):
            return [entries]
        if isinstance(entries, list):
            return [p for e in entries for p in pages(e)]
        assert isinstance(entries, dict)
        return [p for v in entries.values() for p in pages(v)]

    on_disk = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(pages(config["nav"])) == on_disk


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) < 250, len(lines)
    assert COMMANDS in "\n".join(lines[:20]) + "\n"


def test_the_readme_reaches_your_own_tools_on_its_first_screen() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    first = "\n".join(lines[:50])
    assert "**Contents:** [Your own tools in a minute](#your-own-tools-in-a-minute)" in first
    start = lines.index("## Your own tools in a minute")
    end = next(i for i, line in enumerate(lines) if line.startswith("Next: "))
    assert start < 30 and end - start <= 26 and end < 52, (start, end)


def test_the_readme_quickstart_suite_loads_with_the_shipped_tools(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    found = re.search(r"```yaml\n(# cases/assistant\.yaml\n.*?)```", text, re.S)
    assert found, "the README's quickstart suite"
    (tmp_path / "tools").mkdir()
    shutil.copy(ROOT / "cases" / "tools" / "tools.json", tmp_path / "tools" / "tools.json")
    (tmp_path / "assistant.yaml").write_text(found.group(1), encoding="utf-8")
    suite = load_suite(tmp_path / "assistant.yaml")
    assert [c.id for c in suite.cases] == ["readme", "capital"]
    assert suite.channels == ("call",) and suite.conditions == ("cold",)


def test_every_link_of_the_readme_leads_to_a_file_or_heading() -> None:
    text = README.read_text(encoding="utf-8")
    headings = {
        re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.+)$", text, re.M)
    }
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert len(links) > 20
    for link in links:
        if link.startswith("#"):
            assert link[1:] in headings, link
        else:
            assert (ROOT / link).is_file(), link


def test_the_readme_install_and_ci_words_name_nothing_an_index_does_not_serve() -> None:
    """No page tells anyone to ``pip install pytest-cardprobe`` as if an index served it."""
    for path in [README, *DOCS.rglob("*.md")]:
        text = " ".join(path.read_text(encoding="utf-8").split())
        for found in re.finditer(r"pip install ['\"]?pytest-cardprobe\b", text):
            said = text[found.start() : found.end() + 40]
            assert "finds nothing" in said or "==VERSION" in said, (path, said)


def test_the_reference_names_every_failure_class_route_and_card_label() -> None:
    import ast

    from pytest_cardprobe.score.aggregate import ROUTES
    from pytest_cardprobe.types import FailureClass

    page = (DOCS / "reference" / "failure-classes.md").read_text(encoding="utf-8")
    for failure in FailureClass:
        assert f"`{failure.value}`" in page, failure
    for route in ROUTES:
        assert f"| `{route}` |" in page, route
    # Every label the card judge writes, by its first word (``_fail("prose", …)``).
    source = (ROOT / "src" / "pytest_cardprobe" / "judge" / "card.py").read_text(encoding="utf-8")
    firsts = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "_fail":
            label = node.args[0]
            if isinstance(label, ast.JoinedStr):
                label = label.values[0]
            if isinstance(label, ast.Constant):  # a label built elsewhere is left out
                firsts.add(str(label.value).split(":")[0].split(" ")[0])
    assert {"text-call", "prose", "invented", "broken", "no-input"} <= firsts
    assert "`wrong-shape got " in page  # built in a variable first, so not among them
    for first in firsts:
        assert f"`{first}" in page, first
