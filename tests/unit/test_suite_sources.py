"""What a suite says about its sources (suite/sources.py, the schema, the loader).

The suite stage parses ``tools: {python: ...}``, ``tools: {mcp: ...}``, ``only:`` and
``prompts: {call: {python: ...}}`` and asks the run's :class:`Sources` for the values; it never
reads a source itself. Reading is the source stage's (tests/unit/test_source_*.py); here a
stand-in answers, so the tests are about the spec, the wording and the name mapping.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.suite.loader import SuiteError, load_suite
from pytest_cardprobe.suite.sources import (
    McpServer,
    PromptSource,
    SourceProblem,
    ToolSource,
    map_names,
    mapped_name,
    select,
)

READ_FILE = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a text file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}


class Answers:
    """A stand-in for the run's sources: answers what it is told, records what it was asked."""

    def __init__(self, tools: Any = None, prompt: str = "Be brief.", problem: str = "") -> None:
        self.given_tools = [READ_FILE] if tools is None else tools
        self.given_prompt = prompt
        self.problem = problem
        self.asked: list[tuple[str, str, Any]] = []

    def tools(self, suite: str, path: Path, entry: str, source: ToolSource) -> list[Any]:
        self.asked.append((suite, entry, source))
        if self.problem:
            raise SourceProblem(self.problem)
        return list(self.given_tools)

    def prompt(self, suite: str, path: Path, entry: str, source: PromptSource) -> str:
        self.asked.append((suite, entry, source))
        return self.given_prompt


def suite_file(tmp_path: Path, tools: str, extra: str = "") -> Path:
    text = textwrap.dedent(
        f"""\
        cardprobe: 1
        name: app
        judge: call
        conditions: [cold]
        tools: {tools}
        {extra}
        cases:
          - id: read
            prompt: Show me the README.
            expect: {{call: read_file}}
        """
    )
    path = tmp_path / "app.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_python_source_is_asked_for_and_its_declarations_are_the_suites(tmp_path: Path) -> None:
    answers = Answers()
    path = suite_file(tmp_path, "{python: 'myapp.tools:TOOLS', convert: ollama, only: [read_file]}")
    suite = load_suite(path, sources=answers)
    assert [t["function"]["name"] for t in suite.tools] == ["read_file"]
    ((name, entry, source),) = answers.asked
    assert (name, entry) == ("app", "tools")
    assert source == ToolSource(python="myapp.tools:TOOLS", convert="ollama", only=("read_file",))
    assert suite.tools_source == source and suite.tools_file is None


def test_an_mcp_source_keeps_env_values_out_of_its_repr(tmp_path: Path) -> None:
    answers = Answers()
    spec = "{mcp: {command: [python, -m, app.mcp], env: {TOKEN: sekrit-1}, prefix: gh_}}"
    load_suite(suite_file(tmp_path, spec), sources=answers)
    source = answers.asked[0][2]
    assert source.mcp.command == ("python", "-m", "app.mcp") and source.mcp.prefix == "gh_"
    assert source.mcp.env == (("TOKEN", "sekrit-1"),)
    assert "sekrit-1" not in repr(source) and "TOKEN" in repr(source)


def test_a_prompt_from_python_is_the_call_prompt(tmp_path: Path) -> None:
    answers = Answers(prompt="You are the app's assistant.")
    extra = "prompts: {call: {python: 'myapp.prompts:SYSTEM'}}"
    path = suite_file(tmp_path, "{python: 'myapp.tools:TOOLS'}", extra)
    suite = load_suite(path, sources=answers)
    assert suite.prompts == {"call": "You are the app's assistant."}
    assert suite.prompt_files == {}
    assert ("app", "prompts.call", PromptSource("myapp.prompts:SYSTEM")) in answers.asked


