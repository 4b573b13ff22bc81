"""Suite stage: a card suite's schema-valid document as a :class:`Suite`.

The suite schema has checked the document's shape; what is checked here is what it cannot
say: prompt files that exist and are not empty, element types of a suite's own vocabulary,
and (through :mod:`suite.loader`) unique case ids and the history's alternation.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_cardprobe.suite.context import Reader, at_least_of
from pytest_cardprobe.suite.errors import KeyPath, describe
from pytest_cardprobe.suite.records import (
    DEFAULT_CHANNELS,
    DEFAULT_CONDITIONS,
    DEFAULT_VOCABULARY,
    PROMPT_KINDS,
    Case,
    SeedTurn,
    Suite,
)

__all__ = ["card_suite"]

CaseId = Callable[[KeyPath, str], str]


def card_suite(
    reader: Reader, data: dict[str, Any], common: dict[str, Any], case_id: CaseId
) -> Suite:
    """The card suite ``data`` describes; ``common`` holds the keys all suites share and
    ``case_id`` checks that an id is unique."""
    channels = tuple(data.get("channels", DEFAULT_CHANNELS))
    conditions = tuple(data.get("conditions", DEFAULT_CONDITIONS))
    prompts, prompt_files = _prompts(reader, data["prompts"], channels)
    seed_turn = None
    if "seed_turn" in data:
        seed_turn = SeedTurn(user=data["seed_turn"]["user"], card=data["seed_turn"]["card"])
    vocabulary = tuple(data["vocabulary"]) if "vocabulary" in data else DEFAULT_VOCABULARY
    cases = tuple(
        _case(reader, (("cases", i)), item, vocabulary, case_id, common["samples"])
        for i, item in enumerate(data["cases"])
    )
    return Suite(
        **common,
        channels=channels,
        conditions=conditions,
        prompts=prompts,
        prompt_files=prompt_files,
        tool=data.get("tool", {}),
        vocabulary=vocabulary,
        cases=cases,
        allow_unknown_types=data.get("allow_unknown_types", False),
        seed_turn=seed_turn,
    )


def _prompts(
    reader: Reader, given: dict[str, Any], channels: tuple[str, ...]
) -> tuple[dict[str, str], dict[str, Path]]:
    # The retry channel asks in prose first and through the tool second: it needs both.
    needed = [k for k in PROMPT_KINDS if k in channels or "retry" in channels]
    texts: dict[str, str] = {}
    files: dict[str, Path] = {}
    # Prompts for channels the suite does not declare are still checked (a stale path is
    # a bug waiting to happen) but are not returned: one prompt per declared channel.
    for channel in PROMPT_KINDS:
        if channel not in given:
            continue
        text, resolved = reader.read_prompt(("prompts", channel), given[channel])
        if channel in needed:
            texts[channel] = text
            if resolved is not None:  # None: the prompt is a string in the application's code
                files[channel] = resolved
    return texts, files


def _case(
    reader: Reader,
    entry: KeyPath,
    item: dict[str, Any],
    vocabulary: tuple[str, ...],
    case_id: CaseId,
    samples: int,
) -> Case:
    ident = case_id(entry, item["id"])
    accept: tuple[str, ...] = tuple(item["accept"])
    known = set(vocabulary)
    for index, name in enumerate(accept):
        if name not in known:
            close = difflib.get_close_matches(name, vocabulary, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            reader.fail(
                (*entry, "accept", index),
                f"{describe(name)} is not in the suite's element vocabulary{hint}",
            )
    # A case needs an input when every accepted type is one; a control needs nothing.
    requires_input = bool(accept) and all(t.startswith("Input.") for t in accept)
    return Case(
        id=ident,
        prompt=item["prompt"],
        accept=accept,
        requires_input=item.get("requires_input", requires_input),
        line=reader.lines.get(entry),
        at_least=at_least_of(reader, (*entry, "at_least"), item.get("at_least"), samples),
    )
