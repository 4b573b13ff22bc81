"""The shipped tool suite end to end through pytest: replay, stale after a tool edit, lint, gate.

Replies are the real recordings of cases/tools.yaml against SmolLM2 (cassettes/tools/). The
gate tests turn recorded passes into failures by editing recorded replies (test data); the
replay, judging, baseline and gate under test are the real ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

# Irrelevance cases the model passed when recorded (it answered in prose); a call edited into
# their replies makes them fail as over_call.
IRRELEVANT = ("capital", "haiku", "translate")


def tool_cassette(project: pytest.Pytester, case: str, condition: str = "cold") -> Path:
    return project.path / "cassettes" / "tools" / "smollm2%3A135m" / f"{case}-call-{condition}.yaml"


def make_replies_call(path: Path, name: str, arguments: dict[str, Any]) -> None:
    """Rewrite every recorded reply of an Ollama cassette into one structured call."""
    data = yaml.safe_load(path.read_text())
    for interaction in data["interactions"]:
        body = interaction["response"]["body"]
        reply = json.loads(body["string"])
        reply["message"] = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": name, "arguments": arguments}}],
        }
        body["string"] = json.dumps(reply)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def run(project: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = project.path / "report.json"
    out.unlink(missing_ok=True)
    result = project.runpytest("-p", "no:cacheprovider", "cases", f"--cardprobe-json={out}", *args)
    return result, (json.loads(out.read_text()) if out.exists() else {})


def passed_in_baseline(project: pytest.Pytester, case: str) -> bool:
    data = json.loads((project.path / "cardprobe-baseline.json").read_text())
    verdicts = data["arms"]["tools/smollm2:135m/call/cold"]["verdicts"]
    return bool(verdicts[case]["passed"])


@pytest.mark.usefixtures("wide_terminal")
def test_replay_prints_the_call_scoreboard_and_canary(tools_project: pytest.Pytester) -> None:
    result, data = run(tools_project)
    assert result.ret == 0, result.stdout.str()
    assert data["gate"]["decision"] == "pass"
    arms = {a["channel"] + "/" + a["condition"]: a for a in data["arms"]}
    assert set(arms) == {"call/cold", "call/history", "call/required"}
    # Forced, only the 18 cases that expect a call are asked.
    assert [a["scored"] for a in arms.values()] == [26, 26, 18]
    assert arms["call/required"]["forced"] is True
    result.stdout.fnmatch_lines(
        [
            # Columns come from the data: offered, the shipped recording never calls; forced,
            # adoption is not measured and says so.
            # The gate word first; the suite, model and channel, the same on every row, said
            # once above the table.
            "suite tools, model smollm2:135m, channel call:",
            "gate*condition*passed*adoption*declined*",
            "ok*cold*/26*",
            "ok*history*/26*",
            "ok*required*/18*n/a (forced)*",
            "offered vs forced *",
            "suite tools, model smollm2:135m:",
            "cases*offered passed*forced passed*wrong_tool*arguments*no call*",
            "18*/18*/18*0 / *0 / *36 / 0*recovered*",
            "canary tools/smollm2:135m: declines although supported — needs_tool called 0/8, "
            "no_tool abstained 8/8 samples — declines when offered, calls correctly when "
            "forced (*/4 samples)",
        ]
    )
    # The same under xdist: results and canary cross workers as plain data.
    parallel, parallel_data = run(tools_project, "-n", "2")
    assert parallel.ret == 0, parallel.stdout.str()
    assert parallel_data["arms"] == data["arms"]
    parallel.stdout.fnmatch_lines(["canary tools/smollm2:135m: *"])


def test_a_tool_edit_makes_the_suite_stale_naming_tools(tools_project: pytest.Pytester) -> None:
    tools = tools_project.path / "cases" / "tools" / "tools.json"
    declared = json.loads(tools.read_text())
    declared[0]["function"]["description"] = "Return the text of one file of the project."
    tools.write_text(json.dumps(declared, indent=2))
    result, _ = run(tools_project, "-k", "readme and cold", "-vv")  # -vv: the paragraph
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*stale cassette *readme-call-cold.yaml: tools changed since recording*--live*"]
    )


def test_lint_warns_and_strict_tools_stops_the_run(tools_project: pytest.Pytester) -> None:
    tools = tools_project.path / "cases" / "tools" / "tools.json"
    declared = json.loads(tools.read_text())
    del declared[2]["function"]["parameters"]["properties"]["path"]["description"]
    tools.write_text(json.dumps(declared, indent=2))
    lines = tools.read_text().splitlines()
    start = lines.index(f'      "name": "{declared[2]["function"]["name"]}",')
    line = next(n for n in range(start, len(lines)) if lines[n] == '          "path": {') + 1
    result, _ = run(tools_project, "-k", "capital and cold")
    # The edit also makes the cassettes stale; the lint finding is what this test is about.
    finding = (
        f"tools.json:{line}: $[2].function.parameters.properties.path: parameter 'path' has no "
        "description [no-description]"
    )
    out = result.stdout.str()
    # Reported at the line of the parameter in the tools file, never at the suite's line 0.
    assert (
        f"tools/tools.json:{line}: ToolLintWarning: {tools_project.path}/cases/tools/{finding}"
        in out
    )
    assert ":0: ToolLintWarning" not in out
    strict, _ = run(tools_project, "--cardprobe-strict-tools")
    assert strict.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{finding} (--cardprobe-strict-tools)" in strict.stderr.str()


@pytest.mark.usefixtures("wide_terminal")
def test_gate_fails_on_three_lost_cases(tools_project: pytest.Pytester) -> None:
    assert all(passed_in_baseline(tools_project, c) for c in IRRELEVANT)
    for case in IRRELEVANT:
        make_replies_call(tool_cassette(tools_project, case), "run_shell", {"command": "ls"})
    result, data = run(tools_project)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert data["gate"]["decision"] == "fail"
    result.stdout.fnmatch_lines(
        [
            "*REGRESSION: tools/smollm2:135m/call/cold: passed * -> * of 26 (floor ±1); pass -> "
            "fail: capital (ok no_call -> over_call got run_shell), haiku *, translate *"
        ]
    )


@pytest.mark.usefixtures("wide_terminal")
def test_gate_passes_with_a_warning_on_one_lost_case(tools_project: pytest.Pytester) -> None:
    make_replies_call(tool_cassette(tools_project, "capital"), "run_shell", {"command": "ls"})
    result, data = run(tools_project)
    assert result.ret == 0, result.stdout.str()
    assert data["gate"]["decision"] == "pass"
    result.stdout.fnmatch_lines(
        [
            "gate*condition*passed*adoption*declined*over_call*",
            "warning*cold*7/26*-1*2/2 100%*",
            "  let through: tools/smollm2:135m/call/cold capital: * — the arm's net change is "
            "-1 case(s), within ±1, so the gate passes it",
        ]
    )
