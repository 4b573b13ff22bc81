"""Acceptances at work: the regressions a gate saw, as acceptances to record
(:func:`pending`), and a base's baseline with the accepted ones made as they are now
(:func:`applied`), so the gate decided again counts only what was not accepted.

The records and their file format are ``acceptance.py``; ``glue/session.py`` decides when
each is used (``--cardprobe-update-baseline`` records, a gate against a base applies).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from pytest_cardprobe.score.acceptance import Acceptance
from pytest_cardprobe.score.aggregate import ArmScore, Canary
from pytest_cardprobe.score.baseline import Baseline
from pytest_cardprobe.score.gate import REGRESSION, SIGNIFICANCE, Gate

__all__ = ["applied", "carried", "pending"]


def _share(value: float | None) -> str:
    return f"{value or 0:.0%}"


def pending(gate: Gate) -> list[Acceptance]:
    """Every regression ``gate`` saw, as an acceptance without reason or base: each case
    that went from pass to fail (beyond the noise floor or within it), each canary change,
    each adoption drop the mode in force counts as a regression."""
    found = [Acceptance("flip", arm, f.case, f.before, f.after) for arm, f in gate.flips]
    found += [Acceptance("canary", c.key, None, c.before, c.after) for c in gate.canary_changes]
    for arm, c in sorted(gate.arms.items()):
        dropped = (
            c.adoption_significant(gate.alpha)
            if gate.mode == SIGNIFICANCE
            else c.adoption_regressed
        )
        if dropped and c.words.get(gate.mode) == REGRESSION:
            found.append(
                Acceptance("adoption", arm, None, _share(c.adoption_before), _share(c.adoption_now))
            )
    return found


def carried(
    earlier: Sequence[Acceptance],
    made: Sequence[Acceptance],
    arms: Sequence[ArmScore],
    found: Sequence[Canary],
    gated: bool,
) -> list[Acceptance]:
    """The committed acceptances ``earlier`` an update keeps besides those it makes or keeps
    for this run's regressions (``made``): each one about something this run did not judge
    (a partial update merges, never shrinks), and, in an update without a base ref (which
    cannot see the base's verdicts), each one whose regression this run still shows. An
    update against a base (``gated``) has already re-made every acceptance its regressions
    still need, so what it judged and did not re-make no longer holds."""
    kept_keys = {(a.key, a.base) for a in made}
    by_arm = {a.id: a for a in arms}
    canary = {c.key: c.verdict for c in found if c.measured}
    out: list[Acceptance] = []
    for a in earlier:
        if (a.key, a.base) in kept_keys:
            continue
        arm = by_arm.get(a.where)
        if a.kind == "canary":
            now = canary.get(a.where)
        elif arm is None:
            now = None
        elif a.kind == "flip":
            info = arm.cases.get(a.case or "")
            now = None if info is None else _flip_now(info)
        else:
            now = _share(arm.adoption) if arm.adoption is not None else None
        if now is None or (not gated and now == a.after):
            out.append(a)
    return out


def _flip_now(info: Mapping[str, object]) -> str | None:
    """A judged case's label when it failed (a flip's ``after``), ``""`` when it passed, None
    when it has no verdict (infra, error: it was not judged)."""
    if info.get("status") == "failed":
        return str(info.get("label"))
    return "" if info.get("status") == "passed" else None


def applied(
    gate: Gate,
    base: Baseline,
    accepted: Sequence[Acceptance],
    commit: str | None,
    arms: Sequence[ArmScore],
    counts: Mapping[tuple[str, str], tuple[int, int]],
) -> tuple[Baseline, list[Acceptance], list[str]]:
    """``base`` with the regressions of ``gate`` that ``accepted`` covers for ``commit`` made
    as they are now, so a gate decided again counts none of them; the acceptances that
    applied; and a note for each regression accepted against another base or with other
    labels (it still counts)."""
    mine = {a.key: a for a in accepted if commit is not None and a.base == commit}
    elsewhere = {a.key: a for a in accepted if a.key not in mine}
    by_place = {(a.kind, a.where, a.case): a for a in accepted}
    arms_now = {a.id: a for a in arms}
    new_arms = {arm: dict(cases) for arm, cases in base.arms.items()}
    canary = dict(base.canary)
    used: list[Acceptance] = []
    notes: list[str] = []
    for wanted in pending(gate):
        found = mine.get(wanted.key)
        if found is None:
            other = elsewhere.get(wanted.key) or by_place.get(wanted.key[:3])
            if other is not None:
                notes.append(_why_not(wanted, other, commit))
            continue
        used.append(found)
        if wanted.kind == "canary":
            canary[wanted.where] = wanted.after
        elif wanted.kind == "flip" and wanted.case is not None:
            info = arms_now[wanted.where].cases[wanted.case]
            was = new_arms[wanted.where][wanted.case]
            new_arms[wanted.where][wanted.case] = replace(
                was,
                passed=False,
                label=str(info["label"]),
                samples_passed=info.get("samples_passed"),
                samples=info.get("samples"),
                at_least=info.get("at_least"),
            )
        else:
            for case, was in new_arms.get(wanted.where, {}).items():
                calls, tools = counts.get((wanted.where, case), (was.calls, was.tool_calls))
                new_arms[wanted.where][case] = replace(was, calls=calls, tool_calls=tools)
    adjusted = Baseline(new_arms, canary, list(base.accepted))
    return adjusted, used, notes


def _why_not(wanted: Acceptance, other: Acceptance, commit: str | None) -> str:
    """Why an acceptance of the same regression does not apply here."""
    if other.key != wanted.key:
        return (
            f"{wanted}: the acceptance says {other.before} -> {other.after}, not "
            f"{wanted.before} -> {wanted.after}; accept it again"
        )
    made = f"base {other.base[:12]}" if other.base else "no base"
    now = f"base {commit[:12]}" if commit else "this run's baseline"
    return (
        f"{wanted}: accepted against {made}, not against {now}; an acceptance holds for the "
        "base it was made against: accept it again against this one"
    )


def _side(passed: bool, counts: tuple[int, int] | None, label: str) -> str:
    shown = f" {counts[0]}/{counts[1]}" if counts else ""
    return f"{'passed' if passed else 'failed'}{shown} ({label})"


def uncommitted(
    arms: Sequence[ArmScore], own: Baseline | None, canaries: Mapping[str, str] | None = None
) -> list[str]:
    """Where this run's judged cases differ from the committed baseline ``own``: a case
    missing from it, another verdict, other sample counts, another canary verdict.

    Replay is deterministic, so with a base to gate against each one means a recording or a
    baseline that was not committed; there is no noise floor here.
    """
    fix = "run --cardprobe-update-baseline and commit the baseline with the recordings"
    if own is None:
        return [f"there is no committed baseline; {fix}"] if arms else []
    out = []
    for arm in arms:
        kept = own.arms.get(arm.id, {})
        for case, info in sorted(arm.cases.items()):
            if info["status"] not in ("passed", "failed"):
                continue
            passed = info["status"] == "passed"
            counts = (int(info.get("samples_passed", passed)), int(info.get("samples", 1)))
            now = _side(passed, counts, str(info["label"]))
            was = kept.get(case)
            if was is None:
                out.append(f"{arm.id}: {case} is not in the committed baseline (now {now}); {fix}")
                continue
            same_counts = was.samples is None or (was.samples_passed, was.samples) == counts
            if was.passed != passed or not same_counts:
                then = _side(was.passed, was.counts if was.samples else None, was.label)
                out.append(f"{arm.id}: {case}: the committed baseline says {then}, this replay "
                           f"{now}; {fix}")  # fmt: skip
    for key, verdict in sorted((canaries or {}).items()):
        if own.canary.get(key, verdict) != verdict:
            out.append(
                f"canary {key}: the committed baseline says {own.canary[key]}, this replay "
                f"{verdict}; {fix}"
            )
    return out
