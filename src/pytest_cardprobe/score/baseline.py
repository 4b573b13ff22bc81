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
from pytest_cardprobe.jsonread import load_json
from pytest_cardprobe.score.aggregate import CANARY_VERDICTS, ArmScore, Canary
from pytest_cardprobe.score.bounds import MAX_COUNT, is_count
from pytest_cardprobe.types import ProbeResult

BASELINE_FORMAT = 1
#: A count a baseline may hold (bounds.py says why a billion).
COUNT = f"an integer >= 0 (at most {MAX_COUNT:,})"


class BaselineError(Exception):
    """The baseline file cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class CaseVerdict:
    """One case of one arm as the baseline remembers it."""

    passed: bool
    label: str
    calls: int = 0
    tool_calls: int = 0
    recorded: str | None = None  # when the case's cassette was recorded (ISO 8601, UTC)
    # Samples passed of samples judged; None in a baseline written before they were kept.
    samples_passed: int | None = None
    samples: int | None = None
    at_least: int | None = None  # the case rule when k < n; None: every sample must pass

    @property
    def counts(self) -> tuple[int, int]:
        """(samples passed, samples) for the paired test; a case of an old baseline, which
        kept only its verdict, counts as one sample: 1 of 1 if it passed, else 0 of 1."""
        if self.samples_passed is None or self.samples is None:
            return int(self.passed), 1
        return self.samples_passed, self.samples

    @property
    def unstable(self) -> bool:
        """Its samples disagreed (unknown, so False, in an old baseline)."""
        return self.samples is not None and 0 < (self.samples_passed or 0) < self.samples


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
            _want(is_count(arm.get(key, 0)), f"{where}.{key}", COUNT)
        verdicts = arm.get("verdicts")
        _want(isinstance(verdicts, dict), f"{where}.verdicts", "a mapping of case ids")
        cases: dict[str, CaseVerdict] = {}
        for case, entry in verdicts.items():
            at = f"{where}.verdicts.{case}"
            _want(isinstance(entry, dict), at, "a mapping")
            _want(isinstance(entry.get("passed"), bool), f"{at}.passed", "true or false")
            _want(isinstance(entry.get("label", ""), str), f"{at}.label", "a string")
            calls = entry.get("calls", 0)
            _want(is_count(calls), f"{at}.calls", COUNT)
            _want(
                is_count(entry.get("tool_calls", 0), 0, calls),
                f"{at}.tool_calls",
                f"an integer from 0 to calls ({calls})",
            )
            recorded = entry.get("recorded")
            _want(recorded is None or isinstance(recorded, str), f"{at}.recorded", "a string")
            cases[str(case)] = CaseVerdict(
                passed=entry["passed"],
                label=entry.get("label", ""),
                calls=entry.get("calls", 0),
                tool_calls=entry.get("tool_calls", 0),
                recorded=recorded,
                **_sample_counts(entry, at),
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


def _sample_counts(entry: Mapping[str, Any], at: str) -> dict[str, int | None]:
    """A case's ``samples_passed``/``samples`` (both or neither) and ``at_least``, checked."""
    passed, total, rule = entry.get("samples_passed"), entry.get("samples"), entry.get("at_least")
    _want(
        (passed is None) == (total is None),
        f"{at}.samples_passed",
        "given together with samples (or both left out)",
    )
    if total is not None:
        _want(is_count(total, 1), f"{at}.samples", f"an integer >= 1 (at most {MAX_COUNT:,})")
        _want(
            is_count(passed, 0, total),
            f"{at}.samples_passed",
            f"an integer from 0 to samples ({total})",
        )
    if rule is not None:
        most = f"samples ({total})" if total is not None else f"the sample count ({MAX_COUNT:,})"
        _want(
            is_count(rule, 1, MAX_COUNT if total is None else total),
            f"{at}.at_least",
            f"an integer from 1 to {most}",
        )
    return {"samples_passed": passed, "samples": total, "at_least": rule}


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
        return load_json(text)
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
    return data, update


def write_baseline(
    path: Path,
    arms: Sequence[ArmScore],
    results: Sequence[ProbeResult],
    canaries: Sequence[Canary] = (),
    prune: SuiteShapes | None = None,
) -> BaselineUpdate:
    """Merge this run into the baseline at ``path`` and write it atomically (see
    :func:`baseline_document`); a broken old file is replaced, as the option is asked to."""
    try:
        old = _read(path)
        parse_baseline(old, str(path))
    except BaselineError:
        old = None  # a broken file is what --cardprobe-update-baseline is asked to replace
    data, update = baseline_document(
        arms, results, canaries, old if isinstance(old, Mapping) else None, prune, str(path)
    )
    write_atomically(
        path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    )
    return update
