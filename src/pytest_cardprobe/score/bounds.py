"""The largest counts and figures a baseline or a JSON report may hold (docs/design.md §4,
"Hostile input").

A count (samples, calls, tool calls, cases passed, turns) is a whole number from 0 to
:data:`MAX_COUNT`. A billion samples of one case is years of model calls at any speed a
server reaches, so no real run comes near it; every count at or below it is exact in a
float (2**53), sums of such counts over a whole baseline stay far from overflowing, and the
paired test's binomials stay cheap (their small side is the run being compared). A
server's figure (tokens, seconds of one reply) is scored only from 0 to :data:`MAX_FIGURE`:
a million million tokens, or about 31,700 years, for one reply is no measurement.
"""

from __future__ import annotations

MAX_COUNT = 10**9
MAX_FIGURE = 1e12


def is_count(value: object, low: int = 0, high: int = MAX_COUNT) -> bool:
    """``value`` is an integer (not a boolean) from ``low`` to ``high``."""
    return type(value) is int and low <= value <= high


def figure(value: object) -> float | None:
    """``value`` as a figure worth scoring, or None: a number from 0 to :data:`MAX_FIGURE`
    (an integer too large for a float compares without being converted)."""
    if type(value) not in (int, float):
        return None
    assert isinstance(value, int | float)
    return float(value) if 0 <= value <= MAX_FIGURE else None
