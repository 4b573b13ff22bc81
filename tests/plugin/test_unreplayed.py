"""Tests that cannot replay (not recorded, never recorded, stale) collapse into one block with
the command that records exactly them; each test keeps one line (glue/replaying.py,
score/summary.py)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal wide enough for pytest to print each test's line whole."""
    monkeypatch.setenv("COLUMNS", "200")


def run(project: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = project.path / "report.json"
    out.unlink(missing_ok=True)
    result = project.runpytest("-p", "no:cacheprovider", "cases", f"--cardprobe-json={out}", *args)
    return result, (json.loads(out.read_text()) if out.exists() else {})


def test_one_tool_description_edit_is_one_block_and_a_line_per_test(
    tools_project: pytest.Pytester,
) -> None:
    tools = tools_project.path / "cases" / "tools" / "tools.json"
    declared = json.loads(tools.read_text())
    assert declared[0]["function"]["name"] == "read_file"
    declared[0]["function"]["description"] += " Prefer it over guessing a file's contents."
    tools.write_text(json.dumps(declared, indent=2))
    md = tools_project.path / "report.md"
    html = tools_project.path / "report.html"
    result, data = run(tools_project, f"--cardprobe-md={md}", f"--cardprobe-html={html}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    print(out)  # the whole output, for the record
    result.stdout.fnmatch_lines(
        [
            "70 test(s) could not replay (never forgiven by the gate):",
            "  70 stale — suite tools (cases/tools.yaml)",
            "  read_file: description changed (70 test(s))",
            "  record exactly them: pytest -p no:cacheprovider cases "
            "*--cardprobe-record-mode stale",
        ]
    )
    assert out.count("could not replay") == 1
    assert "= FAILURES =" not in out
    # At most one line per test: each test's id appears on its FAILED line and nowhere else.
    ids = [t["nodeid"] for t in data["tests"] if t.get("problem") == "stale"]
    assert len(ids) == 70
    for nodeid in ids:
        assert len(re.findall(re.escape(nodeid) + r"(?!\w)", out)) == 1, nodeid
    failed = [line for line in result.outlines if line.startswith("FAILED ")]
    assert len(failed) == 70 and all(" - stale: read_file: desc" in line for line in failed)
    result.stdout.fnmatch_lines(["*= 70 failed in *"])
    # The reports carry the same block.
    summary = data["summary"]["unreplayed"]
    assert summary["counts"] == {"stale": 70}
    assert summary["changes"] == [{"change": "read_file: description changed", "tests": 70}]
    assert summary["record_mode"] == "stale"
    text = md.read_text()
    assert "### 70 test(s) could not replay (never forgiven by the gate)" in text
    assert "- read\\_file: description changed (70 test(s))" not in text  # inside a word
    assert "- read_file: description changed (70 test(s))" in text
    assert "<li>read_file: description changed (70 test(s))</li>" in html.read_text()


def test_a_suite_never_recorded_is_skipped_with_the_command_that_records_it(
    tools_project: pytest.Pytester,
) -> None:
    suite = tools_project.path / "cases" / "tools.yaml"
    suite.write_text(suite.read_text().replace("name: tools", "name: fresh", 1))
    result, data = run(tools_project)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "70 test(s) not recorded yet:",
            "  70 never recorded — suite fresh (cases/tools.yaml)",
            "  never recorded: nothing of the suite is recorded yet, so its tests are skipped*",
            "  record exactly them: pytest -p no:cacheprovider cases *--cardprobe-record-mode once",
            "*= 70 skipped in *",
        ]
    )
    assert data["gate"] is None  # nothing to gate: no arm was judged
    # Gating strictly, a suite nobody recorded fails like any missing recording.
    strict, _ = run(tools_project, "--cardprobe-strict-baseline")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(["  70 not recorded — suite fresh (cases/tools.yaml)"])


def test_a_recorded_suite_with_one_cassette_missing_fails_it(
    tools_project: pytest.Pytester,
) -> None:
    cassette = (
        tools_project.path / "cassettes" / "tools" / "smollm2%3A135m" / "readme-call-cold.yaml"
    )
    cassette.unlink()
    result, _ = run(tools_project, "-k", "readme and cold")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "  1 not recorded — suite tools (cases/tools.yaml)",
            "  record exactly them: pytest -p no:cacheprovider cases -k 'readme and cold' "
            "*--cardprobe-record-mode once",
            "FAILED cases/tools.yaml::readme[[]smollm2:135m-call-cold[]] - not recorded*",
        ]
    )
