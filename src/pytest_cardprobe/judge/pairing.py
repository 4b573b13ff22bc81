"""Pair expected calls with received calls when their order does not matter.

A ``calls:`` case without ``ordered: true`` passes when every expected call can be given a
distinct received call of the same name whose arguments match it. That is a maximum
bipartite matching: the table of which expected call fits which received call is built once
(one :func:`~pytest_cardprobe.judge.matchers.argument_problem` per same-name pair, so n² at
worst), then Hopcroft-Karp finds a largest set of pairs in O(E·√V). Trying permutations, as
the judge once did, is n!: 40,320 orders at 8 calls, 3.6 million at 10 (BENCHMARKS.md).

Hopcroft-Karp rather than the Hungarian algorithm: the verdict only needs to know whether a
full pairing exists, and when none does, an expected call the largest pairing leaves out and
a received call of the same name it leaves out never fit each other (else the pairing would
be larger), so their mismatch is a true reason for the label. With one wrong argument among
many calls, that pair is exactly the wrong call. A "closest wrong pairing" by cost would need
every matcher of every pair scored, and O(n³) time, for a label that says the same thing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

__all__ = ["leftover", "maximum_matching"]

_FREE = -1


def maximum_matching(fits: Sequence[Sequence[int]], right: int) -> list[int]:
    """A maximum matching of a bipartite graph, as ``match[left] = right`` (``-1`` unmatched).

    ``fits[i]`` lists the right vertices (``0 .. right - 1``) left vertex ``i`` may pair with,
    in the order to prefer them. Deterministic: the same table always gives the same pairs.
    """
    left = len(fits)
    match_left = [_FREE] * left
    match_right = [_FREE] * right
    infinity = left + 1
    while True:
        # Breadth first from every free left vertex: the layers of shortest augmenting paths.
        dist = [infinity] * left
        queue: deque[int] = deque()
        for i in range(left):
            if match_left[i] == _FREE:
                dist[i] = 0
                queue.append(i)
        found = False
        while queue:
            i = queue.popleft()
            for j in fits[i]:
                k = match_right[j]
                if k == _FREE:
                    found = True
                elif dist[k] == infinity:
                    dist[k] = dist[i] + 1
                    queue.append(k)
        if not found:
            return match_left
        # Depth first along the layers, iteratively (no recursion limit on long paths).
        for start in range(left):
            if match_left[start] != _FREE:
                continue
            _augment(start, fits, dist, match_left, match_right, infinity)


def _augment(
    start: int,
    fits: Sequence[Sequence[int]],
    dist: list[int],
    match_left: list[int],
    match_right: list[int],
    infinity: int,
) -> None:
    """Find one augmenting path from the free left vertex ``start`` and flip it."""
    path: list[tuple[int, int]] = []  # (left vertex, index of the next edge to try)
    stack = [(start, 0)]
    while stack:
        i, edge = stack.pop()
        edges = fits[i]
        while edge < len(edges):
            j = edges[edge]
            k = match_right[j]
            if k == _FREE:
                # Flip the path: every left vertex on it takes the right vertex it reached.
                path.append((i, edge))
                for a, e in path:
                    b = fits[a][e]
                    match_left[a], match_right[b] = b, a
                return
            if dist[k] == dist[i] + 1:
                path.append((i, edge))
                stack.append((k, 0))
                break
            edge += 1
        else:
            dist[i] = infinity  # a dead end: no later search goes through it again
            if path:
                parent, parent_edge = path.pop()
                stack.append((parent, parent_edge + 1))


def leftover(
    match_left: Sequence[int], right: int, same_kind: Callable[[int, int], bool]
) -> tuple[int, int] | None:
    """The first unmatched left vertex and the first unmatched right vertex of its kind.

    None when every left vertex is matched. When counts per kind are equal, an unmatched left
    vertex always has an unmatched right vertex of its kind.
    """
    used = set(match_left)
    for i, j in enumerate(match_left):
        if j != _FREE:
            continue
        for candidate in range(right):
            if candidate not in used and same_kind(i, candidate):
                return i, candidate
        return i, _FREE
    return None
