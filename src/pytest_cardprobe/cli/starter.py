"""The starter suites ``init`` writes: a card suite and a call suite with their prompt files.

The tool declaration, history turns and options come from the built-in ``cards`` suite, so a
new project starts out asking the way the shipped suite does; only the questions are new.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from pytest_cardprobe.suite.builtin import builtin_suite_path

#: The folder the starter goes into (``pytest cardprobe`` runs it).
STARTER_DIR = "cardprobe"
STARTER_SUITE = "my-cards"
STARTER_TOOLS_SUITE = "my-tools"
#: The model written to ``cardprobe_models`` when ``--model`` is not given: the tiny model
#: this project's own tests use (``ollama pull smollm2:135m``); change it to yours.
DEFAULT_MODEL = "smollm2:135m"

_HEADER = """\
# A starter cardprobe suite, written by `python -m pytest_cardprobe init`. It is yours now:
# edit the cases, add your own, rename it. Every case becomes one pytest test per model,
# channel and condition; `pytest cardprobe --live` records the model's replies under
# cassettes/, `pytest cardprobe` replays them offline. Reference: the built-in suite
# (`pytest --cardprobe-suite cards`) and the guide of pytest-cardprobe (its docs/ folder).
cardprobe: 1
name: {name}
judge: card
# prose: the card comes back as JSON text; tool: as the `body` argument of the tool below.
channels: [prose, tool]
# cold: the question comes first; history: after the two prose turns under `history`.
conditions: [cold, history]
# Each test asks this many times and passes only if every answer passes.
samples: 2

# System prompts, relative to this file (copied from the built-in cards suite).
prompts:
  prose: prompts/prose.md
  tool: prompts/tool.md

"""

_CASES = """
cases:
  # `accept`: the Adaptive Card element types that would answer the question.
  - id: meeting_day
    prompt: Let me choose the day for our next team meeting.
    accept: [Input.Date]
  - id: parcel_alerts
    prompt: Should I get a text when my parcel arrives? Let me switch that on or off.
    accept: [Input.Toggle]
  - id: weekly_steps
    prompt: Show how many steps I walked on each day of this week.
    accept: [Chart.VerticalBar, Chart.HorizontalBar, Chart.Line]
  - id: open_orders
    prompt: List my three open orders with their number, total and delivery status.
    accept: [Table, FactSet]
  # A negative control: a plain question whose right answer is prose, not a card.
  - id: plain_question
    prompt: How many minutes are there in a day?
    accept: []
"""


# A call suite: does the model call the tools your application declares, with the right
# arguments, and leave them alone when no tool fits? Its tools are read from the tools.json
# init writes next to it, the way a suite reads the very file an application sends, and its
# system prompt is written for those tools (a weather and reminders assistant).
_TOOLS_SUITE = """\
# A starter call suite, written by `python -m pytest_cardprobe init`. Its tools come from
# tools.json next to this file: point `tools:` at the tools file your application sends
# (JSON or YAML, relative to this file), so the suite probes what you really ship. Each case
# says which call a good answer makes, or that no tool fits.
cardprobe: 1
name: {name}
judge: call
conditions: [cold]
samples: 2
prompts:
  call: prompts/call.md
options:
  num_predict: 160
tools: {tools}
cases:
  - id: weather_lisbon
    prompt: Is it raining in Lisbon right now?
    expect:
      call: get_weather
      args: {{city: {{regex: "(?i)lisbon"}}}}
  - id: remind_call
    prompt: Remind me to call the dentist at 15:30.
    expect:
      call: set_reminder
      args: {{time: "15:30", text: {{contains: dentist, ignore_case: true}}}}
  # Irrelevance: no tool fits, so any call is an over-call.
  - id: capital_question
    prompt: What is the capital of Norway?
    expect:
      no_call: true
"""

#: The starter call suite's system prompt: the assistant its two tools belong to.
CALL_PROMPT = """\
You are the assistant of a small personal organiser app. You can look up the current
weather in a city (get_weather) and set a reminder for later today (set_reminder).

When the user asks about the weather or wants to be reminded of something, call the tool
that does it, with the arguments the user gave. Answer every other question yourself, in
one or two plain sentences, without calling a tool. Never invent a tool or an argument.
"""

#: The starter's tools file, in the OpenAI/Ollama ``tools`` shape an application sends.
STARTER_TOOLS_FILE = "tools.json"
_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for one city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city name, e.g. Lisbon."},
                    "unit": {
                        "type": "string",
                        "enum": ["celsius", "fahrenheit"],
                        "description": "Temperature unit.",
                    },
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "set_reminder",
            "description": "Remind the user of something at a given time today.",
            "parameters": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "What to remind the user of."},
                    "time": {
                        "type": "string",
                        "description": "Time of day as HH:MM, 24-hour clock.",
                    },
                },
                "required": ["text", "time"],
            },
        },
    },
]

# Blocks taken from the built-in cards suite, with what each is for.
_SHARED = (
    ("options", "Extra request options; num_predict caps a rambling reply."),
    ("tool", "The function the tool channel declares; nothing ever runs it."),
    ("history", "The two prose turns the history condition puts before each question."),
)


def starter_files(root: Path) -> dict[Path, str]:
    """The starter card and call suites and their prompt files, built from the built-in ones."""
    cards = builtin_suite_path("cards")
    data = yaml.safe_load(cards.read_text(encoding="utf-8"))
    # The tool declaration, history and options come from the built-in suite so the two
    # start out asking the same way; only the questions are the starter's own.
    body = "".join(
        f"# {comment}\n"
        + yaml.safe_dump({key: data[key]}, sort_keys=False, width=92, allow_unicode=True)
        + "\n"
        for key, comment in _SHARED
        if key in data
    )
    suite = _HEADER.format(name=STARTER_SUITE) + body + _CASES
    folder = root / STARTER_DIR
    files = {folder / f"{STARTER_SUITE}.yaml": suite}
    for channel, relative in data["prompts"].items():
        source = cards.parent / relative
        files[folder / "prompts" / f"{channel}.md"] = source.read_text(encoding="utf-8")
    files[folder / f"{STARTER_TOOLS_SUITE}.yaml"] = _TOOLS_SUITE.format(
        name=STARTER_TOOLS_SUITE, tools=STARTER_TOOLS_FILE
    )
    files[folder / STARTER_TOOLS_FILE] = json.dumps(_TOOLS, indent=2) + "\n"
    files[folder / "prompts" / "call.md"] = CALL_PROMPT
    return files
