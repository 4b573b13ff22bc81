"""Render scores: the terminal scoreboard, the Markdown report and the JSON report.

Everything here is built as data first (lists of lines, dicts) so that it can be printed,
written or snapshotted the same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pytest_cardprobe.score.aggregate import FAILURE_CLASSES, ArmScore

HEADERS = (
    "suite",
    "model",
    "channel",
    "condition",
    "passed",
    "adoption",
    "recovered",
    "pass_by_route",
    "malformed",
    "declined",
    "wrong_element",
    "infra",
    "split",
    "note",
)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{round(value * 100):d}%"


def by_route(arm: ArmScore) -> str:
    """Tool and retry arms: samples passed / samples, per route that carried any."""
    if arm.channel == "prose":
        return "-"
    return "; ".join(f"{r} {p}/{n}" for r, (p, n) in arm.by_route().items()) or "-"


RETRY_HEADERS = ("arm", "parse_failures", "retries", "recovered", "retry_route")


def retry_rows(arms: Sequence[ArmScore]) -> list[list[str]]:
    """The retry table: one row per retry-channel arm."""
    rows = []
    for arm in arms:
        if arm.channel != "retry":
            continue
        t = arm.retry
        routes = "; ".join(f"{r} {n}" for r, n in sorted(t.routes.items()) if n) or "-"
        rows.append([arm.id, str(t.parse_failures), str(t.retries), str(t.recovered), routes])
    return rows


def arm_row(arm: ArmScore, delta: dict[str, Any] | None = None) -> list[str]:
    """One scoreboard row; ``delta`` is the gate's comparison for this arm, if any."""
    passed = f"{arm.passed}/{arm.scored}"
    adoption = (
        f"{arm.routes['tool_calls']}/{arm.calls} {_pct(arm.adoption)}"
        if arm.adoption is not None
        else "-"
    )
    notes = []
    if delta:
        if delta.get("new"):
            notes.append("new")
        else:
            d = delta.get("passed_delta", 0)
            if d:
                passed += f" ({d:+d})"
            ad = delta.get("adoption_delta")
            if ad and arm.adoption is not None:
                adoption += f" ({ad * 100:+.0f}pt)"
    if arm.unsupported:
        notes.append("unsupported")
    if arm.unscored:
        notes.append(f"{arm.unscored} unscored")
    recovered = str(arm.routes.get("recovered", 0)) if arm.channel == "tool" else "-"
    return [
        arm.suite,
        arm.model,
        arm.channel,
        arm.condition,
        "-" if arm.unsupported and not arm.scored else passed,
        adoption,
        recovered,
        by_route(arm),
        *(str(arm.failures.get(k, 0)) for k in FAILURE_CLASSES),
        str(len(arm.split)),
        ", ".join(notes),
    ]


def table(rows: Sequence[Sequence[str]], headers: Sequence[str] = HEADERS) -> list[str]:
    """Plain aligned text table."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*headers).rstrip()] + [fmt.format(*r).rstrip() for r in rows]


def scoreboard_lines(arms: Sequence[ArmScore], deltas: dict[str, Any] | None = None) -> list[str]:
    """The terminal scoreboard: one row per arm, then split cases."""
    if not arms:
        return []
    deltas = deltas or {}
    rows = [arm_row(a, deltas.get(a.id)) for a in arms]
    lines = table(rows)
    if retried := retry_rows(arms):
        lines += [
            "",
            "retry (prose first; a reply that fails to parse is asked again via the tool):",
        ]
        lines += table(retried, RETRY_HEADERS)
    split = [(a, c) for a in arms for c in sorted(a.split)]
    if split:
        lines.append("")
        lines.append("split cases (samples disagreed):")
        lines.extend(f"  {a.id}: {c}" for a, c in split)
    return lines


def markdown(arms: Sequence[ArmScore], gate: dict[str, Any] | None) -> str:
    """A Markdown report fit for a pull-request comment."""
    out = ["## cardprobe", ""]
    if gate:
        out.append(f"**Gate: {gate['decision']}** — {gate['summary']}")
        out.append("")
    deltas = (gate or {}).get("arms", {})
    rows = [arm_row(a, deltas.get(a.id)) for a in arms]
    out.append("| " + " | ".join(HEADERS) + " |")
    out.append("|" + "---|" * len(HEADERS))
    out.extend("| " + " | ".join(r) + " |" for r in rows)
    if retried := retry_rows(arms):
        out += ["", "### Retry", ""]
        out.append("| " + " | ".join(RETRY_HEADERS) + " |")
        out.append("|" + "---|" * len(RETRY_HEADERS))
        out.extend("| " + " | ".join(r) + " |" for r in retried)
    if gate:
        for title, key in (
            ("Regressions", "regressions"),
            ("Warnings (within the noise floor)", "warnings"),
            ("Gains", "gains"),
            ("New arms", "new"),
        ):
            items = gate.get(key) or []
            if items:
                out += ["", f"### {title}", ""]
                out.extend(f"- {line}" for line in items)
    split = [(a.id, c) for a in arms for c in sorted(a.split)]
    if split:
        out += ["", "### Split cases", ""]
        out.extend(f"- `{a}`: {c}" for a, c in split)
    return "\n".join(out) + "\n"


def json_report(
    arms: Sequence[ArmScore], tests: Sequence[dict[str, Any]], gate: dict[str, Any] | None
) -> str:
    """The JSON report: arms, every test with every sample, and the gate decision."""
    data = {
        "arms": [a.to_dict() for a in arms],
        "tests": sorted(tests, key=lambda t: t["nodeid"]),
        "gate": gate,
    }
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
