"""Judges by name: the built-in card judge and whatever plugins provide."""

from __future__ import annotations

from collections.abc import Callable

from pytest_cardprobe.judge.card import judge_card
from pytest_cardprobe.suite.loader import Case, Suite
from pytest_cardprobe.types import Verdict

Judge = Callable[[str, Case, Suite], Verdict]
"""A judge scores the reply equivalent of one sample for one case of a suite."""


def card_judge(text: str, case: Case, suite: Suite) -> Verdict:
    """The reference card judge (docs/design.md §5)."""
    return judge_card(
        text,
        accept=case.accept,
        requires_input=case.requires_input,
        vocabulary=suite.vocabulary,
        allow_unknown=suite.allow_unknown_types,
    )


BUILTIN_JUDGES: dict[str, Judge] = {"card": card_judge}


class BoundJudge:
    """A judge bound to one case and suite: it then reads only the answer's text. An object
    of the judge stage rather than a closure built in glue, so the asking stage calls down
    into the judge, never back up into glue."""

    __slots__ = ("case", "judge", "suite")

    def __init__(self, judge: Judge, case: Case, suite: Suite) -> None:
        self.judge, self.case, self.suite = judge, case, suite

    def __call__(self, text: str) -> Verdict:
        return self.judge(text, self.case, self.suite)
