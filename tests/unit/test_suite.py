"""The suite stage: YAML suite files → dataclasses, their JSON Schema, and the shipped suite."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_cardprobe.suite.loader import (
    CHANNELS,
    CONDITIONS,
    DEFAULT_VOCABULARY,
    SCHEMA_PATH,
    Case,
    SeedTurn,
    Suite,
    SuiteError,
    Turn,
    is_suite_file,
    load_suite,
)

ROOT = Path(__file__).resolve().parents[2]
CASES_DIR = ROOT / "cases"
SHIPPED = CASES_DIR / "cards.yaml"
SHIPPED_CHANNELS = ("prose", "tool", "retry")
SHIPPED_CONDITIONS = ("cold", "history", "seeded", "schema")

# The offending line of each malformed variant carries this YAML comment, so the expected
# line number is computed from the text instead of being hard-coded.
MARK = "# <-"

CASES_BLOCK = """\
cases:
  - id: date
    prompt: Pick a day for the picnic.
    accept: [Input.Date]
  - id: facts
    prompt: Show my flight details.
    accept: [FactSet]
  - id: control
    prompt: What is the capital of France?
    accept: []
"""

TOOL_BLOCK = """\
tool:
  type: function
  function:
    name: render_adaptive_card
    description: Show an Adaptive Card to the user.
    parameters:
      type: object
      properties:
        body:
          type: array
          items: {type: object}
      required: [body]
"""

BASE = (
    """\
cardprobe: 1
name: mini
judge: card
channels: [prose, tool]
conditions: [cold, history]
samples: 2
prompts:
  prose: prose.md
  tool: tool.md
options:
  num_predict: 64
"""
    + TOOL_BLOCK
    + """\
history:
  - role: user
    content: Any tips for a picnic?
  - role: assistant
    content: Pick a shady spot and pack water.
