"""Fuzz: suites and tools files with hostile leaves, through the loader and into requests.

The shipped card suite, call suite and tools file, each with a few hostile edits (see
``fuzzing.py``), written as YAML or JSON text and sometimes as broken bytes, are loaded by
``suite.loader.load_suite``. The result is a :class:`SuiteError` naming the suite or tools
file, or a suite whose every probe builds a request both APIs can send (a JSON body with
finite numbers and valid UTF-8), fingerprint and cassette path included, and whose cases
the judges accept. Anything else (a ValueError, a TypeError, a UnicodeEncodeError...) is a
bug of the loader: a suite that loads must be usable.

Budget: part of the fuzz total stated in ``tests/fuzz/test_fuzz_replies.py``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from fuzzing import ROOT, corrupted, fuzz_settings, mutated, to_json, to_yaml
from hypothesis import given
from hypothesis import strategies as st

from pytest_cardprobe.judge.call import ModelTurn, judge_calls
from pytest_cardprobe.judge.card import judge_card
from pytest_cardprobe.suite.context import SuiteLimits
from pytest_cardprobe.suite.loader import Suite, SuiteError, is_suite_file, load_suite
from pytest_cardprobe.suite.matrix import expand
from pytest_cardprobe.suite.request import build_request
from pytest_cardprobe.types import ToolCall
from pytest_cardprobe.wire.cassettes.fingerprint import fingerprint
from pytest_cardprobe.wire.cassettes.paths import cassette_path, cassette_path_problem
from pytest_cardprobe.wire.client import ChatClient, ClientSettings

CARDS = yaml.safe_load((ROOT / "cases" / "cards.yaml").read_text(encoding="utf-8"))
CALLS = yaml.safe_load((ROOT / "cases" / "tools.yaml").read_text(encoding="utf-8"))
TOOLS = yaml.safe_load((ROOT / "cases" / "tools" / "tools.json").read_text(encoding="utf-8"))
CLIENTS = [
    ChatClient(ClientSettings("http://127.0.0.1:9", api=api)) for api in ("ollama", "openai")
]


def _project(sandbox: Path) -> Path:
    if not (sandbox / "prompts").exists():
        shutil.copytree(ROOT / "cases" / "prompts", sandbox / "prompts")
        shutil.copytree(ROOT / "cases" / "tools", sandbox / "tools")
    return sandbox


def _usable(suite: Suite, root: Path) -> None:
    """Every probe of a loaded suite builds a request both APIs can send."""
    for probe in expand(suite, ["m"]):  # a channel that cannot carry a condition makes none
        assert probe.name
        for think in ("off", "on"):
            request = build_request(probe, {"temperature": 0, "num_ctx": 8}, think)
            for client in CLIENTS:
                _, _, body = client.wire_request(request)
                body.encode("utf-8")
            fingerprint(request, redact=["api_key"])
        cassette_path_problem(
            root, suite.name, probe.model, probe.case.id, probe.channel, probe.condition
        )
        cassette_path(root, suite.name, probe.model, probe.case.id, probe.channel, probe.condition)
    for case in suite.cases:
        if suite.is_call_suite:
            assert case.expect is not None
            judge_calls([ModelTurn("content", (), "")], case.expect, suite.tools)
        else:
            judge_card("", accept=case.accept, requires_input=case.requires_input)


def _load(path: Path, root: Path, data: bytes, named: tuple[Path, ...]) -> Any:
    path.write_bytes(data)
    is_suite_file(path)
    try:
        suite = load_suite(path, limits=SuiteLimits(roots=(root,)))
    except SuiteError as exc:
        assert exc.path in named, (exc.path, named)
        assert str(exc).startswith(str(exc.path)), str(exc)
        assert "\n" not in exc.problem[:400] or "Traceback" not in exc.problem
        return exc
    _usable(suite, root)
    return suite


def _document(draw: st.DrawFn, base: Any, yaml_too: bool) -> bytes:
    tree = draw(mutated(base, yaml_too=yaml_too))
    as_json = not yaml_too or draw(st.booleans())
    text = to_json(tree, ascii_only=draw(st.booleans())) if as_json else to_yaml(tree)
    return draw(corrupted(text))


@fuzz_settings(120)
@given(data=st.data())
def test_a_card_suite_loads_into_sendable_requests_or_is_a_suite_error(
    sandbox: Path, data: st.DataObject
) -> None:
    root = _project(sandbox)
    raw = _document(data.draw, CARDS, yaml_too=True)
    path = root / "suite.yaml"
    _load(path, root, raw, (path,))


@fuzz_settings(100)
@given(data=st.data())
def test_a_call_suite_loads_into_sendable_requests_or_is_a_suite_error(
    sandbox: Path, data: st.DataObject
) -> None:
    root = _project(sandbox)
    raw = _document(data.draw, CALLS, yaml_too=True)
    path = root / "calls.yaml"
    _load(path, root, raw, (path, root / "tools" / "tools.json"))


@fuzz_settings(120)
@given(data=st.data(), as_yaml=st.booleans())
def test_a_tools_file_loads_into_sendable_requests_or_is_a_suite_error(
    sandbox: Path, data: st.DataObject, as_yaml: bool
) -> None:
    root = _project(sandbox)
    name = "mine.yaml" if as_yaml else "mine.json"
    tools = root / "tools" / name
    tree = data.draw(mutated(TOOLS, yaml_too=as_yaml))
    tools.write_bytes(data.draw(corrupted(to_yaml(tree) if as_yaml else to_json(tree))))
    suite = root / "calls.yaml"
    text = to_yaml({**CALLS, "tools": f"tools/{name}"})
    _load(suite, root, text.encode("utf-8"), (suite, tools))


# The new limits and engines (turns, patterns, $ref cycles, names): values around each bound.
HOSTILE_PATTERNS = [
    "(a+)+b", "(a|aa)+$", "(.*a){12}", "(?=a)b", "(a)\\1", "a{1000}", "a{1001}", "a{,3}",
    "[\\W]", "[[:alpha:]]", "\\d+", "(", "é+", "\\p{L}+", "x" * 300,
]  # fmt: skip
NAMES = ["read_file", "rm\u202ef", "a\u200bb", "tool-1", "\x1b[2J"]


@st.composite
def limited_call_suite(draw: st.DrawFn) -> dict[str, Any]:
    """The shipped call suite with turn limits, argument regexes, schema patterns, $refs
    and tool names drawn around the loader's bounds."""
    suite = yaml.safe_load(yaml.safe_dump(CALLS))
    tools = yaml.safe_load(yaml.safe_dump(TOOLS))
    suite["tools"] = tools
    turns = st.sampled_from([1, 2, 5, 19, 20, 21, 1000, 10**6])
    if draw(st.booleans()):
        suite["max_turns"] = draw(turns)
    case = draw(st.sampled_from(suite["cases"]))
    if draw(st.booleans()):
        case["max_turns"] = draw(turns)
    pattern = draw(st.sampled_from(HOSTILE_PATTERNS))
    function = draw(st.sampled_from(tools))["function"]
    parameters = function.setdefault("parameters", {"type": "object", "properties": {}})
    spot = draw(st.integers(0, 4))
    if spot == 0:
        expect = case["expect"]
        if "call" in expect and isinstance(expect.get("args"), dict) and expect["args"]:
            expect["args"][next(iter(expect["args"]))] = {"regex": pattern}
    elif spot == 1:
        for prop in parameters.get("properties", {}).values():
            if isinstance(prop, dict) and prop.get("type") == "string":
                prop["pattern"] = pattern
                break
    elif spot == 2:
        parameters["patternProperties"] = {pattern: {"type": "string"}}
    elif spot == 3:
        parameters["$defs"] = {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}
    else:
        function["name"] = draw(st.sampled_from(NAMES))
    return suite


@fuzz_settings(100)
@given(suite=limited_call_suite())
def test_a_call_suite_at_the_new_limits_loads_usably_or_is_a_suite_error_at_once(
    sandbox: Path, suite: dict[str, Any]
) -> None:
    import time

    root = _project(sandbox)
    path = root / "calls.yaml"
    started = time.monotonic()
    loaded = _load(path, root, to_yaml(suite).encode("utf-8"), (path,))
    if isinstance(loaded, Suite):
        limit = SuiteLimits().max_turns
        assert all(case.max_turns <= limit for case in loaded.cases)
        attack = {"path": "a" * 39, "query": "a" * 39, "a" * 39: "a" * 39}
        for case in loaded.cases:
            for spec in case.expect.calls if case.expect else ():
                call = ToolCall(spec.name, dict(attack))
                judge_calls([ModelTurn("tool_calls", (call,), "")], case.expect, loaded.tools)
    # A hang guard, not a measurement: no pattern backtracks, no $ref loops for ever.
    assert time.monotonic() - started < 120
