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

from pytest_cardprobe.files import (
    DEFAULT_MAX_FILE_MB,
    MB,
    FileRefused,
    read_capped,
    write_atomically,
)
from pytest_cardprobe.score.aggregate import CANARY_VERDICTS, ArmScore, Canary
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
    # Call suites: per ``suite/model``, the canary verdict (``supported``, ...).
    canary: dict[str, str] = field(default_factory=dict)

    def verdict(self, arm_id: str, case: str) -> CaseVerdict | None:
        """The baseline verdict of ``case`` in ``arm_id``, or None when it has none."""
        return self.arms.get(arm_id, {}).get(case)


def _want(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise BaselineError(
            f"{where} must be {what}; regenerate it with --cardprobe-update-baseline"
        )


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
        for key in ("suite", "model", "channel", "condition"):
            _want(isinstance(arm.get(key, ""), str), f"{where}.{key}", "a string")
        for key in ("passed", "cases", "calls", "tool_calls"):
            value = arm.get(key, 0)
            _want(type(value) is int and value >= 0, f"{where}.{key}", "an integer >= 0")
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
    canary = data.get("canary", {})
    _want(isinstance(canary, dict), f"{source}: key 'canary'", "a mapping of suite/model keys")
    assert isinstance(canary, dict)
    for key, verdict in canary.items():
        _want(
            verdict in CANARY_VERDICTS,
            f"{source}: key canary.{key}",
            f"one of {', '.join(CANARY_VERDICTS)} (got {verdict!r})",
        )
    return Baseline(out, {str(k): str(v) for k, v in canary.items()})


def load_baseline(path: Path, max_bytes: int = DEFAULT_MAX_FILE_MB * MB) -> Baseline | None:
    """The baseline at ``path``, or None when there is none; a bad file is a BaselineError.

    The file is read only if it is a regular file of at most ``max_bytes`` (ini
    ``cardprobe_max_file_mb``): a FIFO or device there must not hang or flood the run.
    """
    data = _read(path, max_bytes)
    return None if data is None else parse_baseline(data, f"baseline {path}")


def _read(path: Path, max_bytes: int = DEFAULT_MAX_FILE_MB * MB) -> Any:
    regenerate = (
        "; restore it from version control or regenerate it with --cardprobe-update-baseline"
    )
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
            f"baseline {path} is not UTF-8 text (binary?): {exc.reason} at byte {exc.start}"
            + regenerate
        ) from None
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        # RecursionError: thousands of nested brackets exhaust the parser's stack.
        raise BaselineError(f"baseline {path} is not valid JSON: {exc}" + regenerate) from None


def route_counts(results: Sequence[ProbeResult]) -> dict[tuple[str, str], tuple[int, int]]:
    """Per (arm id, case): calls that produced a reply, and how many went through tool_calls."""
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for r in results:
        routed = [s.route for s in r.samples if s.route]
        counts[(r.arm_id, r.case)] = (len(routed), routed.count("tool_calls"))
    return counts


def baseline_document(
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    canaries: Sequence[Canary] = (),
) -> dict[str, Any]:
    """The baseline document for this run's arms and canaries (stable ordering, no timestamps)."""
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
    data: dict[str, Any] = {"format": BASELINE_FORMAT, "arms": dict(sorted(out.items()))}
    if canaries:
        data["canary"] = {c.key: c.verdict for c in sorted(canaries, key=lambda c: c.key)}
    return data


def write_baseline(
    path: Path,
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    canaries: Sequence[Canary] = (),
) -> None:
    """Write the baseline atomically, keeping arms (and canaries) that did not run this time."""
    data = baseline_document(arms, results, canaries)
    try:
        old = _read(path)
        parse_baseline(old, str(path))
    except BaselineError:
        old = None  # a broken file is what --cardprobe-update-baseline is asked to replace
    if isinstance(old, Mapping):
        data["arms"] = dict(sorted({**old["arms"], **data["arms"]}.items()))
        canary = {**(old.get("canary") or {}), **data.get("canary", {})}
        if canary:
            data["canary"] = dict(sorted(canary.items()))
    write_atomically(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
