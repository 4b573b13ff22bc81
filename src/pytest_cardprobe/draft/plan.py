"""From recorded exchanges to drafted suites: one per tool set, one case per question.

* **Tool sets.** Exchanges are grouped by the tools they declare, the same set whatever the
  order of the tools or of the keys inside them (``tool_set_key``). A call suite sends one
  tool list with every request, so each set becomes a suite of its own; an exchange that
  declares no tools is left out (a call suite judges calls to declared tools).
* **System prompt.** When every exchange of a set starts with the same system message, it
  becomes the suite's prompt file; otherwise each case keeps its system messages in its
  ``conversation``.
* **Cases.** One per distinct question: the messages up to and including a request's last
  user message (call ids aside). The messages before that message are the case's
  ``conversation``; its content is the ``prompt``.
* **What the model did.** After the question, the longest continuation any exchange knows:
  a longer request repeats the model's turns and the tool results the application sent back
  (this is all a request-only source such as Ollama's logs has), and an exchange whose
  request ends at the question or inside that continuation adds its reply. From it the draft
  expectation: no call, the call (or calls) of the first turn with their arguments as
  literals, or — when the application fed tool results back — the ``sequence`` of calls with
  those results as the case's scripted ``results``. With no turn known, no expectation.
  Every drafted case is marked ``reviewed: false``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_cardprobe.draft.messages import Unusable, neutral_messages, without_ids
from pytest_cardprobe.draft.sources import Seen
from pytest_cardprobe.judge.routing import turn_of
from pytest_cardprobe.suite.argvalues import value_findings
from pytest_cardprobe.suite.calls import Matcher, admits, declared_names, parameters_of
from pytest_cardprobe.wire.capture.store import tool_set_key

#: OpenAI request keys and the suite ``options`` key each becomes (the OpenAI wire maps them
#: back: ``wire/openai.py``); ``format`` takes a ``response_format``'s schema.
OPENAI_OPTIONS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "seed": "seed",
    "stop": "stop",
    "max_tokens": "num_predict",
    "max_completion_tokens": "num_predict",
    "tool_choice": "tool_choice",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
}
#: Longest case id drafted from a question (it becomes part of test ids and file names).
ID_CHARS = 40


@dataclass
class Exchange:
    """A recorded exchange made usable: its tools, neutral messages and the question."""

    seen: Seen
    tools: list[dict[str, Any]]
    key: str
    messages: list[dict[str, Any]]
    question: int  # index of the last user message
    options: dict[str, Any]
    think: Any
    model: str | None


@dataclass
class DraftCase:
    id: str
    prompt: str
    conversation: list[dict[str, Any]]
    expect: dict[str, Any] | None
    results: list[dict[str, Any]] | None = None
    max_turns: int | None = None
    sources: list[str] = field(default_factory=list)
    did: str = ""  # what the model did, in words, for the case's comment


@dataclass
class DraftSuite:
    tools: list[dict[str, Any]]
    system: str | None
    cases: list[DraftCase]
    options: dict[str, Any]
    think: Any
    models: Counter[str]
    apis: Counter[str]
    streamed: int
    exchanges: int
    #: The servers the suite's exchanges went to, where their capture files say.
    upstreams: Counter[str] = field(default_factory=Counter)


@dataclass
class Plan:
    suites: list[DraftSuite] = field(default_factory=list)
    no_tools: list[str] = field(default_factory=list)
    unusable: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Tool lists as sent -> their set's key: traffic repeats one list thousands of times,
    # and the key (sorted, key order ignored) costs far more than the text.
    keys: dict[str, str] = field(default_factory=dict)


def _options(seen: Seen) -> tuple[dict[str, Any], Any]:
    body = seen.request
    if seen.api == "openai":
        options = {OPENAI_OPTIONS[k]: v for k, v in body.items() if k in OPENAI_OPTIONS}
        fmt = body.get("response_format")
        if isinstance(fmt, Mapping) and fmt.get("type") == "json_object":
            options["format"] = "json"
        elif isinstance(fmt, Mapping) and isinstance(fmt.get("json_schema"), Mapping):
            options["format"] = fmt["json_schema"].get("schema")
        return options, body.get("reasoning_effort")
    given = body.get("options")
    options = dict(given) if isinstance(given, Mapping) else {}
    if body.get("format") not in (None, ""):
        options["format"] = body["format"]
    return options, body.get("think")


def usable(seen: Seen, plan: Plan) -> Exchange | None:
    """``seen`` as an :class:`Exchange`, or None (and why, in ``plan``)."""
    tools = seen.request.get("tools")
    if not isinstance(tools, list) or not tools:
        plan.no_tools.append(seen.source)
        return None
    try:
        neutral = neutral_messages(seen.request.get("messages"))
    except Unusable as exc:
        plan.unusable.append(f"{seen.source}: {exc}")
        return None
    users = [i for i, m in enumerate(neutral.messages) if m["role"] == "user"]
    if not users or not neutral.messages[users[-1]]["content"].strip():
        plan.unusable.append(f"{seen.source}: no user message with a question in it")
        return None
    plan.notes.extend(f"{seen.source}: {note}" for note in neutral.notes)
    options, think = _options(seen)
    model = seen.request.get("model")
    raw = json.dumps(tools, ensure_ascii=False)  # as sent: the same text is the same set
    if raw not in plan.keys:
        plan.keys[raw] = tool_set_key(tools) or ""
    return Exchange(
        seen, tools, plan.keys[raw], neutral.messages, users[-1], options, think,
        model if isinstance(model, str) else None,
    )  # fmt: skip


Prefix = tuple[str, ...]
"""Messages up to and including a user message, each as canonical JSON without call ids."""


def _canonical(messages: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(m, sort_keys=True, ensure_ascii=False) for m in without_ids(messages)]


def prefixes(exchanges: Sequence[Exchange]) -> dict[Prefix, list[tuple[Exchange, int]]]:
    """Every question prefix any exchange holds (up to each of its user messages), with the
    exchanges that hold it and where it ends: one pass, so finding what followed a question
    costs a lookup, not a scan of all exchanges."""
    index: dict[Prefix, list[tuple[Exchange, int]]] = {}
    for exchange in exchanges:
        canon = _canonical(exchange.messages[: exchange.question + 1])
        for at, message in enumerate(exchange.messages[: exchange.question + 1]):
            if message["role"] == "user":
                index.setdefault(tuple(canon[: at + 1]), []).append((exchange, at + 1))
    return index


def _reply_turn(exchange: Exchange) -> dict[str, Any] | None:
    reply = exchange.seen.reply
    if reply is None:
        return None
    turn = turn_of(reply, declared_names(exchange.tools))
    said: dict[str, Any] = {"role": "assistant", "content": turn.content}
    if turn.calls:
        said["tool_calls"] = [
            {"name": c.name, "arguments": dict(c.arguments), **({"id": c.id} if c.id else {})}
            for c in turn.calls
        ]
    return said


def continuation(holders: Sequence[tuple[Exchange, int]]) -> list[dict[str, Any]]:
    """The longest known run of model turns and tool results after a question, up to the
    next user message, from the exchanges that hold the question (and where it ends)."""
    best: list[dict[str, Any]] = []
    for exchange, end in holders:
        rest = exchange.messages[end:]
        users = [i for i, m in enumerate(rest) if m["role"] == "user"]
        steps = rest[: users[0]] if users else list(rest)
        if not users and (not steps or steps[-1]["role"] == "tool"):
            turn = _reply_turn(exchange)
            if turn is not None:
                steps = [*steps, turn]
        if len(steps) > len(best):
            best = steps
    return best


class _Expecter:
    """Turns a continuation into an expectation the suite loader accepts for these tools."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.tools = tools
        self.names = declared_names(tools)

    def args(self, call: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
        parameters = parameters_of(self.tools, call["name"]) or {}
        kept: dict[str, Any] = {}
        for name, value in (call.get("arguments") or {}).items():
            if not admits(parameters, name):
                notes.append(f"argument {name!r} left out: {call['name']!r} does not declare it")
                continue
            # What the model sent, but the tool's schema refuses: expecting it could never
            # pass (the loader's own rule, suite/argvalues.py), so the draft leaves it out.
            refused = value_findings(call["name"], parameters, name, Matcher("equals", value))
            if refused.problems:
                notes.append(
                    f"argument {name!r} of {call['name']!r} left out: the recorded value "
                    f"{json.dumps(value, ensure_ascii=False)[:60]} is one its schema refuses"
                )
                continue
            # A mapping would read as a matcher; ``equals`` compares it as a literal.
            kept[name] = {"equals": value} if isinstance(value, Mapping) else value
        return kept

    def spec(self, call: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
        args = self.args(call, notes)
        return {"call": call["name"], **({"args": args} if args else {})}

    def draft(self, steps: list[dict[str, Any]], case: DraftCase, notes: list[str]) -> None:
        if not steps or steps[0]["role"] != "assistant":
            case.did = "no reply of the model was recorded"
            return
        first = steps[0].get("tool_calls") or []
        unknown = sorted(
            {c["name"] for s in steps for c in s.get("tool_calls", [])} - set(self.names)
        )
        if unknown:
            case.did = f"the model called {', '.join(unknown)}, which the tools do not declare"
            return
        if not first:
            case.expect, case.did = {"no_call": True}, "the model answered without a call"
            return
        if not any(s["role"] == "tool" for s in steps[1:]):
            specs = [self.spec(c, notes) for c in first]
            case.expect = specs[0] if len(specs) == 1 else {"calls": specs}
            case.did = f"the model called {', '.join(c['name'] for c in first)}"
            return
        self._sequence(steps, case, notes)

    def _sequence(self, steps: list[dict[str, Any]], case: DraftCase, notes: list[str]) -> None:
        calls: list[Mapping[str, Any]] = []
        results: list[dict[str, Any]] = []
        waiting: list[Mapping[str, Any]] = []
        for step in steps:
            if step["role"] == "assistant":
                if not step.get("tool_calls"):
                    break  # the final answer
                calls.extend(step["tool_calls"])
                waiting = list(step["tool_calls"])
            elif step["role"] == "tool" and waiting:
                answered = next((c for c in waiting if c.get("id") == step.get("id")), waiting[0])
                waiting.remove(answered)
                args = self.args(answered, notes)
                results.append({"call": answered["name"], **({"args": args} if args else {}),
                                "returns": step["content"]})  # fmt: skip
        case.expect = {"sequence": [self.spec(c, notes) for c in calls]}
        case.results = results or None
        case.max_turns = len(calls) + 1
        case.did = "the model called " + " > ".join(c["name"] for c in calls) + " in a tool loop"


class CaseIds:
    """Readable, unique case ids from the questions' first words
    (``what_is_the_weather_in_paris``, then ``..._2``)."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self.next: dict[str, int] = {}  # per base: the next number to try (linear, not n²)

    def __call__(self, question: str) -> str:
        base = ""
        for word in re.findall(r"[a-z0-9]+", question.lower()):
            if len(base) + len(word) + 1 > ID_CHARS:
                break
            base = f"{base}_{word}" if base else word
        base = base or "case"
        ident = base
        while ident in self.taken:
            n = self.next.get(base, 2)
            self.next[base] = n + 1
            ident = f"{base}_{n}"
        self.taken.add(ident)
        return ident


def _common(values: list[dict[str, Any]]) -> dict[str, Any]:
    first = values[0]
    return {k: v for k, v in first.items() if all(k in o and o[k] == v for o in values[1:])}


def _suite(exchanges: list[Exchange], plan: Plan) -> DraftSuite:
    firsts = {
        e.messages[0]["content"] if e.messages[0]["role"] == "system" else None for e in exchanges
    }
    system = firsts.pop() if len(firsts) == 1 else None
    if system is not None and not system.strip():
        system = None
    if system is not None:
        for e in exchanges:
            e.messages, e.question = e.messages[1:], e.question - 1
    expecter = _Expecter(exchanges[0].tools)
    index = prefixes(exchanges)
    cases: dict[Prefix, DraftCase] = {}
    case_id = CaseIds()
    for e in exchanges:
        prefix = e.messages[: e.question + 1]
        key = tuple(_canonical(prefix))
        if key in cases:
            cases[key].sources.append(e.seen.source)
            continue
        prompt = prefix[-1]["content"]
        case = DraftCase(case_id(prompt), prompt, prefix[:-1], None, sources=[e.seen.source])
        notes: list[str] = []
        expecter.draft(continuation(index[key]), case, notes)
        plan.notes.extend(f"case {case.id!r}: {n}" for n in dict.fromkeys(notes))
        cases[key] = case
    thinks = {json.dumps(e.think) for e in exchanges}
    return DraftSuite(
        tools=exchanges[0].tools,
        system=system,
        cases=list(cases.values()),
        options=_common([e.options for e in exchanges]),
        think=exchanges[0].think if len(thinks) == 1 else None,
        models=Counter(e.model or "?" for e in exchanges),
        apis=Counter(e.seen.api for e in exchanges),
        streamed=sum(e.seen.streamed for e in exchanges),
        upstreams=Counter(e.seen.upstream for e in exchanges if e.seen.upstream),
        exchanges=len(exchanges),
    )


def plan_suites(seen: Sequence[Seen]) -> Plan:
    """The suites drafted from ``seen``, the biggest tool set first."""
    plan = Plan()
    groups: dict[str, list[Exchange]] = {}
    for item in seen:
        exchange = usable(item, plan)
        if exchange is not None:
            groups.setdefault(exchange.key, []).append(exchange)
    ordered = sorted(groups.values(), key=len, reverse=True)  # stable: first seen first on ties
    plan.suites = [_suite(group, plan) for group in ordered]
    return plan
