"""The scoreboard's columns and rows, built as data before anything prints them.

Columns come from the data: a failure class, a route, a figure or a note gets a column when
some arm has one, so the shipped scoreboard stays readable and new classes need no change
here. The gate's word for the arm comes first, so a row leads with its verdict. Shares
carry their 95 % Wilson interval (``1/25 [1-20%]``, with an en dash; one way of writing a
percentage everywhere, see ``stats.py``); the ``p`` columns are the paired test's one-sided
p-values of a loss against the baseline, ``-`` when nothing was lost. Call arms (channel
``call``) get a table of their own, since their failure classes are not the card ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_cardprobe.score.aggregate import ADOPTION_FORCED, ArmScore
from pytest_cardprobe.score.forced import Pair, Side, pairs
from pytest_cardprobe.score.gate import NEW, SAME, ArmComparison, Decision, Gate
from pytest_cardprobe.score.stats import bounds_text, interval_text, p_text
from pytest_cardprobe.types import FailureClass


@dataclass(frozen=True)
class Column:
    """One scoreboard column: its header and how a row's cell is drawn."""

    header: str
    cell: Callable[[ArmScore, ArmComparison | None], str]


def pct(value: float | None) -> str:
    """A share as a whole percentage, ``-`` when there is none."""
    return "-" if value is None else f"{round(value * 100):d}%"


#: Card channels whose replies travel more than one route (call arms have their own table).
ROUTE_SPLIT_CHANNELS = ("tool", "retry")


def by_route(arm: ArmScore, _: ArmComparison | None = None) -> str:
    """Tool and retry arms: samples passed / samples, per route that carried any."""
    if arm.channel not in ROUTE_SPLIT_CHANNELS:
        return "-"
    return "; ".join(f"{r} {p}/{n}" for r, (p, n) in arm.by_route().items()) or "-"


def _signed(value: int) -> str:
    return f"{value:+d}" if value else "0"


def _passed(arm: ArmScore, _: ArmComparison | None) -> str:
    """Cases passed by the case rule, with their interval."""
    if arm.unsupported and not arm.scored:
        return "-"
    return interval_text(arm.passed, arm.scored)


def _samples(arm: ArmScore, _: ArmComparison | None) -> str:
    """Samples passed of the samples judged, with their interval."""
    return interval_text(arm.samples_passed, arm.samples_judged) if arm.samples_judged else "-"


def _pass_all(arm: ArmScore, _: ArmComparison | None) -> str:
    """pass^k: cases whose every sample passed (shown for arms with a k-of-n rule)."""
    return interval_text(arm.all_passed, arm.scored) if arm.relaxed else "-"


def _passed_change(_: ArmScore, c: ArmComparison | None) -> str:
    if c is None or c.word == NEW:
        return "new" if c else ""
    return _signed(c.passed_delta)


def _p(_: ArmScore, c: ArmComparison | None) -> str:
    """The paired test's p-value of the arm's loss; ``-`` when it lost no case (a p of 1
    would read as a figure where there is nothing to test)."""
    if c is None or c.test is None:
        return ""
    return p_text(c.test.p_loss) if c.lost else "-"


def _adoption(arm: ArmScore, _: ArmComparison | None) -> str:
    if arm.forced:
        return ADOPTION_FORCED  # the way of forcing decides the route, not the model
    counts = arm.adoption_counts
    if counts is None:
        return "-"
    # A call arm's share is over the samples that made a call (declining is right for some).
    return f"{counts[0]}/{counts[1]} {pct(arm.adoption)} {bounds_text(*counts)}"


def _adoption_change(arm: ArmScore, c: ArmComparison | None) -> str:
    delta = c.adoption_delta if c else None
    if delta is None or arm.adoption is None:
        return ""
    return f"{round(delta * 100):+d}pt" if round(delta * 100) else "0"


def _adoption_p(_: ArmScore, c: ArmComparison | None) -> str:
    test = c.adoption_test if c else None
    return "" if test is None else p_text(test.p_loss)


def _ran(_: ArmScore, c: ArmComparison | None) -> str:
    """Coverage of a partial run: the baseline's cases of the arm that ran, of how many."""
    if c is None or c.cases_in_baseline is None:
        return "-"
    return f"{c.baseline_cases_run}/{c.cases_in_baseline}"


def _unstable(arm: ArmScore, c: ArmComparison | None) -> str:
    """Cases whose samples disagreed, now or (with a baseline) in the baseline."""
    return str(len(c.unstable) if c is not None else len(arm.split))


def _word(_: ArmScore, c: ArmComparison | None) -> str:
    return "" if c is None else ("ok" if c.word == SAME else c.word)


def _count(attribute: str, key: str) -> Callable[[ArmScore, ArmComparison | None], str]:
    """A cell showing ``arm.<attribute>[key]`` (a route or failure-class count)."""

    def cell(arm: ArmScore, _: ArmComparison | None) -> str:
        counts: dict[str, int] = getattr(arm, attribute)
        return str(counts.get(key, 0))

    return cell


def failure_classes(arms: Sequence[ArmScore]) -> list[str]:
    """Failure classes some arm has, in the enum's order, then any others by name."""
    seen = {k for a in arms for k, n in a.failures.items() if n}
    order = [c.value for c in FailureClass]
    return [c for c in order if c in seen] + sorted(seen - set(order))


