"""Suite stage: what changed between two tool declarations, or two prompts, in words.

A stale cassette, or a suite whose tools drifted from the application's, is acted on by a
person reading a review: "tools changed" sends them diffing JSON by hand. These pure
functions say it the way a reviewer would, one line per change:

* :func:`tool_changes` compares two OpenAI/Ollama ``tools`` lists, tool by tool (matched by
  name) and parameter by parameter: ``read_file: description changed``, ``search_code:
  parameter query added``, ``run_tests.target: enum gained "e2e"``, ``read_file.start_line:
  minimum changed from 1 to 0``;
* :func:`text_change` names the first line where two texts (a system prompt, a question)
  differ, with the changed part of that line on both sides;
* :func:`request_changes` puts both to work on two request bodies (a recording's and the one
  asked now): the tools, the system prompt, the question, the history, the options.

Both take anything JSON can hold (a recording is untrusted: a list of numbers, a schema that is
a string) and never raise; values are shown as one-line JSON cut short, so control
characters arrive escaped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_cardprobe.text import escape_control

__all__ = ["request_changes", "text_change", "tool_changes"]

#: Characters of a value or of a changed line shown in a change.
SHOWN = 40
#: Schemas nested deeper than this are compared whole (a cassette may nest up to 64 levels).
MAX_DEPTH = 16
#: Keywords whose value is a number or a short literal: shown ``from X to Y``.
_VALUED = (
    "default",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "pattern",
    "format",
    "uniqueItems",
)


def show(value: Any, limit: int = SHOWN) -> str:
    """``value`` as one line of JSON (strings quoted, control characters escaped), cut at
    ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _function(tool: Any) -> Mapping[str, Any] | None:
    """The function object of a ``tools`` entry (``{"type": "function", "function": {...}}``
    or the bare function), or None when the entry is no mapping."""
    if not isinstance(tool, Mapping):
        return None
    inner = tool.get("function")
    return inner if isinstance(inner, Mapping) else tool


def _keyed(tools: Sequence[Any]) -> dict[str, Any]:
    """Each entry under its function's name; an entry without one as ``tools[i]``."""
    out: dict[str, Any] = {}
    for index, tool in enumerate(tools):
        fn = _function(tool)
        name = fn.get("name") if fn is not None else None
        out[name if isinstance(name, str) and name else f"tools[{index}]"] = tool
    return out


def tool_changes(before: Any, after: Any) -> list[str]:
    """What changed from the ``before`` tool declarations to ``after``, one line per change.

    Tools are matched by name: ``X: tool added`` / ``X: tool removed``; for a tool in both,
    its description, each parameter (added, removed, its type, enum values gained or lost,
    description, required-ness, bounds, default, ...) and any other key. Parameters of an
    object parameter are named with a dot (``run_tests.options.verbose``), the items of an
    array parameter with ``[]``. A change of order alone is ``tool order changed``. An empty
    list: the declarations are the same (or differ in no way a reviewer could act on, such
    as the order of keys).
    """
    if before == after:
        return []
    if before is None or after is None:
        return [f"tools {'added' if before is None else 'removed'}"]
    if not isinstance(before, list) or not isinstance(after, list):
        return ["tools changed"]
    old, new = _keyed(before), _keyed(after)
    out = [f"{name}: tool removed" for name in old if name not in new]
    out += [f"{name}: tool added" for name in new if name not in old]
    for name in new:
        if name in old:
            out += _one_tool(name, old[name], new[name])
    common_old = [n for n in old if n in new]
    common_new = [n for n in new if n in old]
    if not out and common_old != common_new:
        out.append(f"tool order changed: {', '.join(common_old)} -> {', '.join(common_new)}")
    # Names and keys come from the files as written: a control character in one is shown.
    return [escape_control(line) for line in out]


def _one_tool(name: str, before: Any, after: Any) -> list[str]:
    if before == after:
        return []
    old, new = _function(before), _function(after)
    if old is None or new is None:
        return [f"{name}: declaration changed"]
    out: list[str] = []
    # Keys of the envelope beside "function" ("type": "function", say).
    if old is not before or new is not after:
        outer_old = before if old is not before else {}
        outer_new = after if new is not after else {}
        for key in _keys(outer_old, outer_new):
            change = _keyword(key, outer_old, outer_new) if key != "function" else None
            out += [f"{name}: {change}"] if change else []
    for key in _keys(old, new):
        if key == "parameters":
            out += _schema(name, old.get(key), new.get(key), 0, top=True)
        elif key != "name":
            change = _keyword(key, old, new)
            out += [f"{name}: {change}"] if change else []
    return out or [f"{name}: declaration changed"]