"""
    + CASES_BLOCK
)


def write_suite(tmp_path: Path, text: str, name: str = "suite.yaml") -> Path:
    """Write a suite plus the two prompt files it references."""
    (tmp_path / "prose.md").write_text("Reply with card JSON.\n", encoding="utf-8")
    (tmp_path / "tool.md").write_text("Call the tool.\n", encoding="utf-8")
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def edit(text: str, *replacements: tuple[str, str]) -> str:
    for old, new in replacements:
        assert old in text, f"variant does not apply: {old!r}"
        text = text.replace(old, new, 1)
    return text


def marked_line(text: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if MARK in line:
            return number
    return None


def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


def schema_errors(document: object) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema())
    return [error.message for error in validator.iter_errors(document)]


# --------------------------------------------------------------------------- shipped suite


def test_shipped_suite_loads_with_the_reference_case_set() -> None:
    suite = load_suite(SHIPPED)

    assert len(suite.cases) == 25
    ids = [case.id for case in suite.cases]
    assert len(set(ids)) == 25
    assert [case.id for case in suite.cases if case.is_control] == ["control"]
    assert suite.case("control").requires_input is False
    choice = [case.id for case in suite.cases if case.accept == ("Input.ChoiceSet",)]
    assert len(choice) == 6
    assert suite.case("bar").accept == ("Chart.VerticalBar", "Chart.HorizontalBar")
    assert suite.case("rating_shown").accept == ("Rating",)
    assert suite.case("rating_asked").accept == ("Input.Rating",)
    assert suite.case("date").requires_input is True
    assert suite.case("facts").requires_input is False

    assert (suite.samples, suite.judge) == (2, "card")
    assert suite.channels == SHIPPED_CHANNELS
    assert suite.conditions == SHIPPED_CONDITIONS
    assert suite.options == {"num_predict": 512}
    assert suite.tool_name == "render_adaptive_card"
    assert [turn.role for turn in suite.history] == ["user", "assistant"]
    assert suite.vocabulary == DEFAULT_VOCABULARY


def test_shipped_case_ids_do_not_collide_with_k_selection_words() -> None:
    # `-k tool` / `-k cold` must select channels and conditions, not a case by accident.
    words = (*CHANNELS, *CONDITIONS)
    for case in load_suite(SHIPPED).cases:
        assert not any(word in case.id for word in words), case.id


def test_shipped_prompts_are_the_referenced_files() -> None:
    suite = load_suite(SHIPPED)
    for channel in ("prose", "tool"):
        path = suite.prompt_files[channel]
        assert path == (CASES_DIR / "prompts" / f"{channel}.md").resolve()
        assert suite.prompts[channel] == path.read_text(encoding="utf-8")
        # The target model is tiny; a long system prompt eats its context.
        assert len(path.read_bytes()) < 4096


def sections(text: str) -> dict[str, str]:
    """Split a prompt into ``{heading: text up to the next heading}``; ``""`` is the preamble."""
    parts = re.split(r"^(#{1,6} .*)$", text, flags=re.MULTILINE)
    found = {"": parts[0]}
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        found[heading] = body
    return found


def test_prompts_share_the_element_catalogue_byte_for_byte() -> None:
    suite = load_suite(SHIPPED)
    prose = sections(suite.prompts["prose"])
    tool = sections(suite.prompts["tool"])

    catalogue = prose["## Element catalogue"]
    assert catalogue == tool["## Element catalogue"]
    for element in DEFAULT_VOCABULARY:
        assert re.search(rf"(?<![\w.]){re.escape(element)}(?![\w.])", catalogue), element
    # Everything except the emission rules is shared, so an arm gap belongs to the channel.
    assert set(prose) == set(tool)
    differing = [heading for heading in prose if prose[heading] != tool[heading]]
    assert differing == ["## How to answer"]
    assert "render_adaptive_card" in tool["## How to answer"]
    assert "render_adaptive_card" not in prose["## How to answer"]


def shipped_suites() -> list[Path]:
    return sorted(p for p in CASES_DIR.rglob("*") if is_suite_file(p))


def test_every_shipped_suite_validates_against_the_schema() -> None:
    suites = shipped_suites()
    assert SHIPPED in suites
    for path in suites:
        assert schema_errors(yaml.safe_load(path.read_text(encoding="utf-8"))) == [], path
        load_suite(path)


def test_schema_is_valid_draft_2020_12_and_ships_the_reference_vocabulary() -> None:
    loaded = schema()
    jsonschema.Draft202012Validator.check_schema(loaded)
    assert loaded["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert tuple(loaded["$defs"]["referenceType"]["enum"]) == DEFAULT_VOCABULARY


def test_schema_and_loader_allow_the_same_top_level_keys(tmp_path: Path) -> None:
    path = write_suite(tmp_path, BASE + "bogus: 1\n")
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    allowed = info.value.problem.split("allowed: ", 1)[1]
    assert set(allowed.split(", ")) == set(schema()["properties"])


def test_reference_vocabulary_has_33_top_level_and_5_nesting_types() -> None:
    assert len(DEFAULT_VOCABULARY) == len(set(DEFAULT_VOCABULARY)) == 38
    for nested in ("CarouselPage", "TableRow", "TableCell", "Column", "TabPage"):
        assert nested in DEFAULT_VOCABULARY


# --------------------------------------------------------------------------- valid suites


def test_base_suite_loads(tmp_path: Path) -> None:
    path = write_suite(tmp_path, BASE)
    suite = load_suite(path)

    assert isinstance(suite, Suite)
    assert suite.path == path
    assert suite.name == "mini"
    assert suite.prompts == {"prose": "Reply with card JSON.\n", "tool": "Call the tool.\n"}
    assert suite.history == (
        Turn("user", "Any tips for a picnic?"),
        Turn("assistant", "Pick a shady spot and pack water."),
    )
    assert suite.case("date") == Case(
        id="date", prompt="Pick a day for the picnic.", accept=("Input.Date",),
        requires_input=True, line=BASE.splitlines().index("  - id: date") + 1,
    )  # fmt: skip
    with pytest.raises(KeyError):
        suite.case("nope")
    assert schema_errors(yaml.safe_load(BASE)) == []
    hash(suite)  # usable as a dict key / in sets despite holding mappings


def test_defaults_apply_when_optional_keys_are_absent(tmp_path: Path) -> None:
    text = edit(
        BASE,
        ("name: mini\njudge: card\nchannels: [prose, tool]\n", ""),
        ("conditions: [cold, history]\nsamples: 2\n", ""),
        ("options:\n  num_predict: 64\n", ""),
    )
    suite = load_suite(write_suite(tmp_path, text, name="picnic.yml"))
    assert suite.name == "picnic"
    assert suite.judge == "card"
    assert suite.channels == ("prose", "tool")
    assert suite.conditions == ("cold", "history")
    assert suite.samples == 2
    assert suite.vocabulary == DEFAULT_VOCABULARY
    assert suite.options == {}


def test_prose_only_cold_suite_needs_no_tool_or_history(tmp_path: Path) -> None:
    text = edit(
        BASE,
        ("channels: [prose, tool]", "channels: [prose]"),
        ("conditions: [cold, history]", "conditions: [cold]"),
        ("  tool: tool.md\n", ""),
        (TOOL_BLOCK, ""),
        ("history:\n", "xhistory:\n"),
    ).replace("xhistory:\n  - role: user\n    content: Any tips for a picnic?\n", "")
    text = text.replace("  - role: assistant\n    content: Pick a shady spot and pack water.\n", "")
    suite = load_suite(write_suite(tmp_path, text))
    assert suite.tool == {}
    assert suite.tool_name == ""
    assert suite.history == ()
    assert set(suite.prompts) == {"prose"}
    assert schema_errors(yaml.safe_load(text)) == []


def test_prompt_for_an_undeclared_channel_is_checked_but_not_returned(tmp_path: Path) -> None:
    text = edit(BASE, ("channels: [prose, tool]", "channels: [tool]"))
    suite = load_suite(write_suite(tmp_path, text))
    assert set(suite.prompts) == set(suite.prompt_files) == {"tool"}


def test_requires_input_defaults_from_accept_and_can_be_overridden(tmp_path: Path) -> None:
    text = edit(
        BASE,
        ("    accept: [Input.Date]\n", "    accept: [Input.Date, TextBlock]\n"),
        ("    accept: [FactSet]\n", "    accept: [FactSet]\n    requires_input: true\n"),
    )
    suite = load_suite(write_suite(tmp_path, text))
    assert suite.case("date").requires_input is False  # a TextBlock alone would answer it
    assert suite.case("facts").requires_input is True
    assert suite.case("control").requires_input is False


def test_opt_in_channels_and_conditions_load(tmp_path: Path) -> None:
    text = edit(
        BASE,
        ("channels: [prose, tool]", "channels: [prose, tool, retry]"),
        ("conditions: [cold, history]", "conditions: [cold, history, seeded, schema]"),
        (
            "samples: 2\n",
            "samples: 2\nallow_unknown_types: true\nseed_turn:\n  user: Show a date picker.\n"
            "  card: {type: AdaptiveCard, body: [{type: Input.Date, id: d}]}\n",
        ),
    )
    suite = load_suite(write_suite(tmp_path, text))
    assert suite.channels == CHANNELS
    assert suite.conditions == CONDITIONS
    assert suite.allow_unknown_types is True
    assert suite.seed_turn == SeedTurn(
        "Show a date picker.", {"type": "AdaptiveCard", "body": [{"type": "Input.Date", "id": "d"}]}
    )
    assert schema_errors(yaml.safe_load(text)) == []


def test_retry_only_suite_needs_both_prompts(tmp_path: Path) -> None:
    suite = load_suite(
        write_suite(tmp_path, edit(BASE, ("channels: [prose, tool]", "channels: [retry]")))
    )
    assert set(suite.prompts) == {"prose", "tool"}


def test_custom_vocabulary_and_judge(tmp_path: Path) -> None:
    text = edit(
        BASE,
        ("judge: card", "judge: strict"),
        ("samples: 2\n", "samples: 2\nvocabulary: [Input.Date, FactSet, Widget]\n"),
        ("    accept: [FactSet]\n", "    accept: [Widget]\n"),
    )
    path = write_suite(tmp_path, text)
    suite = load_suite(path, known_judges=("card", "strict"))
    assert suite.judge == "strict"
    assert suite.vocabulary == ("Input.Date", "FactSet", "Widget")
    assert suite.case("facts").accept == ("Widget",)
    with pytest.raises(SuiteError, match="unknown judge 'strict'; known judges: call, card"):
        load_suite(path)


# --------------------------------------------------------------------------- malformed suites

# (test id, replacements, expected key or None, a substring of the problem)
VARIANTS: list[tuple[str, tuple[tuple[str, str], ...], str | None, str]] = [
    ("unknown-top-key", (("samples: 2\n", f"samples: 2\ncolour: red  {MARK}\n"),), "colour",
     "unknown key"),
    ("misspelt-top-key", (("samples: 2", f"sample: 2  {MARK}"),), "sample",
     "did you mean 'samples'"),
    ("unknown-case-key",
     (("    accept: [FactSet]\n", f"    accept: [FactSet]\n    expect: card  {MARK}\n"),),
     "cases[1].expect", "unknown key"),
    ("missing-cases", ((CASES_BLOCK, ""),), "cases", "missing required key"),
    ("empty-cases", ((CASES_BLOCK, f"cases: []  {MARK}\n"),), "cases", "non-empty list"),
    ("duplicate-id", (("  - id: facts", f"  - id: date  {MARK}"),), "cases[1].id",
     "duplicate case id 'date' (first used on line"),
    ("id-with-space", (("  - id: date", f"  - id: my date  {MARK}"),), "cases[0].id",
     "got 'my date'"),
    ("id-not-string", (("  - id: date", f"  - id: 7  {MARK}"),), "cases[0].id", "got 7"),
    ("missing-case-prompt",
     (("  - id: date\n    prompt: Pick a day for the picnic.\n", f"  - id: date  {MARK}\n"),),
     "cases[0].prompt", "missing required key"),
    ("empty-case-prompt",
     (("    prompt: Pick a day for the picnic.", f"    prompt: ''  {MARK}"),),
     "cases[0].prompt", "non-empty question"),
    ("missing-prompt-file", (("  tool: tool.md", f"  tool: nowhere.md  {MARK}"),),
     "prompts.tool", "prompt file not found"),
    ("missing-prompt-for-channel", (("  tool: tool.md\n", ""), ("prompts:", f"prompts:  {MARK}")),
     "prompts.tool", "missing required key"),
    ("unknown-prompts-key",
     (("  tool: tool.md\n", f"  tool: tool.md\n  voice: voice.md  {MARK}\n"),),
     "prompts.voice", "allowed: prose, tool"),
    ("samples-zero", (("samples: 2", f"samples: 0  {MARK}"),), "samples", "got 0"),
    ("samples-negative", (("samples: 2", f"samples: -1  {MARK}"),), "samples", "got -1"),
    ("samples-string", (("samples: 2", f"samples: '2'  {MARK}"),), "samples", "got '2'"),
    ("samples-float", (("samples: 2", f"samples: 2.5  {MARK}"),), "samples", "got 2.5"),
    ("samples-bool", (("samples: 2", f"samples: true  {MARK}"),), "samples", "got true"),
    ("unknown-judge", (("judge: card", f"judge: vibes  {MARK}"),), "judge",
     "unknown judge 'vibes'; known judges: call, card"),
    ("unknown-channel", (("channels: [prose, tool]", f"channels: [prose, voice]  {MARK}"),),
     "channels[1]", "unknown channel 'voice'; use prose, tool, retry"),
    ("retry-without-tool",
     (("channels: [prose, tool]", "channels: [prose, retry]"), (TOOL_BLOCK, "")),
     "tool", "the `retry` channel needs a declaration"),
    ("retry-without-tool-prompt",
     (("channels: [prose, tool]", "channels: [prose, retry]"), ("  tool: tool.md\n", ""),
      ("prompts:", f"prompts:  {MARK}")),
     "prompts.tool", "missing required key"),
    ("seeded-without-seed-turn",
     (("conditions: [cold, history]", "conditions: [cold, seeded]"),),
     "seed_turn", "the `seeded` condition needs a user text and a card"),
    ("seed-turn-card-not-json",
     (("samples: 2\n", f"samples: 2\nseed_turn:\n  user: Show a date.\n  card: hello  {MARK}\n"),),
     "seed_turn.card", "non-empty mapping or list, got 'hello'"),
    ("seed-turn-unknown-key",
     (("samples: 2\n", "samples: 2\nseed_turn:\n  user: Show a date.\n  card: {type: Input.Date}\n"
       f"  assistant: hi  {MARK}\n"),),
     "seed_turn.assistant", "unknown key"),
    ("allow-unknown-not-bool",
     (("samples: 2\n", f"samples: 2\nallow_unknown_types: sometimes  {MARK}\n"),),
     "allow_unknown_types", "expected true or false, got 'sometimes'"),
    ("channels-not-list", (("channels: [prose, tool]", f"channels: tool  {MARK}"),),
     "channels", "non-empty list of channels, got 'tool'"),
    ("unknown-condition", (("conditions: [cold, history]", f"conditions: [cold, warm]  {MARK}"),),
     "conditions[1]", "unknown condition 'warm'"),
    ("accept-not-list", (("    accept: [FactSet]", f"    accept: FactSet  {MARK}"),),
     "cases[1].accept", "expected a list of element type names ([] for a prose control), "
     "got 'FactSet'"),
    ("accept-type-not-in-vocabulary",
     (("    accept: [FactSet]", f"    accept: [FactSheet]  {MARK}"),),
     "cases[1].accept[0]", "did you mean 'FactSet'"),
    ("accept-type-twice", (("    accept: [FactSet]", f"    accept: [FactSet, FactSet]  {MARK}"),),
     "cases[1].accept[1]", "listed twice"),
    ("control-requires-input",
     (("    accept: []\n", f"    accept: []\n    requires_input: true  {MARK}\n"),),
     "cases[2].requires_input", "negative control"),
    ("requires-input-not-bool",
     (("    accept: [FactSet]\n", f"    accept: [FactSet]\n    requires_input: maybe  {MARK}\n"),),
     "cases[1].requires_input", "expected true or false"),
    ("yaml-syntax-error",
     (("    prompt: Show my flight details.", f"    prompt: Show: my flight  {MARK}"),),
     None, "invalid YAML: mapping values are not allowed here"),
    ("duplicate-yaml-key", (("samples: 2\n", f"samples: 2\nsamples: 3  {MARK}\n"),), "samples",
     "duplicate key 'samples' (first defined on line 6)"),
    ("duplicate-yaml-key-in-case",
     (("    accept: [FactSet]\n", f"    accept: [FactSet]\n    accept: []  {MARK}\n"),),
     "cases[1].accept", "duplicate key 'accept'"),
    ("version-2", (("cardprobe: 1", f"cardprobe: 2  {MARK}"),), "cardprobe",
     "unsupported suite format version 2"),
    ("missing-version", (("cardprobe: 1\n", ""),), "cardprobe", "missing required key"),
    ("history-bad-role", (("  - role: assistant", f"  - role: system  {MARK}"),),
     "history[1].role", "unknown role 'system'"),
    ("history-wrong-order", (("  - role: user", f"  - role: assistant  {MARK}"),),
     "history[0].role", "expected 'user' here"),
    ("history-odd-length",
     (("history:\n", f"history:  {MARK}\n"),
      ("  - role: assistant\n    content: Pick a shady spot and pack water.\n", "")),
     "history", "got a list of 1 item"),
    ("history-unknown-key",
     (("    content: Any tips for a picnic?\n",
       f"    content: Any tips for a picnic?\n    name: Sam  {MARK}\n"),),
     "history[0].name", "unknown key"),
    ("missing-history", (("history:\n", f"xhistory:  {MARK}\n"),), "xhistory", "unknown key"),
    ("missing-tool", ((TOOL_BLOCK, ""),), "tool", "the `tool` channel needs a declaration"),
    ("tool-without-body",
     (("      properties:\n        body:", f"      properties:  {MARK}\n        cards:"),),
     "tool.function.parameters.properties.body", "`body` property"),
    ("tool-bad-name",
     (("    name: render_adaptive_card", f"    name: render card  {MARK}"),),
     "tool.function.name", "must be letters"),
    ("options-not-mapping", (("options:\n  num_predict: 64\n", f"options: fast  {MARK}\n"),),
     "options", "expected a mapping, got 'fast'"),
    ("options-date-value", (("  num_predict: 64", f"  seed: 2024-01-01  {MARK}"),),
     "options.seed", "cannot be sent as JSON"),
    ("impossible-date", (("name: mini", f"name: 2024-13-45  {MARK}"),), "name",
     "cannot read value"),
    ("custom-tag", (("name: mini", f"name: !secret mini  {MARK}"),), "name",
     "cannot read value"),
    ("merge-key",
     (("options:\n  num_predict: 64\n", f"options:\n  <<: {{num_predict: 64}}  {MARK}\n"),),
     "options", "merge keys"),
    ("recursive-alias",
     (("options:\n  num_predict: 64\n", f"options: &o\n  nested: *o  {MARK}\n"),),
     "options.nested", "recursive YAML alias"),
    ("two-documents", ((CASES_BLOCK, CASES_BLOCK + f"---  {MARK}\nname: other\n"),), None,
     "invalid YAML: but found another document"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("replacements", "key", "problem"),
    [pytest.param(r, k, p, id=name) for name, r, k, p in VARIANTS],
)
def test_malformed_suite_raises_one_located_suite_error(
    tmp_path: Path, replacements: tuple[tuple[str, str], ...], key: str | None, problem: str
) -> None:
    text = edit(BASE, *replacements)
    path = write_suite(tmp_path, text)

    with pytest.raises(SuiteError) as info:
        load_suite(path)

    error = info.value
    line = marked_line(text)
    assert (error.path, error.key, error.line) == (path, key, line)
    assert problem in error.problem
    prefix = str(path) + (f":{line}" if line else "") + (f": {key}" if key else "") + ": "
    assert str(error).startswith(prefix), str(error)
    assert "suite.yaml" in str(error)


# Variants whose fault a JSON Schema can express: the schema must reject them too, so editors
# using the schema and the loader never disagree about these.
SCHEMA_REJECTS = [
    "unknown-top-key",
    "misspelt-top-key",
    "unknown-case-key",
    "missing-cases",
    "empty-cases",
    "id-with-space",
    "id-not-string",
    "missing-case-prompt",
    "empty-case-prompt",
    "missing-prompt-for-channel",
    "unknown-prompts-key",
    "samples-zero",
    "samples-negative",
    "samples-string",
    "samples-float",
    "samples-bool",
    "unknown-channel",
    "channels-not-list",
    "unknown-condition",
    "retry-without-tool",
    "retry-without-tool-prompt",
    "seeded-without-seed-turn",
    "seed-turn-card-not-json",
    "seed-turn-unknown-key",
    "allow-unknown-not-bool",
    "accept-not-list",
    "accept-type-not-in-vocabulary",
    "accept-type-twice",
    "control-requires-input",
    "requires-input-not-bool",
    "version-2",
    "missing-version",
    "history-bad-role",
    "history-wrong-order",
    "history-unknown-key",
    "missing-history",
    "missing-tool",
    "tool-without-body",
    "tool-bad-name",
    "options-not-mapping",
]


@pytest.mark.parametrize("name", SCHEMA_REJECTS)
def test_schema_rejects_what_the_loader_rejects(tmp_path: Path, name: str) -> None:
    replacements = next(r for n, r, _, _ in VARIANTS if n == name)
    text = edit(BASE, *replacements)
    with pytest.raises(SuiteError):
        load_suite(write_suite(tmp_path, text))
    assert schema_errors(yaml.safe_load(text)), f"schema accepts {name}"


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        pytest.param("", None, "empty file", id="empty"),
        pytest.param("# just a comment\n", None, "empty file", id="comment-only"),
        pytest.param("- cardprobe: 1\n", 1, "expected a mapping of suite keys", id="list"),
        pytest.param("cardprobe\n", 1, "got 'cardprobe'", id="scalar"),
        pytest.param("cardprobe: 1\ncases: [\n", 3, "invalid YAML", id="unclosed-flow"),
        pytest.param("cardprobe: 1\n\tcases: []\n", 2, "invalid YAML", id="tab-indent"),
    ],
)
def test_unusable_documents_raise_suite_error(
    tmp_path: Path, text: str, line: int | None, problem: str
) -> None:
    path = write_suite(tmp_path, text)
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert info.value.line == line
    assert problem in info.value.problem
    assert str(info.value).startswith(f"{path}{f':{line}' if line else ''}: ")


def test_empty_prompt_file_is_an_error(tmp_path: Path) -> None:
    path = write_suite(tmp_path, BASE)
    (tmp_path / "tool.md").write_text("  \n", encoding="utf-8")
    with pytest.raises(SuiteError, match=r"prompts\.tool: prompt file is empty"):
        load_suite(path)


def test_missing_prompt_error_names_the_resolved_path(tmp_path: Path) -> None:
    (tmp_path / "suites").mkdir()
    text = edit(BASE, ("  tool: tool.md", "  tool: ../prompts/tool.md"))
    path = write_suite(tmp_path / "suites", text)
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert str((tmp_path / "prompts" / "tool.md").resolve()) in str(info.value)


def test_unreadable_or_binary_files_raise_suite_error(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="cannot read suite file"):
        load_suite(tmp_path / "absent.yaml")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"cardprobe: 1\nname: \xff\xfe\n")
    with pytest.raises(SuiteError, match="not UTF-8"):
        load_suite(binary)


def test_error_names_the_path_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_suite(tmp_path, edit(BASE, ("samples: 2", "samples: 0")))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SuiteError) as info:
        load_suite(Path("suite.yaml"))
    assert str(info.value) == "suite.yaml:6: samples: expected an integer >= 1, got 0"


def test_suite_error_formats_and_pickles() -> None:
    error = SuiteError(Path("cases/bad.yaml"), "bad thing", "cases[3].accept", 12)
    assert str(error) == "cases/bad.yaml:12: cases[3].accept: bad thing"
    assert str(SuiteError(Path("a.yaml"), "empty file")) == "a.yaml: empty file"
    assert str(SuiteError(Path("a.yaml"), "missing", key="cases")) == "a.yaml: cases: missing"
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.path, copy.problem, copy.key, copy.line) == (
        Path("cases/bad.yaml"),
        "bad thing",
        "cases[3].accept",
        12,
    )


BASE_LINES = BASE.splitlines(keepends=True)


@st.composite
def mangled_suites(draw: st.DrawFn) -> str:
    """BASE with a few lines dropped, duplicated, re-indented or overwritten with junk."""
    lines = list(BASE_LINES)
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["drop", "dup", "indent", "dedent", "junk"]))
        if action == "drop":
            del lines[index]
        elif action == "dup":
            lines.insert(index, lines[index])
        elif action == "indent":
            lines[index] = "  " + lines[index]
        elif action == "dedent":
            lines[index] = lines[index].lstrip(" ")
        else:
            junk = draw(st.text(st.sampled_from("ab:-[]{}&*!|>'\"#@ 0.\t"), max_size=12))
            lines[index] = junk + "\n"
        if not lines:
            break
    return "".join(lines)


@settings(
    max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(text=mangled_suites())
def test_load_suite_raises_nothing_but_suite_error(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    path = write_suite(tmp_path_factory.mktemp("fuzz"), text)
    try:
        suite = load_suite(path)
    except SuiteError as error:
        assert error.path == path
        assert error.problem
    else:
        assert suite.cases


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        pytest.param("s.yaml", "cardprobe: 1\ncases: []\n", True, id="suite"),
        pytest.param("s.yml", "name: x\ncardprobe: 1\n", True, id="yml-key-not-first"),
        pytest.param("s.YAML", "cardprobe: 1\n", True, id="upper-suffix"),
        pytest.param("s.yaml", "{cardprobe: 1, cases: []}\n", True, id="flow-mapping"),
        # A flow-style suite with a syntax error is reported with its line, not skipped.
        pytest.param("s.yaml", "{cardprobe: 1, name: x, cases: [\n", True, id="flow-broken"),
        pytest.param("s.yaml", '{name: x,\n "cardprobe": 1, cases: ]', True, id="flow-later-key"),
        pytest.param("s.yaml", "{x: [1, 2}\n# cardprobe mentioned\n", False, id="flow-unmarked"),
        pytest.param("s.yaml", "cardprobe: 2\n", True, id="other-version-is-reported"),
        pytest.param("s.yaml", "cardprobe: 1\ncases: [\n", True, id="broken-but-marked"),
        pytest.param("s.yaml", '"cardprobe": 1\n  bad: [\n', True, id="broken-quoted-marker"),
        pytest.param("s.yaml", "cardprobe: 1\n---\nx: 1\n", True, id="two-documents"),
        pytest.param("s.yaml", "jobs:\n  test:\n    runs-on: x\n", False, id="ci-config"),
        pytest.param("s.yaml", "tool:\n  cardprobe: 1\n", False, id="nested-key-only"),
        # A suite inside a top-level list looks like one and must be reported (issue 14).
        pytest.param("s.yaml", "- cardprobe: 1\n", True, id="top-level-list"),
        pytest.param("s.yaml", "# cardprobe: 1\nx: 1\n", False, id="commented-out"),
        pytest.param("s.yaml", "x: [\n# mentions cardprobe\n", False, id="broken-unmarked"),
        pytest.param("s.yaml", "", False, id="empty"),
        pytest.param("s.txt", "cardprobe: 1\n", False, id="not-yaml-suffix"),
        pytest.param("s.json", '{"cardprobe": 1}', False, id="json"),
    ],
)
def test_is_suite_file(tmp_path: Path, name: str, text: str, expected: bool) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert is_suite_file(path) is expected


def test_is_suite_file_on_missing_path_and_shipped_files(tmp_path: Path) -> None:
    assert is_suite_file(tmp_path / "absent.yaml") is False
    assert is_suite_file(tmp_path) is False
    assert is_suite_file(SHIPPED) is True
