"""Pinned wording of the suite loader's usage errors for typical mistakes.

Each row is one mistake a suite author makes often, and the whole message the loader gives
for it: file, line, key path and wording. When the loader's implementation changes (for
example when structure checks move to the JSON Schema), these rows show that the messages
still name the same place and read as clearly; a change of wording is a change of this file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cardprobe.suite.loader import SuiteError, load_suite

CARD = """\
cardprobe: 1
name: mini
channels: [prose, tool]
conditions: [cold, history]
samples: 2
prompts:
  prose: prose.md
  tool: tool.md
tool:
  type: function
  function:
    name: render_adaptive_card
    description: Show a card.
    parameters:
      type: object
      properties:
        body: {type: array, items: {type: object}}
history:
  - role: user
    content: Hi there.
  - role: assistant
    content: Hello.
cases:
  - id: date
    prompt: Pick a day.
    accept: [Input.Date]
  - id: control
    prompt: Capital of France?
    accept: []
"""

CALL = """\
cardprobe: 1
judge: call
conditions: [cold]
tools: tools.json
max_turns: 4
cases:
  - id: read
    prompt: Show me the README.
    expect:
      call: read_file
      args: {path: {regex: "(?i)readme.*"}}
  - id: loop
    prompt: Read setup.cfg then run the tests.
    expect:
      sequence: [read_file, run_tests]
      final: {contains: passed}
    results:
      read_file: "[tool:pytest]"
"""

TOOLS = """\
[{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
  "parameters": {"type": "object", "properties": {"path": {"type": "string",
  "description": "Path."}}, "required": ["path"]}}},
 {"type": "function", "function": {"name": "run_tests", "description": "Run tests.",
  "parameters": {"type": "object", "properties": {"target": {"type": "string",
  "description": "Target."}}}}}]
