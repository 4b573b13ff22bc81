"""Suite stage: the vocabulary of a suite (channels, conditions, element types) and the
frozen records a loaded suite is made of."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cardprobe.suite.calls import (
    DEFAULT_MAX_TURNS,
    Expectation,
    ScriptedResult,
    declared_names,
)
from pytest_cardprobe.suite.errors import KeyPath, SuiteWarning
from pytest_cardprobe.suite.sources import ToolSource

CHANNELS: tuple[str, ...] = ("prose", "tool", "retry")
CONDITIONS: tuple[str, ...] = ("cold", "history", "seeded", "schema")
#: What a card suite runs when it names no channels or conditions; the others are opt-in.
DEFAULT_CHANNELS: tuple[str, ...] = ("prose", "tool")
DEFAULT_CONDITIONS: tuple[str, ...] = ("cold", "history")
#: Model calls per test when neither the suite nor --samples says.
DEFAULT_SAMPLES = 2
#: Channels whose first question is asked in prose (the retry channel asks in prose first).
PROSE_FIRST: tuple[str, ...] = ("prose", "retry")
#: Channels that declare the tool (the retry channel declares it on its second request).
TOOL_USING: tuple[str, ...] = ("tool", "retry")
#: The system prompts a card suite may name: one per way of asking.
PROMPT_KINDS: tuple[str, ...] = ("prose", "tool")
#: A call suite (``judge: call``) has one channel: the suite's own tools, all declared at once.
CALL_JUDGE = "call"
CALL_CHANNEL = "call"
#: The forced condition of a call suite (opt-in): the question asked cold, and every turn that
#: must call forced to call, the way an application forces one (``tool_choice: "required"``
#: on OpenAI-compatible servers, a ``format`` JSON Schema of the calls on Ollama's own API).
REQUIRED = "required"
#: A call suite's conditions: the seeded and schema conditions shape card replies only.
CALL_CONDITIONS: tuple[str, ...] = ("cold", "history", REQUIRED)
#: Every channel a probe may have (``--channel`` accepts these).
ALL_CHANNELS: tuple[str, ...] = (*CHANNELS, CALL_CHANNEL)
#: Every condition a probe may have (``--condition`` accepts these).
ALL_CONDITIONS: tuple[str, ...] = (*CONDITIONS, REQUIRED)
#: Reasoning levels: ``off``/``on`` for Ollama's boolean ``think``, the rest an effort level.
THINK_LEVELS: tuple[str, ...] = ("off", "on", "low", "medium", "high")
SUITE_VERSION = 1

# The reference vocabulary (docs/design.md §5). It lives in the suite stage because the suite
# comes first: the judge imports it from here (stages import only earlier stages).
REFERENCE_VOCABULARY: tuple[str, ...] = (
    "TextBlock", "RichTextBlock", "FactSet", "Badge", "Carousel", "Table", "Container",
    "ColumnSet", "ActionSet", "ImageSet", "Image", "Media", "Accordion", "TabSet",
    "CompoundButton", "Input.Date", "Input.ChoiceSet", "Input.Text", "Input.Number",
    "Input.Time", "Input.Toggle", "Input.Rating", "Rating", "Icon", "ProgressBar",
    "ProgressRing", "CodeBlock", "Chart.Pie", "Chart.Donut", "Chart.VerticalBar",
    "Chart.HorizontalBar", "Chart.Line", "Chart.Gauge",
)  # fmt: skip
#: Types that only appear inside a parent; always known, whatever vocabulary a suite uses.
NESTING_TYPES: tuple[str, ...] = ("CarouselPage", "TableRow", "TableCell", "Column", "TabPage")
#: A suite's vocabulary when it names none: the 33 top-level types, then the nesting-only ones.
DEFAULT_VOCABULARY: tuple[str, ...] = REFERENCE_VOCABULARY + NESTING_TYPES


@dataclass(frozen=True)
class PriorCall:
    """A call an assistant message of a case's ``conversation`` made (arguments as literals)."""

    name: str
    arguments: Mapping[str, Any] = field(hash=False, default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class PriorMessage:
    """One message of a case's ``conversation``, the turns that come before its question.

    ``role`` is ``system``, ``user``, ``assistant`` or ``tool``. An assistant message may
    carry ``calls``; a tool message answers one of them: ``name`` is the tool, ``id`` the
    call's id when it had one (else it answers the calls of the assistant message before it
    in order). The request writes each in its API's shape (``suite/request.py``).
    """

    role: str
    content: str = ""
    calls: tuple[PriorCall, ...] = ()
    name: str | None = None
    id: str | None = None


@dataclass(frozen=True)
class Case:
    """One question and the element types that would answer it."""

    id: str
    prompt: str
    accept: tuple[str, ...]
    requires_input: bool
    line: int | None = None
    # Call suites only: what a good answer does, the scripted tool results of a loop, the
    # loop's turn limit and the canary role of the case.
    expect: Expectation | None = None
    results: tuple[ScriptedResult, ...] = ()
    max_turns: int = DEFAULT_MAX_TURNS
    canary: str | None = None
    # The case's own k-of-n rule (key ``at_least``); None: the suite's rule.
    at_least: int | None = None
    # Call suites only: the messages before the question, as the application sent them
    # (key ``conversation``), and whether a person has reviewed the expectation (key
    # ``reviewed``; ``draft`` writes ``reviewed: false``). An unreviewed case is scored apart:
    # kept out of the gate and the baseline; it may have no ``expect`` (then ``expect`` is
    # None and its samples only say what the model did).
    conversation: tuple[PriorMessage, ...] = ()
    reviewed: bool = True

    @property
    def is_control(self) -> bool:
        """A negative control (``accept: []``): plain prose is the right answer."""
        return not self.accept


@dataclass(frozen=True)
class Turn:
    """One message of the ``history`` condition's preamble."""

    role: str
    content: str


@dataclass(frozen=True)
class SeedTurn:
    """The synthetic exchange of the ``seeded`` condition: a question and a card answering it."""

    user: str
    card: Any = field(hash=False)  # a JSON object or array, sent as the assistant's raw JSON


@dataclass(frozen=True)
class Suite:
    """A loaded, validated suite file.

    Mapping fields hold plain dicts so they can go straight into a JSON request body; treat
    them as read-only. They are left out of ``hash()`` so a suite stays hashable.
    """

    path: Path
    name: str
    judge: str
    channels: tuple[str, ...]
    conditions: tuple[str, ...]
    samples: int
    prompts: Mapping[str, str] = field(hash=False)
    prompt_files: Mapping[str, Path] = field(hash=False)
    tool: Mapping[str, Any] = field(hash=False)
    history: tuple[Turn, ...]
    vocabulary: tuple[str, ...]
    options: Mapping[str, Any] = field(hash=False)
    cases: tuple[Case, ...]
    # None when the suite does not say: --think or the ini key cardprobe_think decides.
    think: str | None = None
    # The k-of-n rule (key ``at_least``): a test passes when at least k samples pass;
    # None: every sample must pass. A case's own ``at_least`` wins over this.
    at_least: int | None = None
    allow_unknown_types: bool = False
    seed_turn: SeedTurn | None = None
    # Call suites only: every declared tool (sent with every request) and the file they
    # came from when ``tools:`` named one; ``tool_lines`` maps a path inside the tool list,
    # ``(2, "function", "name")``, to its line in that file (or in the suite, inline).
    tools: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)
    tools_file: Path | None = None
    tool_lines: Mapping[KeyPath, int] = field(default_factory=dict, hash=False, compare=False)
    # Doubts found at load that do not stop the run (an expected argument only some of whose
    # alternatives a tool's schema allows, say): shown as warnings at their line.
    warnings: tuple[SuiteWarning, ...] = field(default=(), hash=False, compare=False)
    # Call suites whose ``tools:`` names a source (python:, mcp:): that source.
    tools_source: ToolSource | None = field(default=None, hash=False, compare=False)

    @property
    def is_call_suite(self) -> bool:
        """A suite judged by the call judge (``judge: call``)."""
        return self.judge == CALL_JUDGE

    @property
    def tool_names(self) -> list[str]:
        """Names of a call suite's declared tools, in order."""
        return declared_names(self.tools)

    @property
    def tool_name(self) -> str:
        """Name of the declared function, or ``""`` when the suite declares no tool."""
        if not self.tool:
            return ""
        return str(self.tool["function"]["name"])

    def case(self, id: str) -> Case:
        """Return the case with this id; ``KeyError`` if there is none."""
        for case in self.cases:
            if case.id == id:
                return case
        raise KeyError(id)
