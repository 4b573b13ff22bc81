"""A suite that reads its tools and prompt from the application, replayed through pytest.

The project is the shipped tool suite with its real recordings (cassettes/tools/), except that
``tools:`` and ``prompts:`` now name where an application keeps them: a Python module that
holds the same declarations, or an MCP server (tests/unit/mcp_app.py, built with the ``mcp``
SDK) that lists them. The snapshot is written by the source stage's own reader in recording
mode, as a recording run writes it. Replay must need neither the module nor the server.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from pytest_cardprobe.source.reader import SourcePolicy, SourceReader
from pytest_cardprobe.suite.loader import load_suite

ROOT = Path(__file__).resolve().parents[2]
MCP_APP = ROOT / "tests" / "unit" / "mcp_app.py"
SECRET = "pl4in-s3cret-token"
# The offered conditions only: what these tests count predates the forced one.
SELECT = ("-k", "(readme or capital) and not required")
APP = """\
import json
from pathlib import Path

with open(Path(__file__).with_name("imports.log"), "a") as log:
    log.write("imported\\n")
TOOLS = json.loads(Path(__file__).with_name("tools.json").read_text())
SYSTEM = Path(__file__).with_name("prompt.md").read_text()
"""


def use_sources(project: pytest.Pytester, tools: str, prompt: str | None) -> None:
    suite = project.path / "cases" / "tools.yaml"
    text = suite.read_text().replace("tools: tools/tools.json", f"tools: {tools}")
    if prompt is not None:
        text = text.replace("  call: prompts/coding-assistant.md", f"  call: {prompt}")
    suite.write_text(text)


@pytest.fixture
def app_project(tools_project: pytest.Pytester) -> pytest.Pytester:
    """The tool suite reading ``toolsapp.tools:TOOLS`` and ``:SYSTEM``, snapshot recorded."""
    package = tools_project.path / "toolsapp"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text(APP)
    shutil.copy(tools_project.path / "cases" / "tools" / "tools.json", package / "tools.json")
    shutil.copy(
        tools_project.path / "cases" / "prompts" / "coding-assistant.md", package / "prompt.md"
    )
    use_sources(
        tools_project, "{python: 'toolsapp.tools:TOOLS'}", "{python: 'toolsapp.tools:SYSTEM'}"
    )
    tools_project.makeini("[pytest]\ncardprobe_models = smollm2:135m\npythonpath = .\n")
    record_snapshot(tools_project)
    (package / "imports.log").unlink()
    return tools_project


def record_snapshot(project: pytest.Pytester) -> None:
    """What a recording run does with the suite's sources: read them and write the snapshot."""
    sys.path.insert(0, str(project.path))
    try:
        reader = SourceReader(
            SourcePolicy(cassette_dir=project.path / "cassettes", root=project.path, recording=True)
        )
        load_suite(project.path / "cases" / "tools.yaml", sources=reader)
        reader.flush()
        assert (project.path / "cassettes" / "tools" / "@sources.json").is_file()
    finally:
        sys.path.remove(str(project.path))


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess("-p", "no:cacheprovider", "cases", *SELECT, *args)


def test_replay_checks_the_source_and_passes(app_project: pytest.Pytester) -> None:
    result = run(app_project)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "cardprobe sources:",
            "  tools: prompts.call from python: toolsapp.tools:SYSTEM: checked against the "
            "source: unchanged",
            "  tools: tools from python: toolsapp.tools:TOOLS: checked against the source: "
            "unchanged",
            "*2 passed*2 xfailed*",
        ]
    )
    # Each entry read once: one subprocess for the tools, one for the prompt.
    log = app_project.path / "toolsapp" / "imports.log"
    assert log.read_text().count("imported") == 2


def test_under_xdist_the_controller_reads_each_source_once(app_project: pytest.Pytester) -> None:
    result = run(app_project, "-n", "2")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["cardprobe sources:", "*checked against the source*"])
    log = app_project.path / "toolsapp" / "imports.log"
    assert log.read_text().count("imported") == 2  # not once more per worker


def test_an_edited_description_makes_every_test_stale_naming_tool_and_field(
    app_project: pytest.Pytester,
) -> None:
    path = app_project.path / "toolsapp" / "tools.json"
    tools = json.loads(path.read_text())
    tools[0]["function"]["description"] = "Read one file."
    path.write_text(json.dumps(tools))
    result = run(app_project)
    assert result.ret == 1
    out = result.stdout.str()
    assert "CHANGED at the source since the snapshot (its tests are stale)" in out
    # One line says what changed for all four, and the command that records exactly them.
    result.stdout.fnmatch_lines(
        [
            "  4 stale — suite tools (cases/tools.yaml)",
            "  tools changed at the source (python: toolsapp.tools:TOOLS): read_file: "
            "description changed (4 test(s))",
            "  record exactly them: pytest -p no:cacheprovider cases "
            "-k '(readme or capital) and not required' --cardprobe-record-mode stale",
        ]
    )
    assert out.count("] - stale: tools ch") == 4  # each test says it, cut to the width
    assert "4 failed" in out


def test_without_the_application_replay_uses_the_snapshot_and_says_so(
    app_project: pytest.Pytester,
) -> None:
    shutil.rmtree(app_project.path / "toolsapp")
    result = run(app_project)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "  tools: tools from python: toolsapp.tools:TOOLS: snapshot used unchecked "
            "(python: toolsapp.tools:TOOLS: module 'toolsapp' is not importable from the "
            "project*",
            "*2 passed*2 xfailed*",
        ]
    )


