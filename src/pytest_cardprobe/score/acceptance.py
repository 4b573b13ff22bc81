"""Explicit acceptances: what ``--cardprobe-update-baseline`` accepted, and why, kept in the
baseline file so they are part of the diff a reviewer reads.

An acceptance is keyed exactly: a case's flip (arm, case, label before → label after), a
canary's change (suite/model, verdict before → after) or an arm's adoption drop (arm, share
before → after, in whole percent). It carries the reason given on the command line
(``--cardprobe-accept-reason``) and the base commit it was made against (the resolved
``--cardprobe-baseline-ref``; none without one). A run gated against a base honours only
the acceptances made against that very commit, so once a change is merged its acceptances
cannot pre-accept the same flip in a later change, and an acceptance made against an older
base has to be made again against the new one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "Acceptance", "parse_acceptances"]

KINDS: tuple[str, ...] = ("flip", "canary", "adoption")
#: The longest reason kept (a reason is a sentence or two, not a document).
MAX_REASON = 1000
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


@dataclass(frozen=True)
class Acceptance:
    """One regression accepted on purpose, keyed exactly, with its reason and its base."""

    kind: str  # one of KINDS
    where: str  # arm id (flip, adoption) or suite/model (canary)
    case: str | None  # flip only
    before: str
    after: str
    reason: str = ""
    base: str | None = None  # the base commit it was accepted against
    base_ref: str | None = None  # the ref that named it then, for the reader

    @property
    def key(self) -> tuple[str, str, str | None, str, str]:
        """What must match exactly for the acceptance to apply (its base aside)."""
        return (self.kind, self.where, self.case, self.before, self.after)

    def __str__(self) -> str:
        if self.kind == "flip":
            return f"{self.where}: {self.case} ({self.before} -> {self.after})"
        if self.kind == "canary":
            return f"canary {self.where}: {self.before} -> {self.after}"
        return f"{self.where}: adoption {self.before} -> {self.after}"

    def to_dict(self) -> dict[str, Any]:
        """The baseline file's entry."""
        data: dict[str, Any] = {"kind": self.kind}
        data["canary" if self.kind == "canary" else "arm"] = self.where
        if self.case is not None:
            data["case"] = self.case
        data.update(before=self.before, after=self.after, reason=self.reason, base=self.base)
        if self.base_ref:
            data["base_ref"] = self.base_ref
        return data


def _text(
    entry: Mapping[str, Any], key: str, where: str, most: int = 10_000, line: bool = False
) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip() or len(value) > most:
        raise ValueError(f"{where}.{key} must be a non-empty string (at most {most:,} characters)")
    if line and not value.isprintable():
        # What a person wrote (the reason, the ref) is one line of printable text, as the
        # command line takes it: a committed file must not put a bidirectional override or
        # a control character into the reports a reviewer reads.
        raise ValueError(
            f"{where}.{key} must be one line of printable text (it holds a control, "
            "invisible or bidirectional character)"
        )
    return value


def parse_acceptances(value: object) -> list[Acceptance]:
    """The ``accepted`` list of a baseline document; ValueError names the key."""
    if not isinstance(value, list):
        raise ValueError("accepted must be a list of acceptances")
    out = []
    for index, entry in enumerate(value):
        where = f"accepted[{index}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where} must be a mapping")
        kind = entry.get("kind")
        if kind not in KINDS:
            raise ValueError(f"{where}.kind must be one of {', '.join(KINDS)}")
        place = _text(entry, "canary" if kind == "canary" else "arm", where)
        case = _text(entry, "case", where) if kind == "flip" else None
        base = entry.get("base")
        if base is not None and not (isinstance(base, str) and _COMMIT.fullmatch(base)):
            raise ValueError(f"{where}.base must be a full commit hash or null")
        ref = entry.get("base_ref")
        if ref is not None:
            ref = _text(entry, "base_ref", where, 1000, line=True)
        out.append(
            Acceptance(
                str(kind),
                place,
                case,
                _text(entry, "before", where),
                _text(entry, "after", where),
                _text(entry, "reason", where, MAX_REASON, line=True),
                base,
                ref,
            )
        )
    return out
