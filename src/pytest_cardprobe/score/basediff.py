"""The change a pull request makes to the baseline, in words: what its committed baseline
says against the base's, arm by arm (``cards/m/prose/cold: date passed -> failed (ok
Input.Date -> prose); 2 case(s) added``), and what it accepts.

Pure: two parsed baselines in, lines out; the reports show them under the verdict against
the base, so a reviewer reads the baseline's diff without reading its JSON.
"""

from __future__ import annotations

from pytest_cardprobe.score.baseline import Baseline

__all__ = ["baseline_diff"]

#: Cases named per group before ``and N more``.
SHOWN = 6


def _names(cases: list[str]) -> str:
    more = len(cases) - SHOWN
    return ", ".join(cases[:SHOWN]) + (f" and {more} more" if more > 0 else "")


def baseline_diff(base: Baseline, own: Baseline) -> list[str]:
    """One line per arm the change touches, then the canaries and the acceptances; an
    empty list when the committed baseline says what the base's does."""
    out = [
        f"{arm}: arm added ({len(own.arms[arm])} case(s))"
        for arm in sorted(own.arms)
        if arm not in base.arms
    ]
    out += [f"{arm}: arm removed" for arm in sorted(base.arms) if arm not in own.arms]
    for arm in sorted(set(base.arms) & set(own.arms)):
        then, now = base.arms[arm], own.arms[arm]
        parts = []
        lost = [
            f"{c} ({then[c].label} -> {now[c].label})"
            for c in sorted(then)
            if c in now and then[c].passed and not now[c].passed
        ]
        won = [
            f"{c} ({then[c].label} -> {now[c].label})"
            for c in sorted(then)
            if c in now and not then[c].passed and now[c].passed
        ]
        relabelled = [
            c
            for c in sorted(then)
            if c in now and then[c].passed == now[c].passed and then[c].label != now[c].label
        ]
        added = sorted(set(now) - set(then))
        removed = sorted(set(then) - set(now))
        if lost:
            parts.append(f"passed -> failed: {_names(lost)}")
        if won:
            parts.append(f"failed -> passed: {_names(won)}")
        if relabelled:
            parts.append(f"{len(relabelled)} label(s) changed ({_names(relabelled)})")
        if added:
            parts.append(f"{len(added)} case(s) added ({_names(added)})")
        if removed:
            parts.append(f"{len(removed)} case(s) removed ({_names(removed)})")
        if parts:
            out.append(f"{arm}: " + "; ".join(parts))
    for key in sorted(set(base.canary) | set(own.canary)):
        if base.canary.get(key) != own.canary.get(key):
            out.append(
                f"canary {key}: {base.canary.get(key, 'none')} -> {own.canary.get(key, 'none')}"
            )
    base_keys = {(a.key, a.base) for a in base.accepted}
    accepting: dict[str, int] = {}
    for a in own.accepted:
        if (a.key, a.base) not in base_keys:
            made = f"base {a.base[:12]}" if a.base else "no base"
            accepting[made] = accepting.get(made, 0) + 1
    out += [f"accepts {n} regression(s) against {made}" for made, n in accepting.items()]
    return out