def test_an_application_that_no_longer_has_what_the_suite_names_is_a_usage_error(
    app_project: pytest.Pytester,
) -> None:
    # The module imports (the application is here) but its list is renamed: the source was
    # read, so the snapshot may not stand in for it, which would gate a copy nobody ships.
    module = app_project.path / "toolsapp" / "tools.py"
    module.write_text(module.read_text().replace("TOOLS = ", "ALL_TOOLS = "))
    result = run(app_project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(
        [
            "ERROR: */cases/tools.yaml:*: tools: python: toolsapp.tools:TOOLS: toolsapp.tools "
            "has no 'TOOLS'; the source was read, so the snapshot does not stand in for it: "
            "fix the suite's `tools` or the application, then record the suite again: pytest "
            "--live --model smollm2:135m cases/tools.yaml",
        ]
    )


def test_check_always_makes_an_unreadable_source_a_usage_error(
    app_project: pytest.Pytester,
) -> None:
    shutil.rmtree(app_project.path / "toolsapp")
    result = run(app_project, "--cardprobe-source-check", "always")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: */cases/tools.yaml:*: prompts.call: python: toolsapp.tools:SYSTEM: module "
            "'toolsapp' is not importable from the project*; --cardprobe-source-check always "
            "requires it",
        ]
    )


def test_check_never_starts_nothing_and_says_so(app_project: pytest.Pytester) -> None:
    result = run(app_project, "--cardprobe-source-check", "never")
    assert result.ret == 0, result.stdout.str()
    assert not (app_project.path / "toolsapp" / "imports.log").exists()
    result.stdout.fnmatch_lines(
        ["*snapshot used unchecked (not read (--cardprobe-source-check never))"]
    )


def test_no_snapshot_and_no_source_is_a_usage_error_that_says_to_record(
    app_project: pytest.Pytester,
) -> None:
    (app_project.path / "cassettes" / "tools" / "@sources.json").unlink()
    shutil.rmtree(app_project.path / "toolsapp")
    result = run(app_project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*cases/tools.yaml:*: *no snapshot of it (cassettes/tools/@sources.json) to replay from*"]
    )


@pytest.fixture
def mcp_project(tools_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The tool suite reading its tools from an MCP server (stdio) that gets a secret."""
    pytest.importorskip("mcp")
    listing = [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "inputSchema": t["function"]["parameters"],
        }
        for t in json.loads((tools_project.path / "cases" / "tools" / "tools.json").read_text())
    ]
    (tools_project.path / "listing.json").write_text(json.dumps(listing))
    command = [sys.executable, str(MCP_APP), "--tools", "listing.json", "--page", "4"]
    command += ["--echo-env", "APP_TOKEN"]
    spec = {"mcp": {"command": command, "env": {"APP_TOKEN": "${CARDPROBE_APP_TOKEN}"}}}
    use_sources(tools_project, json.dumps(spec), None)
    monkeypatch.setenv("CARDPROBE_APP_TOKEN", SECRET)
    monkeypatch.chdir(tools_project.path)
    record_snapshot(tools_project)
    return tools_project


def test_an_mcp_suite_replays_and_no_secret_reaches_a_file_or_the_output(
    mcp_project: pytest.Pytester,
) -> None:
    report = mcp_project.path / "report.json"
    result = run(mcp_project, f"--cardprobe-json={report}")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["  tools: tools from mcp: *mcp_app.py --tools listing.json*: checked*"]
    )
    snapshot = mcp_project.path / "cassettes" / "tools" / "@sources.json"
    data = json.loads(snapshot.read_text())
    assert data["entries"]["tools"]["identity"] == {"mcp_server": "cardprobe-test-app 1.2.3"}
    for text in (
        snapshot.read_text(),
        report.read_text(),
        result.stdout.str(),
        result.stderr.str(),
    ):
        assert SECRET not in text


def test_an_mcp_server_that_breaks_is_named_with_its_blanked_stderr(
    mcp_project: pytest.Pytester,
) -> None:
    suite = mcp_project.path / "cases" / "tools.yaml"
    suite.write_text(suite.read_text().replace('"--page", "4"', '"--crash"'))
    (mcp_project.path / "cassettes" / "tools" / "@sources.json").unlink()
    result = run(mcp_project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "tools: mcp: " in err and "could not be read: MCPError: Connection closed" in err
    assert "APP_TOKEN=[redacted]" in err and SECRET not in err + result.stdout.str()


def test_an_mcp_name_with_a_dot_is_a_portability_warning_even_when_strict(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("mcp")
    command = json.dumps([sys.executable, str(MCP_APP)])
    (pytester.path / "app.yaml").write_text(
        "cardprobe: 1\njudge: call\nconditions: [cold]\n"
        f"tools: {{mcp: {{command: {command}}}}}\n"
        "cases:\n  - {id: find, prompt: Find Invoice., expect: {call: code.search}}\n"
    )
    pytester.makeini("[pytest]\ncardprobe_models = smollm2:135m\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--co", "--cardprobe-strict-tools"
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    out = result.stdout.str()
    assert "tools from mcp: " in out and "mcp_app.py: read from the source; no snapshot yet" in out
    assert (
        "$[1].function.name: tool name 'code.search' works with Ollama and llama.cpp, but strict "
        "OpenAI-compatible servers refuse it (HTTP 400: not ^[a-zA-Z0-9_-]{1,64}$) [portable-name]"
    ) in out


def test_a_recording_stopped_before_it_asks_writes_no_snapshot(
    app_project: pytest.Pytester,
) -> None:
    snapshot = app_project.path / "cassettes" / "tools" / "@sources.json"
    snapshot.unlink()
    result = run(app_project, "--live", "--cardprobe-server", "http://127.0.0.1:9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*tools from python: toolsapp.tools:TOOLS: read from the source*"])
    assert "nothing was asked or recorded" in result.stderr.str()
    assert not snapshot.exists()