"""

ALL_TOP_KEYS = (
    "cardprobe, name, judge, channels, conditions, samples, at_least, prompts, tool, history, "
    "vocabulary, allow_unknown_types, seed_turn, options, think, cases, tools, max_turns"
)

# (id, base suite, text replaced, replacement, the whole message after "<file>")
MESSAGES: list[tuple[str, str, str, str, str]] = [
    ("misspelt-top-key", CARD, "samples: 2", "sample: 2",
     f":5: sample: unknown key; did you mean 'samples'? allowed: {ALL_TOP_KEYS}"),
    ("samples-not-a-number", CARD, "samples: 2", "samples: two",
     ":5: samples: expected an integer >= 1, got 'two'"),
    ("samples-a-float", CARD, "samples: 2", "samples: 2.0",
     ":5: samples: expected an integer >= 1, got 2.0"),
    ("samples-a-boolean", CARD, "samples: 2", "samples: true",
     ":5: samples: expected an integer >= 1, got true"),
    ("suite-at-least-a-float", CARD, "samples: 2", "samples: 2\nat_least: 1.0",
     ":6: at_least: expected an integer >= 1, got 1.0"),
    ("case-at-least-a-float", CARD, "    accept: []\n", "    accept: []\n    at_least: 2.0\n",
     ":30: cases[1].at_least: expected an integer >= 1, got 2.0"),
    ("max-turns-a-float", CALL, "max_turns: 4", "max_turns: 4.0",
     ":5: max_turns: expected an integer >= 1, got 4.0"),
    ("length-a-float", CALL, '{regex: "(?i)readme.*"}', "{length: [1, 2.0]}",
     ":11: cases[0].expect.args.path.length[1]: case 'read': expected a whole number >= 0, "
     "got 2.0"),
    ("channels-not-a-list", CARD, "channels: [prose, tool]", "channels: tool",
     ":3: channels: expected a non-empty list of channels, got 'tool'"),
    ("unknown-channel", CARD, "channels: [prose, tool]", "channels: [prose, voice]",
     ":3: channels[1]: unknown channel 'voice'; use prose, tool, retry"),
    ("missing-accept", CARD, "    accept: [Input.Date]\n", "",
     ":24: cases[0].accept: missing required key"),
    ("unknown-case-key", CARD, "    accept: []\n", "    accept: []\n    expected: []\n",
     ":30: cases[1].expected: unknown key; allowed: id, prompt, accept, requires_input, "
     "at_least"),
    ("accept-not-a-list", CARD, "accept: [Input.Date]", "accept: Input.Date",
     ":26: cases[0].accept: expected a list of element type names ([] for a prose control), "
     "got 'Input.Date'"),
    ("accept-typo", CARD, "accept: [Input.Date]", "accept: [Input.Dat]",
     ":26: cases[0].accept[0]: 'Input.Dat' is not in the suite's element vocabulary; "
     "did you mean 'Input.Date'?"),
    ("id-with-space", CARD, "id: date", "id: my date",
     ":24: cases[0].id: expected an id of letters, digits, '_', '.' or '-' (it becomes part "
     "of the pytest test id), got 'my date'"),
    ("empty-prompt", CARD, "prompt: Pick a day.", "prompt: ''",
     ":25: cases[0].prompt: expected a non-empty question, got ''"),
    ("history-role", CARD, "  - role: assistant", "  - role: system",
     ":21: history[1].role: unknown role 'system'; use user, assistant"),
    ("format-version", CARD, "cardprobe: 1", "cardprobe: 2",
     ":1: cardprobe: unsupported suite format version 2; this pytest-cardprobe reads "
     "`cardprobe: 1`"),
    ("think-level", CARD, "samples: 2", "samples: 2\nthink: maybe",
     ":6: think: expected one of off, on, low, medium, high, got 'maybe'"),
    ("missing-tool-prompt", CARD, "  tool: tool.md\n", "",
     ":6: prompts.tool: missing required key"),
    ("tool-without-body", CARD, "body: {type: array", "cards: {type: array",
     ":16: tool.function.parameters.properties.body: the parameters schema must declare a "
     "`body` property of `type: array`"),
    ("requires-input-not-bool", CARD, "    accept: []\n",
     "    accept: []\n    requires_input: yes please\n",
     ":30: cases[1].requires_input: expected true or false, got 'yes please'"),
    ("matcher-typo", CALL, "{regex:", "{regexp:",
     ":11: cases[0].expect.args.path.regexp: case 'read': unknown matcher 'regexp'; did you "
     "mean 'regex'? allowed: equals, one_of, regex, contains, type, range, any, absent, "
     "optional, each, length, ignore_case; to match an object literally use equals:"),
    ("undeclared-tool", CALL, "call: read_file", "call: open_file",
     ":10: cases[0].expect.call: case 'read': 'open_file' is not a declared tool; did you "
     "mean 'read_file'? (tools: read_file, run_tests)"),
    ("two-expectations", CALL, "      call: read_file\n", "      call: read_file\n"
     "      no_call: true\n",
     ":11: cases[0].expect.no_call: case 'read': two expectations (call and no_call); give "
     "exactly one of call, calls, no_call, sequence"),
    ("final-typo", CALL, "{contains: passed}", "{startswith: passed}",
     ":16: cases[1].expect.final.startswith: case 'loop': unknown matcher 'startswith'; "
     "allowed: contains, regex, not_contains, ignore_case"),
    ("results-key-typo", CALL, '      read_file: "[tool:pytest]"',
     "      - {call: read_file, return: x}",
     ":18: cases[1].results[0].return: case 'loop': unknown key; did you mean 'returns'? "
     "allowed: call, args, returns"),
    ("card-key-in-call-suite", CALL, "max_turns: 4", "max_turns: 4\nvocabulary: [TextBlock]",
     ":6: vocabulary: `vocabulary` belongs to card suites; a call suite declares `tools:`"),
    ("unknown-canary", CALL, "    prompt: Show me the README.\n",
     "    prompt: Show me the README.\n    canary: maybe\n",
     ":9: cases[0].canary: case 'read': unknown canary 'maybe'; use needs_tool, no_tool"),
    ("call-suite-condition", CALL, "conditions: [cold]", "conditions: [cold, seeded]",
     ":3: conditions[1]: unknown condition 'seeded'; use cold, history, required"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("base", "old", "new", "message"),
    [pytest.param(b, o, n, m, id=name) for name, b, o, n, m in MESSAGES],
)
def test_a_typical_mistake_reads_as_pinned(
    tmp_path: Path, base: str, old: str, new: str, message: str
) -> None:
    (tmp_path / "prose.md").write_text("Reply with card JSON.\n", encoding="utf-8")
    (tmp_path / "tool.md").write_text("Call the tool.\n", encoding="utf-8")
    (tmp_path / "tools.json").write_text(TOOLS, encoding="utf-8")
    assert old in base
    path = tmp_path / "suite.yaml"
    path.write_text(base.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert str(info.value) == f"{path}{message}"


@pytest.mark.parametrize("base", [CARD, CALL], ids=["card", "call"])
def test_the_unmodified_suites_load(tmp_path: Path, base: str) -> None:
    (tmp_path / "prose.md").write_text("Reply with card JSON.\n", encoding="utf-8")
    (tmp_path / "tool.md").write_text("Call the tool.\n", encoding="utf-8")
    (tmp_path / "tools.json").write_text(TOOLS, encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(base, encoding="utf-8")
    assert load_suite(path).cases


WRAP = (
    "; a tool declaration is {type: function, function: {name, description, parameters}}: "
    "wrap each bare function that way"
)
BARE_TOOLS = """\
[{"name": "read_file", "description": "Read a file.",
  "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]
"""


def test_a_tools_file_of_bare_functions_is_told_to_wrap_them(tmp_path: Path) -> None:
    # Without x-wrap the message ended at "allowed: type, function", with no way forward.
    (tmp_path / "tools.json").write_text(BARE_TOOLS, encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(CALL, encoding="utf-8")
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert str(info.value) == (
        f"{tmp_path / 'tools.json'}:1: $[0].name: unknown key; allowed: type, function{WRAP}"
    )


def test_a_card_suites_bare_tool_is_told_to_wrap_it_and_an_other_key_is_not(
    tmp_path: Path,
) -> None:
    (tmp_path / "prose.md").write_text("Reply with card JSON.\n", encoding="utf-8")
    (tmp_path / "tool.md").write_text("Call the tool.\n", encoding="utf-8")
    path = tmp_path / "suite.yaml"
    wrapped = CARD[CARD.index("tool:\n") : CARD.index("history:")]
    bare = CARD.replace(
        wrapped,
        "tool:\n  name: render_adaptive_card\n  description: Show a card.\n  parameters:\n"
        "    type: object\n    properties:\n      body: {type: array, items: {type: object}}\n",
    )
    path.write_text(bare, encoding="utf-8")
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert str(info.value) == f"{path}:10: tool.name: unknown key; allowed: type, function{WRAP}"
    path.write_text(CARD.replace("  type: function\n", "  type: function\n  kind: x\n"))
    with pytest.raises(SuiteError) as other:
        load_suite(path)
    assert str(other.value).endswith("tool.kind: unknown key; allowed: type, function")