def routes_shown(arms: Sequence[ArmScore]) -> list[str]:
    """Routes worth a column: any besides the two every arm has (``tool_calls``, ``content``)."""
    seen = {r for a in arms for r, n in a.routes.items() if n}
    return sorted(seen - {"tool_calls", "content"})


def columns(arms: Sequence[ArmScore], gate: Gate | None) -> list[Column]:
    """The scoreboard's columns for these arms."""
    # The comparisons of these arms only: a column appears for what this table shows.
    found = [gate.arms[a.id] for a in arms if a.id in gate.arms] if gate is not None else []
    compared = gate is not None and gate.decision != Decision.UPDATED
    # The verdict first: a row that wraps or is cut in a CI log still says it.
    cols = [Column("gate", _word)] if compared else []
    cols += [
        Column("suite", lambda a, c: a.suite),
        Column("model", lambda a, c: a.model),
        Column("channel", lambda a, c: a.channel),
        Column("condition", lambda a, c: a.condition),
        Column("passed", _passed),
    ]
    if any(a.samples_judged > a.scored for a in arms):
        cols.append(Column("samples", _samples))  # a sample rate says more than the case rate
    if any(a.relaxed for a in arms):
        cols.append(Column("pass^k", _pass_all))
    if any(c.partial for c in found):
        cols.append(Column("ran", _ran))
    if compared:
        cols.append(Column("±", _passed_change))
        if any(c.test is not None for c in found):
            cols.append(Column("p", _p))
    if any(a.adoption is not None or a.forced for a in arms):
        cols.append(Column("adoption", _adoption))
        if compared and any(c.adoption_delta is not None for c in found):
            cols.append(Column("±pt", _adoption_change))
            # Its p only when some arm's adoption moved: a column of 1s would say nothing.
            if any(c.adoption_test is not None and c.adoption_delta for c in found):
                cols.append(Column("p_adopt", _adoption_p))
    cols += [Column(r, _count("routes", r)) for r in routes_shown(arms)]
    if any(a.channel in ROUTE_SPLIT_CHANNELS and a.by_route() for a in arms):
        cols.append(Column("pass_by_route", by_route))
    if any(a.args_as_string for a in arms):
        cols.append(Column("args_as_string", lambda a, c: str(a.args_as_string)))
    cols += [Column(n, _count("failures", n)) for n in failure_classes(arms)]
    if any(a.split for a in arms) or any(c.unstable for c in found):
        cols.append(Column("unstable", _unstable))
    if any(a.leaked for a in arms):
        # Streamed samples whose call, written as text, a naive chat client showed the user.
        cols.append(Column("leaked", lambda a, c: f"{a.leaked}/{a.streamed}"))
    if any(a.unscored or a.unsupported for a in arms):
        cols.append(Column("unscored", lambda a, c: str(a.unscored + a.unsupported)))
    return cols


def rows(arms: Sequence[ArmScore], gate: Gate | None) -> tuple[list[str], list[list[str]]]:
    """Headers and one row of cells per arm."""
    cols = columns(arms, gate)
    found = gate.arms if gate else {}
    return [c.header for c in cols], [[c.cell(a, found.get(a.id)) for c in cols] for a in arms]


def groups(arms: Sequence[ArmScore]) -> list[list[ArmScore]]:
    """The arms of each table, in order: card arms, then call arms; empty groups left out."""
    found = [[a for a in arms if not a.is_call_arm], [a for a in arms if a.is_call_arm]]
    return [g for g in found if g]


# --------------------------------------------------------------------------- offered vs forced


def _sides(value: Callable[[Side], int]) -> Callable[[Pair], str]:
    """A cell ``offered / forced`` of one figure of both sides (``-`` for a missing side)."""

    def cell(pair: Pair) -> str:
        offered = pair.offered_side
        return f"{'-' if offered is None else value(offered)} / {value(pair.forced_side)}"

    return cell


def _side_passed(offered: bool) -> Callable[[Pair], str]:
    def cell(pair: Pair) -> str:
        found = pair.offered_side if offered else pair.forced_side
        return "-" if found is None else interval_text(found.passed, found.scored)

    return cell


def _forced_routes(pair: Pair) -> str:
    return "; ".join(f"{r} {n}" for r, n in sorted(pair.forced.routes.items()) if n) or "-"


def _pair_adoption(pair: Pair) -> str:
    offered = "-" if pair.offered is None else _adoption(pair.offered, None)
    return f"{offered} / {ADOPTION_FORCED}"


#: The offered-vs-forced table's columns, in order: one row per call suite x model that ran
#: the ``required`` condition (score/forced.py); ``a / b`` cells are offered / forced samples.
FORCED_COLUMNS: tuple[tuple[str, Callable[[Pair], str]], ...] = (
    ("suite", lambda p: p.suite),
    ("model", lambda p: p.model),
    ("cases", lambda p: str(len(p.cases))),
    ("offered passed", _side_passed(True)),
    ("forced passed", _side_passed(False)),
    ("wrong_tool", _sides(lambda s: s.wrong_tool)),
    ("arguments", _sides(lambda s: s.arguments)),
    ("no call", _sides(lambda s: s.no_call)),
    ("forced routes", _forced_routes),
    ("adoption", _pair_adoption),
)


def forced_rows(arms: Sequence[ArmScore]) -> tuple[list[str], list[list[str]]]:
    """Headers and one row per forced arm with its offered arm; no rows without one."""
    found = pairs(arms)
    if not found:
        return [], []
    return [h for h, _ in FORCED_COLUMNS], [[cell(p) for _, cell in FORCED_COLUMNS] for p in found]
