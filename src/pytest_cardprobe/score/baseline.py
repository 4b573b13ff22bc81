"""The committed baseline: each arm's per-case verdicts and route counts, read and checked.

Reading validates every key, so a bad file stops the run before any test with a message
naming the file and the key. The gate (``gate.py``) takes the parsed :class:`Baseline` and
never touches files; ``baseline_update.py`` merges a run into the file and writes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import (
    DEFAULT_MAX_FILE_MB,
    MB,
    FileRefused,
    read_capped,
)
from pytest_cardprobe.jsonread import load_json
from pytest_cardprobe.score.acceptance import Acceptance, parse_acceptances
from pytest_cardprobe.score.aggregate import CANARY_VERDICTS
from pytest_cardprobe.score.bounds import MAX_COUNT, is_count
from pytest_cardprobe.text import escape_control

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
    # What --cardprobe-update-baseline accepted, with its reason and base (acceptance.py).
    accepted: list[Acceptance] = field(default_factory=list)

    def verdict(self, arm_id: str, case: str) -> CaseVerdict | None:
        """The baseline verdict of ``case`` in ``arm_id``, or None when it has none."""
        return self.arms.get(arm_id, {}).get(case)


def _want(ok: bool, where: str, what: str) -> None:
    if not ok:
        # Ids and keys come from the file (a pull request can change it) and are shown on a
        # terminal: control characters as escapes.
        raise BaselineError(
            escape_control(
                f"{where} must be {what}; regenerate it with --cardprobe-update-baseline"
            )
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
    try:
        accepted = parse_acceptances(data.get("accepted", []))
    except ValueError as exc:
        raise BaselineError(f"{source}: key {exc}; fix or drop the entry") from None
    return Baseline(out, {str(k): str(v) for k, v in canary.items()}, accepted)


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
    data = read_file(path, max_bytes)
    return None if data is None else parse_baseline(data, f"baseline {path}")


def read_file(path: Path, max_bytes: int = DEFAULT_MAX_FILE_MB * MB) -> Any:
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
