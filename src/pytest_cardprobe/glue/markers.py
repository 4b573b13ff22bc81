"""The ``samples(n, at_least=k)`` marker of a test, validated: how many times it asks."""

from __future__ import annotations

import pytest

SAMPLES_HELP = (
    "samples(n) takes one integer n >= 1 and optionally at_least=k, an integer "
    "1 <= k <= n, e.g. @pytest.mark.samples(3) or @pytest.mark.samples(3, at_least=2)"
)


def marker_rule(item: pytest.Item) -> tuple[int, int | None] | None:
    """The validated ``samples(n, at_least=k)`` of ``item`` as (n, k), k None when not
    given; None without the marker. Bad arguments are a usage error naming the test."""
    mark = item.get_closest_marker("samples")
    if mark is None:
        return None
    kwargs = dict(mark.kwargs)
    n: object = None
    if len(mark.args) == 1 and "n" not in kwargs:
        n = mark.args[0]
    elif not mark.args:
        n = kwargs.pop("n", None)
    k: object = kwargs.pop("at_least", None)
    # bool is an int subclass; samples(True) is a mistake, not one sample.
    fine = type(n) is int and n >= 1 and not kwargs and len(mark.args) <= 1
    if fine and k is not None:
        fine = type(k) is int and 1 <= k <= n  # type: ignore[operator]
    if not fine:
        shown = ", ".join([*map(repr, mark.args), *(f"{a}={v!r}" for a, v in mark.kwargs.items())])
        raise pytest.UsageError(f"{item.nodeid}: {SAMPLES_HELP}; got samples({shown})")
    assert isinstance(n, int) and (k is None or isinstance(k, int))
    from pytest_cardprobe.glue.state import get_state

    most = get_state(item.config).settings.max_samples
    if n > most:
        raise pytest.UsageError(
            f"{item.nodeid}: samples({n}) is more than the limit of {most} "
            "(ini cardprobe_max_samples)"
        )
    return n, k


def marker_samples(item: pytest.Item) -> int | None:
    """The validated n of ``samples(n)`` of ``item``, or None (see :func:`marker_rule`)."""
    rule = marker_rule(item)
    return None if rule is None else rule[0]
