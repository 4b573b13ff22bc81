"""A JSON report's ``tests[]`` read back into :class:`ProbeResult` objects, every field checked.

``python -m pytest_cardprobe diff`` reads reports that may have been edited by hand or by
another tool. Each test entry is checked here, field by field, against what
``ProbeResult.to_dict`` writes: the types, the words a field can hold (statuses, routes,
failure classes, canary roles) and the counts' bounds (``score/bounds.py``). A problem is a
:class:`ReportError` naming the file and the key (``new.json: tests[0].condition: expected a
string, got a list``), so nothing of the wrong type or size reaches the aggregate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_cardprobe.score.aggregate import ROUTES
from pytest_cardprobe.score.bounds import MAX_COUNT, is_count
from pytest_cardprobe.text import escape_control
from pytest_cardprobe.types import PROBLEMS, FailureClass, ProbeResult, Status, trim

STATUSES = tuple(s.value for s in Status)
CANARY_ROLES = ("needs_tool", "no_tool")
FAILURES = tuple(c.value for c in FailureClass)


class ReportError(Exception):
    """A document that is not a cardprobe JSON report; the message names the file and key."""


@dataclass(frozen=True)
class Want:
    """What one field must hold: a test of the value, and its description for the message."""

    ok: Callable[[Any], bool]
    what: str
    required: bool = False


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _optional(want: Want) -> Want:
    return Want(lambda v: v is None or want.ok(v), f"{want.what} or null")


def _required(want: Want) -> Want:
    return Want(want.ok, want.what, required=True)


def _one_of(words: tuple[str, ...]) -> Want:
    return Want(lambda v: v in words and isinstance(v, str), "one of " + ", ".join(words))


def _float_holds(value: Any) -> bool:
    """A JSON number a float can hold (a 400-digit integer cannot)."""
    if type(value) not in (int, float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


TEXT = Want(_text, "a string", required=True)
OPTIONAL_TEXT = _optional(Want(_text, "a string"))
COUNT = Want(is_count, f"an integer from 0 to {MAX_COUNT:,}")
TEXTS = Want(lambda v: isinstance(v, list) and all(map(_text, v)), "a list of strings")
MAPPING = Want(lambda v: isinstance(v, dict), "an object")

RESULT: dict[str, Want] = {
    "nodeid": TEXT,
    "suite": TEXT,
    "model": TEXT,
    "channel": TEXT,
    "condition": TEXT,
    "case": TEXT,
    "status": _required(_one_of(STATUSES)),
    "samples": Want(lambda v: isinstance(v, list), "a list of samples"),
    "message": OPTIONAL_TEXT,
    "server": OPTIONAL_TEXT,
    "model_digest": OPTIONAL_TEXT,
    "model_changed": OPTIONAL_TEXT,
    "server_changed": OPTIONAL_TEXT,
    "warmup": _optional(MAPPING),
    "canary": _optional(_one_of(CANARY_ROLES)),
    "outcome": OPTIONAL_TEXT,
    "recorded": OPTIONAL_TEXT,
    "at_least": _optional(Want(lambda v: is_count(v, 1), f"an integer from 1 to {MAX_COUNT:,}")),
    "problem": _optional(_one_of(PROBLEMS)),
    "changes": _optional(TEXTS),
    "draft": _optional(Want(lambda v: v is True, "true")),
    "broken_server": OPTIONAL_TEXT,
}
SAMPLE: dict[str, Want] = {
    "index": _required(COUNT),
    "route": _required(_optional(_one_of(ROUTES))),
    "passed": Want(lambda v: isinstance(v, bool), "true or false", required=True),
    "label": TEXT,
    "failure": _required(_optional(_one_of(FAILURES))),
    "types": TEXTS,
    "unknown_types": TEXTS,
    "reply": Want(_text, "a string"),
    "finish_reason": OPTIONAL_TEXT,
    "thinking": Want(_text, "a string"),
    "figures": Want(
        lambda v: isinstance(v, dict) and all(map(_float_holds, v.values())),
        "an object of numbers a float can hold",
    ),
    "retry_of": _optional(
        Want(
            lambda v: isinstance(v, dict) and all(x is None or _text(x) for x in v.values()),
            "an object of strings",
        )
    ),
    "calls": _optional(
        Want(lambda v: isinstance(v, list) and all(TEXTS.ok(t) for t in v), "a list of lists")
    ),
    "turns": _optional(COUNT),
    "args_as_string": _optional(COUNT),
    "stream": _optional(
        Want(
            lambda v: isinstance(v, dict) and all(map(is_count, v.values())),
            f"an object of integers from 0 to {MAX_COUNT:,}",
        )
    ),
}


def _got(value: Any) -> str:
    """What ``value`` is, in a few words (never the whole value: it may be a long reply)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        digits = math.floor(value.bit_length() * math.log10(2)) + 1
        return f"an integer of {digits} digits" if digits > 20 else str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _check(entry: Any, wants: Mapping[str, Want], where: str, kind: str) -> None:
    if not isinstance(entry, dict):
        raise ReportError(f"{where}: expected an object ({kind}), got {_got(entry)}")
    for key in entry:
        if key not in wants:
            shown = escape_control(trim(key, 60))
            raise ReportError(f"{where}.{shown}: not a key of {kind} (another cardprobe version?)")
    for key, want in wants.items():
        if key not in entry:
            if want.required:
                raise ReportError(f"{where}.{key}: missing")
            continue
        if not want.ok(entry[key]):
            raise ReportError(f"{where}.{key}: expected {want.what}, got {_got(entry[key])}")


def read_result(entry: Any, where: str) -> ProbeResult:
    """One test entry of a report, checked (errors begin with ``where``, e.g.
    ``new.json: tests[3]``) and built."""
    _check(entry, RESULT, where, "a test result")
    for index, sample in enumerate(entry.get("samples", [])):
        _check(sample, SAMPLE, f"{where}.samples[{index}]", "a sample")
    return ProbeResult.from_dict(entry)
