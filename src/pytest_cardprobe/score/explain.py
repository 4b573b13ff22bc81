"""Words that explain the scoreboard to a reader who has not read the design.

* :func:`legend` — one line saying what the columns shown mean (``±``, ``p``, the
  interval), and that ``-v`` shows the columns left out;
* :func:`let_through` — per case that flipped without the gate failing for it, one line
  saying that the gate let it through and why (within the noise floor, or not
  significant); a won case within the floor says it was not counted as a gain.

Their words are the terminal's and the Markdown report's; the JSON report keeps the gate's
own ``warnings`` and ``gains`` (data, unchanged).
"""

from __future__ import annotations

from collections.abc import Collection

from pytest_cardprobe.score.compare import ArmComparison, Flip
from pytest_cardprobe.score.gate import GAIN, NEW, REGRESSION, SIGNIFICANCE, Gate
from pytest_cardprobe.score.stats import ALPHA, DASH

#: What a column's header means, for the columns that are not plain words; in this order.
MEANINGS: tuple[tuple[str, str], ...] = (
    ("gate", "gate = the arm's verdict against the baseline"),
    ("passed", f"[a{DASH}b%] = 95% interval"),
    ("±", "± = cases passed minus the baseline's"),
    ("p", "p = one-sided p-value of a loss (- when no case was lost)"),
    ("±pt", "±pt = adoption change in percentage points"),
)


def legend(headers: Collection[str], left_out: int = 0, moved: bool = False) -> list[str]:
    """The legend of a scoreboard showing ``headers``, with ``left_out`` columns left out for
    saying nothing (every cell ``-``, ``0`` or empty) and, if ``moved``, some moved below."""
    said = [text for header, text in MEANINGS if header in headers]
    if left_out:
        said.append(f"-v also shows the {left_out} column(s) that are all -, 0 or empty here")
    elif moved:
        said.append("-v shows every column in one table")
    return [f"key: {'; '.join(said)}"] if said else []


def _samples(c: ArmComparison, case: str) -> str:
    """`` (2/3 -> 1/3 samples)`` for a case whose samples disagreed on a side, else ``""``."""
    for u in c.unstable:
        if u.case == case and u.before is not None and u.now is not None:
            return f" ({u.before[0]}/{u.before[1]} -> {u.now[0]}/{u.now[1]} samples)"
    return ""


def _flip(arm: str, c: ArmComparison, flip: Flip) -> str:
    return f"{arm} {flip.case}: {flip.before} -> {flip.after}{_samples(c, flip.case)}"


def let_through(gate: Gate, gains: bool = True) -> list[str]:
    """One line per flipped case the gate did not fail for, saying why (in its mode); the
    won cases not counted as a gain only with ``gains`` (``-q`` leaves them out)."""
    lines = []
    for arm, c in sorted(gate.arms.items()):
        if c.word == NEW or not (c.lost or c.won):
            continue
        net = f"the arm's net change is {c.passed_delta:+d} case(s)"
        if gate.mode == SIGNIFICANCE:
            test = c.test
            p = "-" if test is None else f"{test.p_loss:.4g}"
            failed = c.words.get(SIGNIFICANCE) == REGRESSION and c.passed_delta < 0
            why = f"p = {p} is not significant at {ALPHA} = {gate.alpha:g}"
            gained = c.words.get(SIGNIFICANCE) == GAIN
        else:
            failed = -c.passed_delta > gate.noise_floor
            why = f"{net}, within ±{gate.noise_floor}"
            gained = c.passed_delta > gate.noise_floor
        if not failed:
            lines += [
                f"let through: {_flip(arm, c, f)} — {why}, so the gate passes it" for f in c.lost
            ]
        if gains and not gained:
            lines += [
                f"not a gain: {_flip(arm, c, f)} — {why}, so it is not counted as a gain"
                for f in c.won
            ]
    return lines
