"""Source or snapshot, and the drift check (source/reader.py, source/snapshot.py).

A real module read in a real subprocess stands for the application; the snapshot is what a
recording run of the reader wrote. Each mode of ``--cardprobe-source-check`` and each state
(unchanged, changed, unreadable, no snapshot, spec edited) is a test, and so are snapshots
edited by hand and hostile listings, which end in a :class:`SourceProblem`, never a crash.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_cardprobe.source.listing import checked, from_mcp
from pytest_cardprobe.source.reader import SourcePolicy, SourceReader
from pytest_cardprobe.source.snapshot import FILE_NAME, read_snapshot, snapshot_path
from pytest_cardprobe.suite.sources import PromptSource, SourceProblem, ToolSource

TOOLS = '''\
def read_file(path: str) -> str:
    """{doc}

    Args:
      path: Path of the file.
    """


TOOLS = [read_file]
SYSTEM = {prompt!r}
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "snapapp").mkdir()
    (tmp_path / "snapapp" / "__init__.py").write_text("")
    write_app(tmp_path, "Read a text file.", "Be brief.")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def write_app(project: Path, doc: str, prompt: str) -> None:
    (project / "snapapp" / "tools.py").write_text(TOOLS.format(doc=doc, prompt=prompt))


SOURCE = ToolSource(python="snapapp.tools:TOOLS", convert="ollama")
SUITE = "app"


def reader(project: Path, **kw: Any) -> SourceReader:
    policy = SourcePolicy(cassette_dir=project / "cassettes", root=project, **kw)
    return SourceReader(policy)


def record(project: Path) -> SourceReader:
    recording = reader(project, recording=True)
    recording.tools(SUITE, project / "app.yaml", "tools", SOURCE)
    recording.prompt(
        SUITE, project / "app.yaml", "prompts.call", PromptSource("snapapp.tools:SYSTEM")
    )
    assert not snapshot_path(project / "cassettes", SUITE).exists()  # not before the run ends
    assert recording.flush() == [project / "cassettes" / SUITE / FILE_NAME]
    return recording


def test_a_recording_writes_what_went_on_the_wire_and_who_converted_it(project: Path) -> None:
    record(project)
    entries = read_snapshot(snapshot_path(project / "cassettes", SUITE), 10**7)
    assert entries is not None and set(entries) == {"tools", "prompts.call"}
    tools = entries["tools"]
    assert tools.source == "python: snapapp.tools:TOOLS (convert: ollama)"
    assert tools.identity["converter"] == "ollama" and tools.identity["version"]
    assert tools.value[0]["function"]["description"] == "Read a text file."
    assert entries["prompts.call"].value == "Be brief."
    # Recording again with nothing changed leaves the file as it is.
    again = reader(project, recording=True)
    again.tools(SUITE, project / "app.yaml", "tools", SOURCE)
    assert again.flush() == []


def test_replay_checks_the_source_and_says_so(project: Path) -> None:
    record(project)
    replay = reader(project)
    assert replay.tools(SUITE, project / "app.yaml", "tools", SOURCE)[0]["type"] == "function"
    assert replay.drift(SUITE) is None
    assert replay.header_lines() == [
        "app: tools from python: snapapp.tools:TOOLS (convert: ollama): checked against the "
        "source: unchanged"
    ]


def test_an_edited_docstring_makes_the_suite_stale_naming_tool_and_field(project: Path) -> None:
    record(project)
    write_app(project, "Read one text file of the project.", "Be brief.")
    replay = reader(project, rerecord=lambda path: f"pytest --live {path.name}")
    value = replay.tools(SUITE, project / "app.yaml", "tools", SOURCE)
    # Replay keeps playing what was recorded; every test of the suite is stale instead.
    assert value[0]["function"]["description"] == "Read a text file."
    source = "python: snapapp.tools:TOOLS (convert: ollama)"
    assert replay.drift(SUITE) == (
        f"stale: tools changed at the source ({source}) since the snapshot was recorded:\n"
        "  read_file: description changed\n"
        "re-record the suite: pytest --live app.yaml",
        # each change on its own, naming the source, for the one-line summaries
        [f"tools changed at the source ({source}): read_file: description changed"],
    )
    assert "CHANGED at the source" in replay.header_lines()[0]


EDITED_LINE = '): line 1: "Be brief." -> "Be brief, and polite."'


def test_an_edited_prompt_names_its_first_changed_line(project: Path) -> None:
    record(project)
    write_app(project, "Read a text file.", "Be brief, and polite.")
    replay = reader(project)
    replay.prompt(SUITE, project / "app.yaml", "prompts.call", PromptSource("snapapp.tools:SYSTEM"))
    drift = replay.drift(SUITE)
    assert drift is not None and drift[0].startswith("stale: prompts.call changed at the source")
    assert "line 1:" in drift[0] and drift[1][0].endswith(EDITED_LINE)


def break_app(project: Path) -> None:
    (project / "snapapp" / "tools.py").write_text("raise ImportError('no settings module')\n")


def test_an_unreadable_source_replays_the_snapshot_unchecked(project: Path) -> None:
    record(project)
    break_app(project)
    replay = reader(project)
    assert replay.tools(SUITE, project / "app.yaml", "tools", SOURCE)
    (line,) = replay.header_lines()
    assert "snapshot used unchecked (python: snapapp.tools:TOOLS" in line
    assert "ImportError: no settings module" in line


CHANGED_INTO_SOMETHING_UNUSABLE = {
    # The application renamed the list the suite names.
    "name gone": ("ALL_TOOLS = []\n", "snapapp.tools has no 'TOOLS'"),
    # ... or the tool `only:` picks (the commonest change: a tool renamed or dropped).
    "tool gone": (
        'def grep_code(query: str) -> str:\n    """Search."""\n\n\nTOOLS = [grep_code]\n',
        "only: 'read_file' is not among the 1 tool(s) the source gives ('grep_code')",
    ),
    "not a list": ("TOOLS = 'read_file'\n", "holds a str, not a list of tools"),
    "refused by the client": ("TOOLS = [42]\n", "the ollama client refused the tools"),
}


@pytest.mark.parametrize("change", sorted(CHANGED_INTO_SOMETHING_UNUSABLE))
def test_a_source_read_that_gives_something_unusable_is_no_reason_to_use_the_snapshot(
    project: Path, change: str
) -> None:
    # Auto replays the snapshot unchecked only when the source cannot be read here (the
    # application not installed, a server that does not start). A module that imports and no
    # longer holds what the suite names changed: replaying the snapshot would gate a copy.
    source = ToolSource(python="snapapp.tools:TOOLS", convert="ollama", only=("read_file",))
    recording = reader(project, recording=True)
    recording.tools(SUITE, project / "app.yaml", "tools", source)
    recording.flush()
    module, wanted = CHANGED_INTO_SOMETHING_UNUSABLE[change]
    (project / "snapapp" / "tools.py").write_text(module)
    replay = reader(project, rerecord=lambda path: f"pytest --live {path.name}")
    with pytest.raises(SourceProblem) as info:
        replay.tools(SUITE, project / "app.yaml", "tools", source)
    message = str(info.value)
    assert message.startswith("python: snapapp.tools:TOOLS") and wanted in message
    assert message.endswith(
        "; the source was read, so the snapshot does not stand in for it: fix the suite's "
        "`tools` or the application, then record the suite again: pytest --live app.yaml"
    )
    assert "cannot be used" in replay.header_lines()[0]


def test_a_module_moved_out_of_its_package_is_a_change_not_a_missing_application(
    project: Path,
) -> None:
    record(project)
    (project / "snapapp" / "tools.py").rename(project / "snapapp" / "toolset.py")
    with pytest.raises(SourceProblem, match=r"module 'snapapp\.tools' is not in the package"):
        reader(project).tools(SUITE, project / "app.yaml", "tools", SOURCE)


def test_check_always_makes_an_unreadable_source_a_problem(project: Path) -> None:
    record(project)
    break_app(project)
    with pytest.raises(SourceProblem) as info:
        reader(project, check="always").tools(SUITE, project / "app.yaml", "tools", SOURCE)
    assert str(info.value).startswith("python: snapapp.tools:TOOLS: ImportError: no settings")
    assert str(info.value).endswith("; --cardprobe-source-check always requires it")


def test_check_never_starts_nothing(project: Path) -> None:
    record(project)
    write_app(project, "Changed, but nobody looks.", "Be brief.")
    replay = reader(project, check="never")
    assert replay.tools(SUITE, project / "app.yaml", "tools", SOURCE)
    assert replay.drift(SUITE) is None
    assert "(not read (--cardprobe-source-check never))" in replay.header_lines()[0]


def test_no_snapshot_and_no_source_is_a_problem_that_says_to_record(project: Path) -> None:
    break_app(project)
    with pytest.raises(SourceProblem, match=r"no snapshot of it .* record the suite"):
        reader(project).tools(SUITE, project / "app.yaml", "tools", SOURCE)


def test_a_recording_needs_the_source(project: Path) -> None:
    break_app(project)
    with pytest.raises(SourceProblem, match="a recording run reads its sources"):
        reader(project, recording=True).tools(SUITE, project / "app.yaml", "tools", SOURCE)


def test_a_spec_edited_since_the_snapshot_needs_the_source(project: Path) -> None:
    record(project)
    break_app(project)
    narrowed = ToolSource(python="snapapp.tools:TOOLS", convert="ollama", only=("read_file",))
    with pytest.raises(SourceProblem, match="tools changed in the suite since the snapshot"):
        reader(project).tools(SUITE, project / "app.yaml", "tools", narrowed)


def test_a_converter_upgrade_is_named_as_the_reason(project: Path) -> None:
    record(project)
    path = snapshot_path(project / "cassettes", SUITE)
    data = json.loads(path.read_text())
    tools = data["entries"]["tools"]
    tools["identity"]["version"] = "0.0.1"
    tools["value"][0]["function"]["description"] = "Old words."
    from pytest_cardprobe.source.snapshot import digest

    tools["digest"] = digest(tools["value"])
    path.write_text(json.dumps(data))
    replay = reader(project)
    replay.tools(SUITE, project / "app.yaml", "tools", SOURCE)
    drift = replay.drift(SUITE)
    assert drift is not None and "the converter changed: ollama 0.0.1 → ollama " in drift[0]
    assert any("the converter changed" in change for change in drift[1])


def test_a_snapshot_edited_by_hand_is_refused(project: Path) -> None:
    record(project)
    path = snapshot_path(project / "cassettes", SUITE)
    path.write_text(path.read_text().replace("Read a text file.", "Read any file."))
    with pytest.raises(SourceProblem) as info:
        reader(project).tools(SUITE, project / "app.yaml", "tools", SOURCE)
    assert "does not match its digest (edited by hand?)" in str(info.value)
    assert "delete it and record again" in str(info.value)


def test_outcomes_travel_as_plain_data(project: Path) -> None:
    record(project)
    controller = reader(project)
    controller.tools(SUITE, project / "app.yaml", "tools", SOURCE)
    worker = reader(project, write=False)
    worker.load(json.loads(json.dumps(controller.export())))
    break_app(project)  # the worker never reads it: it has the controller's outcome
    assert worker.tools(SUITE, project / "app.yaml", "tools", SOURCE) == controller.tools(
        SUITE, project / "app.yaml", "tools", SOURCE
    )
    assert worker.header_lines() == controller.header_lines()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "name": st.text(max_size=10) | JSON,
        "description": st.text(max_size=10) | JSON,
        "inputSchema": st.just({"type": "object"}) | JSON,
    },
)


@settings(
    max_examples=200,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(listing=st.lists(FIELDS | JSON, max_size=4) | JSON)
def test_any_listing_gives_declarations_or_a_source_problem(listing: Any) -> None:
    try:
        tools = checked(from_mcp(listing))
    except SourceProblem as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert all(t["type"] == "function" and t["function"]["name"] for t in tools)


@settings(max_examples=150, derandomize=True, database=None, deadline=None)
@given(document=JSON, entry=JSON)
def test_any_snapshot_file_is_read_or_refused_by_name(
    tmp_path_factory: pytest.TempPathFactory, document: Any, entry: Any
) -> None:
    path = tmp_path_factory.mktemp("snap") / FILE_NAME
    if isinstance(document, dict):
        document = {**document, "cardprobe_sources": 1, "entries": {"tools": entry}}
    path.write_text(json.dumps(document))
    try:
        read_snapshot(path, 10**6)
    except SourceProblem as exc:
        assert f"the sources snapshot {path}" in str(exc) or FILE_NAME in str(exc)


def test_a_suite_snapshot_sits_in_its_cassette_folder_apart_from_models(tmp_path: Path) -> None:
    path = snapshot_path(tmp_path, "my suite")
    assert path == tmp_path / "my%20suite" / "@sources.json"
    from pytest_cardprobe.wire.cassettes.paths import path_part

    assert path_part("@sources.json") != "@sources.json"  # no model folder can be named so


def test_a_module_of_ten_thousand_tools_is_refused_and_a_long_one_needs_only(
    project: Path,
) -> None:
    (project / "snapapp" / "many.py").write_text(
        "def tools(n):\n    return [{'type': 'function', 'function': {'name': f't{i}', "
        "'parameters': {'type': 'object'}}} for i in range(n)]\n"
        "TOOLS = tools(10000)\nSOME = tools(500)\n"
    )
    problems = []
    for source in (ToolSource(python="snapapp.many:TOOLS"), ToolSource(python="snapapp.many:SOME")):
        with pytest.raises(SourceProblem) as info:
            reader(project, recording=True).tools(SUITE, project / "app.yaml", "tools", source)
        problems.append(str(info.value))
    assert "gives 10000 tools; cardprobe reads at most 1000 from one source" in problems[0]
    assert "gives 500 tools; one request declares at most 128" in problems[1]
    picked = ToolSource(python="snapapp.many:SOME", only=("t499", "t3"))
    tools = reader(project, recording=True).tools(SUITE, project / "app.yaml", "tools", picked)
    assert [t["function"]["name"] for t in tools] == ["t3", "t499"]


def test_header_lines_show_control_characters_as_escapes(tmp_path: Path) -> None:
    from pytest_cardprobe.source.reader import Outcome

    shown = reader(tmp_path)
    shown.outcomes[("app", "tools")] = Outcome("app", "tools", "mcp: evil\x1b[2J", "unchanged", [])
    assert shown.header_lines() == [
        "app: tools from mcp: evil\\x1b[2J: checked against the source: unchanged"
    ]
