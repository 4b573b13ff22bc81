"""The committed baseline: each arm's per-case verdicts and route counts, read and written.

Reading validates every key, so a bad file stops the run before any test with a message
naming the file and the key. The gate (``gate.py``) takes the parsed :class:`Baseline` and
never touches files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import write_atomically
from pytest_cardprobe.score.aggregate import ArmScore
from pytest_cardprobe.types import ProbeResult

BASELINE_FORMAT = 1


class BaselineError(Exception):
    """The baseline file cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class CaseVerdict:
    """One case of one arm as the baseline remembers it."""

    passed: bool
    label: str
    calls: int = 0
    tool_calls: int = 0


@dataclass
class Baseline:
    """Per arm id (``suite/model/channel/condition``), per case id, the remembered verdict."""

    arms: dict[str, dict[str, CaseVerdict]] = field(default_factory=dict)

    def verdict(self, arm_id: str, case: str) -> CaseVerdict | None:
        """The baseline verdict of ``case`` in ``arm_id``, or None when it has none."""
        return self.arms.get(arm_id, {}).get(case)


def _want(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise BaselineError(f"{where} must be {what}; regenerate it with --update-baseline")


def parse_baseline(data: object, source: str) -> Baseline:
    """Validate a decoded baseline document; errors name ``source`` and the key."""
    _want(isinstance(data, dict), source, "a JSON object")
    assert isinstance(data, dict)
    _want(
        data.get("format") == BASELINE_FORMAT,
        f"{source}: key 'format'",
        f"{BASELINE_FORMAT} (got {data.get('format')!r})",
    )
    arms = data.get("arms")
    _want(isinstance(arms, dict), f"{source}: key 'arms'", "a mapping of arm ids")
    assert isinstance(arms, dict)
    out: dict[str, dict[str, CaseVerdict]] = {}
    for arm_id, arm in arms.items():
        where = f"{source}: key arms.{arm_id}"
        _want(isinstance(arm, dict), where, "a mapping")
        verdicts = arm.get("verdicts")
        _want(isinstance(verdicts, dict), f"{where}.verdicts", "a mapping of case ids")
        cases: dict[str, CaseVerdict] = {}
        for case, entry in verdicts.items():
            at = f"{where}.verdicts.{case}"
            _want(isinstance(entry, dict), at, "a mapping")
            _want(isinstance(entry.get("passed"), bool), f"{at}.passed", "true or false")
            _want(isinstance(entry.get("label", ""), str), f"{at}.label", "a string")
            for count in ("calls", "tool_calls"):
                value = entry.get(count, 0)
                _want(type(value) is int and value >= 0, f"{at}.{count}", "an integer >= 0")
            cases[str(case)] = CaseVerdict(
                passed=entry["passed"],
                label=entry.get("label", ""),
                calls=entry.get("calls", 0),
                tool_calls=entry.get("tool_calls", 0),
            )
        out[str(arm_id)] = cases
    return Baseline(out)


def load_baseline(path: Path) -> Baseline | None:
    """The baseline at ``path``, or None when there is none; a bad file is a BaselineError."""
    data = _read(path)
    return None if data is None else parse_baseline(data, f"baseline {path}")


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc}") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise BaselineError(
            f"baseline {path} is not valid JSON: {exc}; regenerate it with --update-baseline"
        ) from None


def route_counts(results: Sequence[ProbeResult]) -> dict[tuple[str, str], tuple[int, int]]:
    """Per (arm id, case): calls that produced a reply, and how many went through tool_calls."""
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for r in results:
        routed = [s.route for s in r.samples if s.route]
        counts[(r.arm_id, r.case)] = (len(routed), routed.count("tool_calls"))
    return counts


def baseline_document(arms: Sequence[ArmScore], results: Sequence[ProbeResult]) -> dict[str, Any]:
    """The baseline document for this run's arms (stable ordering, no timestamps)."""
    counts = route_counts(results)
    out: dict[str, Any] = {}
    for arm in arms:
        cases = {}
        for case, info in sorted(arm.cases.items()):
            if info["status"] not in ("passed", "failed"):
                continue  # unscored cases have no verdict to keep
            calls, tool = counts.get((arm.id, case), (0, 0))
            cases[case] = {
                "passed": info["status"] == "passed",
                "label": info["label"],
                "calls": calls,
                "tool_calls": tool,
            }
        out[arm.id] = {
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
    """Write the baseline atomically, keeping arms that did not run this time."""
    data = baseline_document(arms, results)
    try:
        old = _read(path)
        parse_baseline(old, str(path))
    except BaselineError:
        old = None  # a broken file is what --update-baseline is asked to replace
    if isinstance(old, Mapping):
        data["arms"] = dict(sorted({**old["arms"], **data["arms"]}.items()))
    write_atomically(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
