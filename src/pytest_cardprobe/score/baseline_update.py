"""``--cardprobe-update-baseline``: a run merged into the baseline file and written.

The merge never shrinks the file (cases that did not run are kept), prunes only on
``--cardprobe-prune-baseline``, and runs under :func:`files.exclusive`, so two runs that
update one baseline at once take turns instead of one losing the other's arms.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import DEFAULT_MAX_FILE_MB, MB, exclusive, write_atomically
from pytest_cardprobe.score import baseline as stored
from pytest_cardprobe.score.acceptance import Acceptance
from pytest_cardprobe.score.aggregate import ArmScore, Canary
from pytest_cardprobe.score.baseline import BASELINE_FORMAT, BaselineError, parse_baseline
from pytest_cardprobe.types import ProbeResult


def route_counts(results: Sequence[ProbeResult]) -> dict[tuple[str, str], tuple[int, int]]:
    """Per (arm id, case): calls that produced a reply, and how many went through tool_calls."""
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for r in results:
        routed = [s.route for s in r.samples if s.route]
        counts[(r.arm_id, r.case)] = (len(routed), routed.count("tool_calls"))
    return counts


#: What a pruning run knows of each suite it collected: its case ids and its
#: (channel, condition) arms. Arms and cases of suites it did not collect are kept.
SuiteShapes = Mapping[str, tuple[frozenset[str], frozenset[tuple[str, str]]]]


@dataclass
class BaselineUpdate:
    """What ``--cardprobe-update-baseline`` did: the cases it wrote, kept and pruned."""

    path: str
    updated: int = 0  # cases of this run written into their arms
    arms: int = 0  # arms those cases belong to
    kept: int = 0  # cases of the old baseline that did not run and stay as they were
    pruned_cases: list[str] = field(default_factory=list)  # ``arm: case``
    pruned_arms: list[str] = field(default_factory=list)
    accepted: list[Acceptance] = field(default_factory=list)  # written into the file

    @property
    def summary(self) -> str:
        """``baseline: updated N case(s) in M arm(s), kept K`` (and what was pruned)."""
        text = (
            f"baseline {self.path}: updated {self.updated} case(s) in {self.arms} arm(s), "
            f"kept {self.kept}"
        )
        if self.pruned_cases or self.pruned_arms:
            text += (
                f"; pruned {len(self.pruned_cases)} case(s) and {len(self.pruned_arms)} arm(s) "
                "the suites no longer have"
            )
        return text


def _case_entries(
    arm: ArmScore, counts: Mapping[tuple[str, str], tuple[int, int]], recorded: Mapping[str, str]
) -> dict[str, dict[str, Any]]:
    """The verdict entries of this run's judged cases of ``arm`` (unscored ones have none)."""
    cases: dict[str, dict[str, Any]] = {}
    for case, info in sorted(arm.cases.items()):
        if info["status"] not in ("passed", "failed"):
            continue
        calls, tool = counts.get((arm.id, case), (0, 0))
        entry: dict[str, Any] = {
            "passed": info["status"] == "passed",
            "label": info["label"],
            "calls": calls,
            "tool_calls": tool,
        }
        if info.get("samples"):
            entry["samples_passed"] = info["samples_passed"]
            entry["samples"] = info["samples"]
        if info.get("at_least") is not None:
            entry["at_least"] = info["at_least"]
        when = recorded.get(f"{arm.id}::{case}")
        if when:
            entry["recorded"] = when
        cases[case] = entry
    return cases


