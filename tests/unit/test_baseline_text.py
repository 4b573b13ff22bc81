"""A baseline's problems are shown on the terminal (a usage error): the ids and keys they
name come from the file, which a pull request can change, and must not reach the terminal
as control characters (an ANSI escape would clear or recolour the reader's screen)."""

from __future__ import annotations

import pytest

from pytest_cardprobe.score.baseline import BaselineError, parse_baseline

EVIL = "\x1b[2J\x1b[31mEVIL\u202e"


@pytest.mark.parametrize(
    "document",
    [
        {"format": 1, "arms": {EVIL: {"verdicts": {"c": {"passed": "x"}}}}},
        {"format": 1, "arms": {"a/m/prose/cold": {"verdicts": {EVIL: {"passed": "x"}}}}},
        {"format": 1, "arms": {EVIL: []}},
        {"format": 1, "arms": {}, "canary": {EVIL: "nope"}},
    ],
    ids=["arm", "case", "arm-not-mapping", "canary"],
)
def test_ids_from_the_file_are_shown_escaped(document: dict) -> None:
    with pytest.raises(BaselineError) as caught:
        parse_baseline(document, "baseline b.json")
    said = str(caught.value)
    assert "\x1b" not in said and "\u202e" not in said
    assert "\\x1b[2J\\x1b[31mEVIL\\u202e" in said
