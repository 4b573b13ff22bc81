"""Compare each arm with the committed baseline and decide whether the run regressed.

A pass-rate regression is an arm that lost more than ``noise_floor`` cases; an adoption
regression is a tool-channel arm whose adoption fell by more than ``noise_floor`` cases'
worth (K / cases in the arm). Only cases that ran in both are compared, so ``-k`` runs
compare what ran.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import (
    DEFAULT_MAX_FILE_MB,
    MB,
    FileRefused,
    read_capped,
    write_atomically,
)
from pytest_cardprobe.score.aggregate import ArmScore
from pytest_cardprobe.types import ProbeResult

BASELINE_FORMAT = 1


class BaselineError(Exception):
    """The baseline file cannot be used; the message names it."""


def baseline_data(arms: Sequence[ArmScore], results: Sequence[ProbeResult]) -> dict[str, Any]:
    """The baseline document for this run's arms (stable ordering, no timestamps)."""
    per_case: dict[tuple[str, str], dict[str, int]] = {}
    for r in results:
        calls = [s for s in r.samples if s.route]
        per_case[(r.arm_id, r.case)] = {
            "calls": len(calls),
            "tool_calls": sum(1 for s in calls if s.route == "tool_calls"),
        }
    out: dict[str, Any] = {}
    for arm in arms:
        key = arm.id
        cases = {}
        for case, info in sorted(arm.cases.items()):
            if info["status"] not in ("passed", "failed"):
                continue  # unscored cases have no verdict to keep
            counts = per_case.get((key, case), {"calls": 0, "tool_calls": 0})
            cases[case] = {"passed": info["status"] == "passed", "label": info["label"], **counts}
        out[key] = {
            "suite": arm.suite,
            "model": arm.model,
            "channel": arm.channel,
            "condition": arm.condition,
            "passed": arm.passed,
            "cases": len(cases),
            "calls": arm.calls,
            "tool_calls": arm.routes.get("tool_calls", 0),
            "verdicts": cases,
        }
    return {"format": BASELINE_FORMAT, "arms": dict(sorted(out.items()))}