def _arm_entry(
    arm_key: Mapping[str, Any], verdicts: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """An arm's document: its key fields and totals computed from its verdicts."""
    return {
        "suite": arm_key["suite"],
        "model": arm_key["model"],
        "channel": arm_key["channel"],
        "condition": arm_key["condition"],
        "passed": sum(bool(v["passed"]) for v in verdicts.values()),
        "cases": len(verdicts),
        "calls": sum(int(v.get("calls", 0)) for v in verdicts.values()),
        "tool_calls": sum(int(v.get("tool_calls", 0)) for v in verdicts.values()),
        "verdicts": dict(sorted(verdicts.items())),
    }


def baseline_document(
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    canaries: Sequence[Canary] = (),
    old: Mapping[str, Any] | None = None,
    prune: SuiteShapes | None = None,
    path: str = "",
    accepted: Sequence[Acceptance] = (),
) -> tuple[dict[str, Any], BaselineUpdate]:
    """The baseline after this run: ``old`` with this run's judged cases merged in.

    Merging never shrinks: a case of ``old`` that did not run keeps its entry, an arm that
    did not run keeps all of its own, and a canary is written only when it was measured
    (both sides ran). ``prune`` (the suites this run collected) removes what those suites no
    longer have, and only that. An arm with no judged case is not created.
    """
    counts = route_counts(results)
    recorded = {f"{r.arm_id}::{r.case}": r.recorded for r in results if r.recorded}
    update = BaselineUpdate(path)
    merged: dict[str, dict[str, Any]] = {
        arm_id: dict(entry) for arm_id, entry in ((old or {}).get("arms") or {}).items()
    }
    written: set[tuple[str, str]] = set()
    for arm in arms:
        cases = _case_entries(arm, counts, recorded)
        if not cases:
            continue
        written |= {(arm.id, c) for c in cases}
        before = dict((merged.get(arm.id) or {}).get("verdicts") or {})
        update.updated += len(cases)
        update.arms += 1
        key = {"suite": arm.suite, "model": arm.model, "channel": arm.channel}
        merged[arm.id] = _arm_entry({**key, "condition": arm.condition}, {**before, **cases})
    # A case that ran but was not judged (infra, a missing cassette) is kept, not updated.
    ran = written
    for arm_id in list(merged):
        entry = merged[arm_id]
        verdicts = dict(entry.get("verdicts") or {})
        shape = (prune or {}).get(str(entry.get("suite", "")))
        if shape is not None:
            has_cases, combos = shape
            if (entry.get("channel"), entry.get("condition")) not in combos:
                update.pruned_arms.append(arm_id)
                del merged[arm_id]
                continue
            gone = sorted(c for c in verdicts if c not in has_cases)
            if gone:
                update.pruned_cases += [f"{arm_id}: {c}" for c in gone]
                verdicts = {c: v for c, v in verdicts.items() if c in has_cases}
                if not verdicts:
                    update.pruned_arms.append(arm_id)
                    del merged[arm_id]
                    continue
                merged[arm_id] = _arm_entry(entry, verdicts)
        update.kept += sum((arm_id, c) not in ran for c in verdicts)
    data: dict[str, Any] = {"format": BASELINE_FORMAT, "arms": dict(sorted(merged.items()))}
    canary = dict((old or {}).get("canary") or {})
    canary.update({c.key: c.verdict for c in canaries if c.measured})
    if canary:
        data["canary"] = dict(sorted(canary.items()))
    # Acceptances are the update's own: the old file's are replaced (the caller keeps the
    # reason of one it accepts again).
    update.accepted = list(accepted)
    if accepted:
        data["accepted"] = [a.to_dict() for a in accepted]
    return data, update


def write_baseline(
    path: Path,
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    canaries: Sequence[Canary] = (),
    prune: SuiteShapes | None = None,
    accepted: Sequence[Acceptance] = (),
    max_bytes: int = DEFAULT_MAX_FILE_MB * MB,
) -> BaselineUpdate:
    """Merge this run into the baseline at ``path`` and write it atomically (see
    :func:`baseline_document`); a broken old file is replaced, as the option is asked to.

    Reading, merging and writing happen under :func:`files.exclusive`: two runs updating the
    baseline at once take turns, so neither loses the other's arms. That read is the one
    the update needs besides the configure-time read (another run may have written the file
    since); ``max_bytes`` is the run's own cap, the same as at configure time.
    """
    with exclusive(path):
        return _merge_into(path, arms, results, canaries, prune, accepted, max_bytes)


def _merge_into(
    path: Path,
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    canaries: Sequence[Canary],
    prune: SuiteShapes | None,
    accepted: Sequence[Acceptance],
    max_bytes: int,
) -> BaselineUpdate:
    try:
        old = stored.read_file(path, max_bytes)
        parse_baseline(old, str(path))
    except BaselineError:
        old = None  # a broken file is what --cardprobe-update-baseline is asked to replace
    data, update = baseline_document(
        arms,
        results,
        canaries,
        old if isinstance(old, Mapping) else None,
        prune,
        str(path),
        accepted,
    )
    write_atomically(
        path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    )
    return update