def _keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The keys of both, ``a``'s order first, each once."""
    return [*a, *(k for k in b if k not in a)]


def _keyword(key: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """One keyword compared: ``added``, ``removed``, ``changed from X to Y`` for a short
    literal, ``changed``; None when it is the same on both sides."""
    if key in a and key in b and a[key] == b[key]:
        return None
    if key not in a:
        return f"{key} added" + (f" ({show(b[key])})" if key in _VALUED else "")
    if key not in b:
        return f"{key} removed" + (f" (was {show(a[key])})" if key in _VALUED else "")
    if key in _VALUED:
        return f"{key} changed from {show(a[key])} to {show(b[key])}"
    return f"{key} changed"


def _types(value: Any) -> str:
    if isinstance(value, list):
        return " or ".join(str(v) for v in value) or "[]"
    return str(value) if isinstance(value, str) else show(value)


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    found = schema.get("properties")
    return found if isinstance(found, Mapping) else {}


def _required(schema: Mapping[str, Any]) -> list[str]:
    found = schema.get("required")
    return [r for r in found if isinstance(r, str)] if isinstance(found, list) else []


def _schema(path: str, a: Any, b: Any, depth: int, top: bool = False) -> list[str]:
    """A parameters schema (``top``) or one parameter's schema, compared keyword by keyword."""
    if a == b:
        return []
    what = "parameters" if top else "schema"
    if a is None or b is None:
        return [f"{path}: {what} {'added' if a is None else 'removed'}"]
    if not isinstance(a, Mapping) or not isinstance(b, Mapping) or depth >= MAX_DEPTH:
        return [f"{path}: {what} changed"]
    # Keywords of the parameters object itself read "parameters <keyword>": the tool's own
    # description is "read_file: description changed".
    prefix = "parameters " if top else ""
    out: list[str] = []
    for key in _keys(a, b):
        if key in ("properties", "required"):
            continue
        if key in a and key in b and a[key] == b[key]:
            continue
        if key == "type" and key in a and key in b:
            out.append(f"{path}: {prefix}type changed from {_types(a[key])} to {_types(b[key])}")
        elif key == "enum" and isinstance(a.get(key), list) and isinstance(b.get(key), list):
            out += _enum(path, prefix, a[key], b[key])
        elif key == "items" and key in a and key in b:
            out += _schema(f"{path}[]", a[key], b[key], depth + 1)
        else:
            change = _keyword(key, a, b)
            out += [f"{path}: {prefix}{change}"] if change else []
    out += _parameters(path, a, b, depth)
    return out


def _enum(path: str, prefix: str, a: list[Any], b: list[Any]) -> list[str]:
    gained = [v for v in b if v not in a]
    lost = [v for v in a if v not in b]
    out = []
    if gained:
        out.append(f"{path}: {prefix}enum gained {', '.join(show(v) for v in gained)}")
    if lost:
        out.append(f"{path}: {prefix}enum lost {', '.join(show(v) for v in lost)}")
    return out or [f"{path}: {prefix}enum reordered"]


def _parameters(path: str, a: Mapping[str, Any], b: Mapping[str, Any], depth: int) -> list[str]:
    """Properties added, removed and changed, and which became (or stopped being) required."""
    old, new = _properties(a), _properties(b)
    was, now = _required(a), _required(b)
    out = [f"{path}: parameter {p} removed" for p in old if p not in new]
    out += [
        f"{path}: parameter {p} added" + (" (required)" if p in now else "")
        for p in new
        if p not in old
    ]
    for name in new:
        if name not in old:
            continue
        if name in now and name not in was:
            out.append(f"{path}.{name}: now required")
        elif name in was and name not in now:
            out.append(f"{path}.{name}: no longer required")
        out += _schema(f"{path}.{name}", old[name], new[name], depth + 1)
    others = [r for r in (set(was) ^ set(now)) if r not in old and r not in new]
    if others:
        out.append(f"{path}: required changed ({', '.join(sorted(others))})")
    return out


def _excerpt(line: str, start: int) -> str:
    """``line`` from ``start`` on, quoted, with ``…`` where it was cut."""
    piece = line[start : start + SHOWN]
    text = json.dumps(piece, ensure_ascii=False)[1:-1]
    head = "…" if start else ""
    tail = "…" if start + SHOWN < len(line) else ""
    return f'"{head}{text}{tail}"'


def text_change(before: str, after: str) -> str | None:
    """The first line where ``after`` differs from ``before``, or None when they are the same.

    ``line 3: "…a careful assistant." -> "…a terse assistant."``: each side shows the line
    from shortly before the first character that differs, so a long line's change is seen;
    ``line 7 added: "…"`` / ``line 7 removed: "…"`` when one text goes on after the other.
    A difference in line endings or in the final newline alone says so.
    """
    if before == after:
        return None
    old, new = before.splitlines(), after.splitlines()
    for index, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            same = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
            same = min(len(a), len(b)) if same is None else same
            start = 0 if max(len(a), len(b)) <= SHOWN else max(0, same - 10)
            return f"line {index + 1}: {_excerpt(a, start)} -> {_excerpt(b, start)}"
    if len(new) > len(old):
        return f"line {len(old) + 1} added: {_excerpt(new[len(old)], 0)}"
    if len(old) > len(new):
        return f"line {len(new) + 1} removed: {_excerpt(old[len(new)], 0)}"
    return "only the line endings or the final newline changed"


def _text(content: Any) -> str:
    """A message's content as text (an OpenAI list of parts, or anything else, as JSON)."""
    return content if isinstance(content, str) else show(content, 10**6)


def _messages(body: Mapping[str, Any]) -> tuple[str, list[Any], Any]:
    """(the system prompt, the turns before the question, the question) of a request body."""
    found = body.get("messages")
    messages = [m for m in found if isinstance(m, Mapping)] if isinstance(found, list) else []
    system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
    rest = [m for m in messages if m.get("role") != "system"]
    question = _text(rest[-1].get("content")) if rest else ""
    return system, rest[:-1], question


def request_changes(recorded: Any, asked: Any) -> list[str]:
    """What changed from the ``recorded`` request body to the ``asked`` one, in words.

    Both are parsed JSON bodies as the wire sends them (Ollama's or the OpenAI-compatible
    API's: both carry ``messages`` and ``tools`` the same way). The tools are compared by
    :func:`tool_changes`; the system prompt and the question by :func:`text_change`
    (``system prompt: line 3: "…" -> "…"``); the history names its first changed turn; any
    other key (``options``, ``model``, ``keep_alive``, ``stream``, ...) says it changed, with
    both values when they are short literals (``options.num_predict changed from 512 to
    256``). Empty when both are the same or either is no JSON object.
    """
    if not isinstance(recorded, Mapping) or not isinstance(asked, Mapping) or recorded == asked:
        return []
    out = tool_changes(recorded.get("tools"), asked.get("tools"))
    (old_system, old_turns, old_question) = _messages(recorded)
    (new_system, new_turns, new_question) = _messages(asked)
    for what, before, after in (
        ("system prompt", old_system, new_system),
        ("question", old_question, new_question),
    ):
        change = text_change(before, after)
        if change:
            out.append(f"{what}: {change}")
    if old_turns != new_turns:
        out.append(_history(old_turns, new_turns))
    for key in _keys(recorded, asked):
        if key in ("messages", "tools"):
            continue
        old, new = recorded.get(key), asked.get(key)
        if isinstance(old, Mapping) and isinstance(new, Mapping) and old != new:
            flat = all(not isinstance(v, Mapping | list) for v in (*old.values(), *new.values()))
            if flat:
                out += [f"{key}.{c}" for k in _keys(old, new) if (c := _valued(k, old, new))]
                continue
        change = _valued(key, recorded, asked)
        out += [change] if change else []
    return [escape_control(line) for line in out]


def _history(old: list[Any], new: list[Any]) -> str:
    """The first turn of the history that changed, with its first changed line."""
    if len(old) != len(new):
        return f"history: {len(old)} -> {len(new)} turns"
    turn = next(i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b)
    a, b = old[turn], new[turn]
    if a.get("role") != b.get("role"):
        return f"history: turn {turn + 1}: role {a.get('role')} -> {b.get('role')}"
    said = text_change(_text(a.get("content")), _text(b.get("content")))
    return f"history: turn {turn + 1}: {said}" if said else f"history: turn {turn + 1} changed"


def _valued(key: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """``key`` compared with both values shown when they are short enough to read."""
    if key in a and key in b and a[key] == b[key]:
        return None
    if key in a and key in b and not isinstance(a[key], Mapping | list):
        return f"{key} changed from {show(a[key])} to {show(b[key])}"
    return _keyword(key, a, b)