def write_baseline(path: Path, arms: Sequence[ArmScore], results: Sequence[ProbeResult]) -> None:
    """Write the baseline atomically, merging arms that did not run this time."""
    data = baseline_data(arms, results)
    try:
        old = load_baseline(path)
    except BaselineError:
        old = None
    if old:
        merged = {**old.get("arms", {}), **data["arms"]}
        data["arms"] = dict(sorted(merged.items()))
    write_atomically(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def load_baseline(path: Path, max_bytes: int = DEFAULT_MAX_FILE_MB * MB) -> dict[str, Any] | None:
    """The baseline at ``path``, checked key by key, or None when there is none.

    Every problem is a :class:`BaselineError` naming the file and the key, so a hand-edited
    or merge-mangled baseline stops the run before the first test, not after the last.
    """
    try:
        raw = read_capped(path, max_bytes)
    except FileNotFoundError:
        return None
    except FileRefused as exc:
        raise BaselineError(f"baseline {path} {exc}") from None
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BaselineError(
            f"baseline {path} is not UTF-8 text (binary?): {exc.reason} at byte {exc.start}; "
            "restore it from version control or regenerate it with --update-baseline"
        ) from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BaselineError(f"baseline {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT:
        raise BaselineError(
            f"baseline {path} has an unknown format (want format {BASELINE_FORMAT}); "
            "regenerate it with --update-baseline"
        )
    if not isinstance(data.get("arms"), dict):
        raise BaselineError(f"baseline {path}: key 'arms' must be a mapping")
    problem = _baseline_problem(data["arms"])
    if problem:
        raise BaselineError(
            f"baseline {path}: {problem}; fix it or regenerate it with --update-baseline"
        )
    return data


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _baseline_problem(arms: dict[str, Any]) -> str | None:
    """The first key of a baseline's ``arms`` that does not have the shape the gate reads."""
    for arm_id, arm in arms.items():
        at = f"arms[{arm_id!r}]"
        if not isinstance(arm, dict):
            return f"{at} must be a mapping, got {type(arm).__name__}"
        for key in ("suite", "model", "channel", "condition"):
            if key in arm and not isinstance(arm[key], str):
                return f"{at}.{key} must be a string, got {arm[key]!r}"
        for key in ("passed", "cases", "calls", "tool_calls"):
            if key in arm and not _count(arm[key]):
                return f"{at}.{key} must be a whole number >= 0, got {arm[key]!r}"
        verdicts = arm.get("verdicts", {})
        if not isinstance(verdicts, dict):
            return f"{at}.verdicts must be a mapping of case id to verdict, got {verdicts!r}"[:300]
        for case, verdict in verdicts.items():
            where = f"{at}.verdicts[{case!r}]"
            if not isinstance(verdict, dict):
                return f"{where} must be a mapping, got {verdict!r}"[:300]
            if not isinstance(verdict.get("passed"), bool):
                return f"{where}.passed must be true or false, got {verdict.get('passed')!r}"
            if "label" in verdict and not isinstance(verdict["label"], str):
                return f"{where}.label must be a string, got {verdict['label']!r}"
            for key in ("calls", "tool_calls"):
                if key in verdict and not _count(verdict[key]):
                    return f"{where}.{key} must be a whole number >= 0, got {verdict[key]!r}"
    return None


@dataclass
class GateSettings:
    """How strict the gate is."""

    noise_floor: int = 1
    strict_baseline: bool = False
    max_unscored: float = 0.2


def decide(
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    baseline: dict[str, Any] | None,
    settings: GateSettings,
) -> dict[str, Any]:
    """The gate decision as plain data (stable ordering)."""
    k = settings.noise_floor
    per_case_routes: dict[tuple[str, str], tuple[int, int]] = {}
    for r in results:
        calls = [s for s in r.samples if s.route]
        per_case_routes[(r.arm_id, r.case)] = (
            len(calls),
            sum(1 for s in calls if s.route == "tool_calls"),
        )
    regressions: list[str] = []
    warnings: list[str] = []
    gains: list[str] = []
    new: list[str] = []
    by_arm: dict[str, Any] = {}
    base_arms = (baseline or {}).get("arms", {})
    unscored = sum(a.unscored for a in arms)
    total = sum(a.unscored + a.scored for a in arms)
    for arm in arms:
        key = arm.id
        base = base_arms.get(key)
        if base is None:
            new.append(f"{key}: {arm.passed}/{arm.scored} (no baseline)")
            by_arm[key] = {"new": True}
            continue
        verdicts = base.get("verdicts") or {}
        now = {c: i for c, i in arm.cases.items() if i["status"] in ("passed", "failed")}
        common = sorted(set(now) & set(verdicts))
        was = sum(1 for c in common if verdicts[c].get("passed"))
        is_ = sum(1 for c in common if now[c]["status"] == "passed")
        lost = [c for c in common if verdicts[c].get("passed") and now[c]["status"] != "passed"]
        won = [c for c in common if not verdicts[c].get("passed") and now[c]["status"] == "passed"]
        entry: dict[str, Any] = {
            "compared": len(common),
            "passed_before": was,
            "passed_now": is_,
            "passed_delta": is_ - was,
            "flipped_to_fail": lost,
            "flipped_to_pass": won,
        }
        flips = ", ".join(f"{c} ({verdicts[c].get('label')} -> {now[c]['label']})" for c in lost)
        if was - is_ > k:
            regressions.append(
                f"{key}: passed {was} -> {is_} of {len(common)} (floor ±{k}); pass -> fail: {flips}"
            )
        elif lost:
            warnings.append(f"{key}: pass -> fail within the floor: {flips}")
        if is_ - was > k:
            gains.append(
                f"{key}: passed {was} -> {is_}; accept with --update-baseline "
                f"(fail -> pass: {', '.join(won)})"
            )
        if arm.channel == "tool" and common:
            b_calls = sum(int(verdicts[c].get("calls", 0)) for c in common)
            b_tool = sum(int(verdicts[c].get("tool_calls", 0)) for c in common)
            n_calls = sum(per_case_routes.get((key, c), (0, 0))[0] for c in common)
            n_tool = sum(per_case_routes.get((key, c), (0, 0))[1] for c in common)
            if b_calls and n_calls:
                before, after = b_tool / b_calls, n_tool / n_calls
                entry["adoption_before"] = round(before, 4)
                entry["adoption_now"] = round(after, 4)
                entry["adoption_delta"] = round(after - before, 4)
                allowed = k / len(common)
                if before - after > allowed + 1e-9:
                    regressions.append(
                        f"{key}: adoption {before:.0%} -> {after:.0%} "
                        f"(allowed drop {allowed:.0%} = {k} of {len(common)} cases)"
                    )
        by_arm[key] = entry
    inconclusive = bool(total) and unscored / total > settings.max_unscored
    if regressions:
        decision = "fail"
    elif inconclusive:
        decision = "inconclusive"
    elif new and settings.strict_baseline:
        decision = "fail"
        regressions.extend(f"{n} — --strict-baseline wants a baseline" for n in new)
    else:
        decision = "pass"
    if baseline is None and decision == "pass":
        summary = "no baseline yet: every arm is new; write one with --update-baseline"
    else:
        summary = (
            f"{len(regressions)} regression(s), {len(warnings)} warning(s) within ±{k}, "
            f"{len(gains)} gain(s), {len(new)} new arm(s), {unscored} of {total} case(s) unscored"
        )
        if inconclusive:
            summary += (
                f" — more than {settings.max_unscored:.0%} unscored (infra or errors): inconclusive"
            )
    return {
        "decision": decision,
        "summary": summary,
        "noise_floor": k,
        "regressions": regressions,
        "warnings": warnings,
        "gains": gains,
        "new": new,
        "unscored": unscored,
        "arms": dict(sorted(by_arm.items())),
    }
