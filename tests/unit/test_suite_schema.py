"""The suite schema and the loader agree: the schema decides structure, the loader only adds
what a schema cannot say. Generated documents check it over the whole kind of input."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_cardprobe.suite.calls import DEFAULT_MAX_TURNS, MATCHERS
from pytest_cardprobe.suite.loader import (
    DEFAULT_CHANNELS,
    DEFAULT_CONDITIONS,
    DEFAULT_SAMPLES,
    MAX_SAMPLES,
    SCHEMA_PATH,
    SuiteError,
    load_suite,
)
from pytest_cardprobe.suite.schema import strict_types

SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
# The loader's reading of the schema: `integer` is a JSON integer (2.0 is not one).
VALIDATOR = strict_types(jsonschema.Draft202012Validator)(SCHEMA)

CARD: dict[str, Any] = {
    "cardprobe": 1,
    "name": "mini",
    "channels": ["prose", "tool"],
    "conditions": ["cold", "history"],
    "samples": 2,
    "prompts": {"prose": "prose.md", "tool": "tool.md"},
    "tool": {
        "type": "function",
        "function": {
            "name": "render_adaptive_card",
            "description": "Show a card.",
            "parameters": {
                "type": "object",
                "properties": {"body": {"type": "array", "items": {"type": "object"}}},
            },
        },
    },
    "history": [
        {"role": "user", "content": "Hi there."},
        {"role": "assistant", "content": "Hello."},
    ],
    "options": {"num_predict": 64},
    "cases": [
        {"id": "date", "prompt": "Pick a day.", "accept": ["Input.Date"]},
        {"id": "control", "prompt": "Capital of France?", "accept": []},
    ],
}

CALL: dict[str, Any] = {
    "cardprobe": 1,
    "judge": "call",
    "conditions": ["cold"],
    "max_turns": 4,
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "lines": {"type": "array"}},
                },
            },
        },
        {"type": "function", "function": {"name": "run_tests", "description": "Run tests."}},
    ],
    "cases": [
        {
            "id": "read",
            "prompt": "Show me the README.",
            "expect": {"call": "read_file", "args": {"path": {"regex": "README.*"}}},
            "canary": "needs_tool",
        },
        {
            "id": "loop",
            "prompt": "Read setup.cfg then run the tests.",
            "expect": {
                "sequence": ["read_file", {"call": "run_tests"}],
                "final": {"contains": "ok"},
            },
            "results": {"read_file": "[tool:pytest]"},
        },
        {
            "id": "lines",
            "prompt": "Show the first lines.",
            "expect": {
                "calls": [{"call": "read_file", "args": {"lines": {"each": {"type": "integer"}}}}]
            },
        },
        {"id": "chat", "prompt": "What is a monad?", "expect": {"no_call": True}},
    ],
}

# Values a mutation writes: one of each JSON type, and near-misses of the real ones.
LEAVES = [
    None, True, False, 0, 1, -1, 2, 2.5, 1.0, 2.0, "", " ", "x", "tool", "call", "cold", "seeded",
    "read_file", "function", "object", [], ["prose"], ["call"], ["x", "x"], {},
    {"type": "string"}, {"regex": "a"}, {"any": True}, {"optional": 3}, {"absent": True},
    {"length": [1, 2]}, {"call": "read_file"}, {"no_call": True},
]  # fmt: skip

# What only the loader checks (docs/design.md §3): a document the schema accepts may still
# be refused for one of these, and for nothing else.
LOADER_ONLY = (
    "duplicate case id",
    "not found:",
    "is empty:",
    "not in the suite's element vocabulary",
    "is not a declared tool",
    "has no argument",
    "declares no arguments",
    "turns alternate user, assistant",
    "even number (at least 2) of turns",
    "samples is more than the limit",
    "low <= high",
    "invalid regular expression",
    "leaves no turn for the answer",
    "so `absent: true` could never pass",
    "is not a JSON Schema draft cardprobe knows",
    "unknown judge",
    "not a valid JSON Schema",
    "does not resolve",
    "is declared twice",
    "ignore_case (given beside the enclosing matcher)",
    "resolves to",
    "prompt file",
)


def paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(paths(item, (*at, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(paths(item, (*at, index)))
    return found


def parent(document: Any, at: tuple[Any, ...]) -> Any:
    for part in at[:-1]:
        document = document[part]
    return document


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    """A valid card or call suite with up to three edits: a value replaced, a key dropped,
    a key added."""
    document = copy.deepcopy(draw(st.sampled_from([CARD, CALL])))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.sampled_from(paths(document)[1:]))
        holder = parent(document, at)
        action = draw(st.sampled_from(["replace", "replace", "drop", "add"]))
        if action == "replace":
            holder[at[-1]] = copy.deepcopy(draw(st.sampled_from(LEAVES)))
        elif action == "drop":
            del holder[at[-1]]
        elif isinstance(holder, dict):
            key = draw(st.sampled_from(["id", "args", "final", "ignore_case", "extra", "tool"]))
            holder[key] = copy.deepcopy(draw(st.sampled_from(LEAVES)))
        else:
            holder.append(copy.deepcopy(draw(st.sampled_from(LEAVES))))
    return document


def write(folder: Path, document: dict[str, Any]) -> Path:
    (folder / "prose.md").write_text("Reply with card JSON.\n", encoding="utf-8")
    (folder / "tool.md").write_text("Call the tool.\n", encoding="utf-8")
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


@settings(
    max_examples=400,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(document=documents())
def test_the_schema_and_the_loader_accept_and_refuse_alike(
    tmp_path_factory: pytest.TempPathFactory, document: dict[str, Any]
) -> None:
    schema_ok = VALIDATOR.is_valid(document)
    path = write(tmp_path_factory.mktemp("agree"), document)
    try:
        load_suite(path)
    except SuiteError as error:
        assert error.path == path
        if schema_ok:
            # Refused although the schema accepts it: only for a rule a schema cannot say.
            assert any(words in error.problem for words in LOADER_ONLY), str(error)
    else:
        assert schema_ok, [e.message for e in VALIDATOR.iter_errors(document)]


def test_the_shipped_documents_are_valid() -> None:
    for document in (CARD, CALL):
        assert VALIDATOR.is_valid(document), list(VALIDATOR.iter_errors(document))


def test_the_schema_names_its_draft_and_is_valid_for_it() -> None:
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_each_default_is_the_loaders() -> None:
    top = SCHEMA["properties"]
    card = SCHEMA["$defs"]["cardSuite"]["properties"]
    call = SCHEMA["$defs"]["callSuite"]["properties"]
    assert top["samples"]["default"] == DEFAULT_SAMPLES
    # The cap is the ini option's, written once (suite/context.py): the schema names the
    # option, not a copy of its default.
    assert "At most the ini option cardprobe_max_samples " in top["samples"]["description"]
    assert str(MAX_SAMPLES) not in top["samples"]["description"]
    assert tuple(card["channels"]["default"]) == DEFAULT_CHANNELS
    assert tuple(card["conditions"]["default"]) == DEFAULT_CONDITIONS
    assert tuple(call["conditions"]["default"]) == DEFAULT_CONDITIONS
    assert call["max_turns"]["default"] == DEFAULT_MAX_TURNS


def test_every_matcher_the_judge_knows_can_be_written() -> None:
    written = set(SCHEMA["$defs"]["matcherMapping"]["properties"]) - {"ignore_case"}
    assert set(MATCHERS) <= written
    assert {"absent", "optional", "each", "length"} <= written