def test_a_card_suite_prompt_may_come_from_python(tmp_path: Path) -> None:
    path = tmp_path / "cards.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            cardprobe: 1
            channels: [prose]
            conditions: [cold]
            prompts: {prose: {python: 'myapp.prompts:CARDS'}}
            cases:
              - {id: date, prompt: When do we meet?, accept: [Input.Date]}
            """
        ),
        encoding="utf-8",
    )
    suite = load_suite(path, sources=Answers(prompt="Answer with a card."))
    assert suite.prompts == {"prose": "Answer with a card."}


@pytest.mark.parametrize(
    ("tools", "extra", "wanted"),
    [
        (
            "{python: 'a.b:C', mcp: {url: 'http://x:1/mcp'}}",
            "",
            "tools.mcp: two tool sources (python and mcp); give exactly one of python, mcp",
        ),
        ("{convert: ollama}", "", "tools: missing the tool source: give one of python, mcp"),
        ("{python: 'a.b'}", "", "`package.module:NAME`"),
        ("{python: 'a.b:C', convert: langchain}", "", "unknown converter 'langchain'"),
        ("{mcp: {}}", "", "missing the server address: give one of command, url"),
        (
            "{mcp: {command: [x], url: 'http://x:1/mcp'}}",
            "",
            "tools.mcp.url: two server addresses (command and url); give exactly one of",
        ),
        ("{mcp: {command: python}}", "", "the server's command line as a list"),
        ("{mcp: {url: 'ftp://x/mcp'}}", "", "an http:// or https:// URL"),
        ("{mcp: {command: [x], env: {A: 1}}}", "", "expected a string, got 1"),
        (
            "{mcp: {command: [x], replace: {'ab': '_'}}}",
            "",
            "the one character the app replaces",
        ),
        ("{python: 'a.b:C', only: []}", "", "a non-empty list of tool names"),
        ("{python: 'a.b:C', shell: 'rm -rf /'}", "", "unknown key"),
        ("{python: 'a.b:C'}", "prompts: {call: {python: 'x'}}", "`package.module:NAME`"),
        ("{python: 'a.b:C'}", "prompts: {call: {file: x.md}}", "unknown key"),
    ],
)
def test_a_wrong_source_spec_is_a_suite_error_naming_the_key(
    tmp_path: Path, tools: str, extra: str, wanted: str
) -> None:
    answers = Answers()
    with pytest.raises(SuiteError) as info:
        load_suite(suite_file(tmp_path, tools, extra), sources=answers)
    assert wanted in str(info.value)
    assert str(info.value).startswith(str(tmp_path / "app.yaml") + ":")
    assert answers.asked == []  # nothing is read before the suite is right


def test_a_source_problem_names_the_suite_file_key_and_line(tmp_path: Path) -> None:
    answers = Answers(problem="python: myapp.tools:TOOLS: ImportError: no module named yaml")
    with pytest.raises(SuiteError) as info:
        load_suite(suite_file(tmp_path, "{python: 'myapp.tools:TOOLS'}"), sources=answers)
    assert str(info.value) == (
        f"{tmp_path / 'app.yaml'}:5: tools: python: myapp.tools:TOOLS: ImportError: no module "
        "named yaml"
    )


def test_outside_a_run_a_suite_with_a_source_says_who_reads_it(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="only a pytest run of cardprobe does"):
        load_suite(suite_file(tmp_path, "{python: 'myapp.tools:TOOLS'}"))


def test_the_declarations_a_source_gives_are_checked_like_a_tools_file(tmp_path: Path) -> None:
    twice = Answers(tools=[READ_FILE, READ_FILE])
    with pytest.raises(SuiteError, match="tool 'read_file' is declared twice"):
        load_suite(suite_file(tmp_path, "{python: 'myapp.tools:TOOLS'}"), sources=twice)


def test_an_expectation_must_name_a_tool_the_source_gives(tmp_path: Path) -> None:
    other = {**READ_FILE, "function": {**READ_FILE["function"], "name": "list_files"}}
    with pytest.raises(SuiteError, match="read_file"):
        load_suite(suite_file(tmp_path, "{python: 'm:T'}"), sources=Answers(tools=[other]))


def tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def test_the_name_mapping_is_the_applications_and_refuses_a_collision() -> None:
    server = McpServer(command=("x",), prefix="gh_", replace=((".", "_"),))
    mapped = map_names([tool("repo.read"), tool("issue.list")], server)
    assert [t["function"]["name"] for t in mapped] == ["gh_repo_read", "gh_issue_list"]
    with pytest.raises(SourceProblem) as info:
        map_names([tool("a.b"), tool("a_b")], server)
    assert str(info.value).startswith("tools 'a.b' and 'a_b' both become 'gh_a_b'")


def test_only_keeps_the_sources_order_and_names_a_tool_it_does_not_have() -> None:
    tools = [tool("a"), tool("b"), tool("c")]
    assert [t["function"]["name"] for t in select(tools, ["c", "a"])] == ["a", "c"]
    assert select(tools, None) == tools
    with pytest.raises(SourceProblem, match="only: 'd' is not among the 3 tool"):
        select(tools, ["a", "d"])


NAMES = st.text(alphabet="ab._-", min_size=1, max_size=6)


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(
    names=st.lists(NAMES, min_size=1, max_size=8, unique=True),
    prefix=st.sampled_from(["", "gh_", "x."]),
    replace=st.sampled_from([(), ((".", "_"),), ((".", ""), ("-", "_"))]),
)
def test_a_mapping_is_refused_or_reversible(
    names: list[str], prefix: str, replace: tuple[tuple[str, str], ...]
) -> None:
    server = McpServer(command=("x",), prefix=prefix, replace=replace)
    try:
        mapped = map_names([tool(n) for n in names], server)
    except SourceProblem as exc:
        # Refused only for a real collision, and the message names two colliding tools.
        assert len({mapped_name(n, server) for n in names}) < len(names)
        assert "both become" in str(exc)
        return
    new = [t["function"]["name"] for t in mapped]
    assert new == [mapped_name(n, server) for n in names]
    back = dict(zip(new, names, strict=True))  # the application's reverse lookup
    assert len(back) == len(names) and [back[n] for n in new] == names
    assert all(t["function"]["parameters"] == {"type": "object"} for t in mapped)
