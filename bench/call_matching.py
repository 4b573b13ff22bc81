"""Benchmark for judging unordered calls (run by hand: ``python bench/call_matching.py``).

Times :func:`pytest_cardprobe.judge.call.judge_calls` on a ``calls:`` case of n calls to the
same tool, n = 4, 8, 16, 32, where the model made all n calls in reverse order and one of
them has a wrong argument: no full pairing exists, so every judge has to prove that, which
is the worst case for a search. Prints a Markdown table of min / median / max per n over the
rounds (``time.perf_counter``, garbage collector off while a call is timed).

For a ratio it also times the judge's old pairing, kept here and only here: it tried every
permutation of the calls (n!), checking each spec against its call per permutation. It runs
at n = 4 and 8 only (n! is 40,320 at 8 and 3,628,800 at 10). Target
(BENCHMARKS.md): 32 calls judged in under 50 ms. No timing is asserted in the tests.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from itertools import permutations
from typing import Any

from pytest_cardprobe.judge.argschema import schema_problem
from pytest_cardprobe.judge.call import ModelTurn, judge_calls
from pytest_cardprobe.judge.matchers import argument_problem
from pytest_cardprobe.suite.calls import CallSpec, Expectation, Matcher
from pytest_cardprobe.types import ToolCall

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "lines": {"type": "integer"}},
                "required": ["path"],
            },
        },
    }
]


def case(n: int) -> tuple[Expectation, list[ToolCall]]:
    """n expected reads; the model's n reads in reverse order, the middle one's path wrong."""
    specs = tuple(
        CallSpec("read_file", (("path", Matcher("equals", f"src/module_{i}.py")),))
        for i in range(n)
    )
    calls = [ToolCall("read_file", {"path": f"src/module_{i}.py", "lines": 40}) for i in range(n)]
    calls.reverse()
    calls[n // 2] = ToolCall("read_file", {"path": "src/module_x.py", "lines": 40})
    return Expectation("calls", specs), calls


def judge_now(expect: Expectation, calls: list[ToolCall]) -> str:
    """The whole judgement as replay runs it (names, schema, matching)."""
    return judge_calls([ModelTurn("tool_calls", tuple(calls), "")], expect, TOOLS).label


def _old_pairings(
    calls: Sequence[ToolCall], specs: Sequence[CallSpec]
) -> Iterator[list[tuple[CallSpec, ToolCall]]]:
    """The judge's pairing before the maximum matching: every permutation of the calls."""
    seen: set[tuple[int, ...]] = set()
    for order in permutations(range(len(calls))):
        if order in seen:
            continue
        seen.add(order)
        pairs = [(spec, calls[i]) for spec, i in zip(specs, order, strict=True)]
        if all(spec.name == call.name for spec, call in pairs):
            yield pairs


def judge_old(expect: Expectation, calls: list[ToolCall]) -> str:
    """The old judgement's schema and argument steps (the name counts agree here)."""
    parameters = TOOLS[0]["function"]["parameters"]
    for call in calls:
        problem = schema_problem(call.arguments, parameters)
        if problem:
            return f"bad_arguments {call.name}: {problem}"
    first: str | None = None
    for pairs in _old_pairings(calls, expect.calls):
        problems = [(c.name, argument_problem(c, s)) for s, c in pairs]
        bad = next(((n, p) for n, p in problems if p), None)
        if bad is None:
            return "ok"
        if first is None:
            first = f"wrong_arguments {bad[0]}: {bad[1]}"
    return first or "ok"


def times(run: Callable[[], Any], rounds: int) -> list[float]:
    """Seconds per call over ``rounds`` calls."""
    out = []
    for _ in range(rounds):
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter()
            run()
            out.append(time.perf_counter() - started)
        finally:
            gc.enable()
    return out


def spread(values: list[float]) -> str:
    ms = [v * 1e3 for v in values]
    return f"{min(ms):.2f} / {statistics.median(ms):.2f} / {max(ms):.2f}"


def main() -> None:
    """Print the Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=25, help="judgements timed per n")
    parser.add_argument("--old-rounds", type=int, default=3, help="rounds of the old pairing")
    parser.add_argument("--no-old", action="store_true", help="skip the permutation pairing")
    args = parser.parse_args()
    judge_now(*case(2))  # import jsonschema and build the validator outside the timings
    print(
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M')}, "
        f"{args.rounds} rounds (old pairing: {args.old_rounds})"
    )
    print()
    print("| calls | now: min / median / max (ms) | old: min / median / max (ms) | old / now |")
    print("|---:|---:|---:|---:|")
    for n in (4, 8, 16, 32):
        expect, calls = case(n)
        label = judge_now(expect, calls)
        assert label.startswith("wrong_arguments read_file: $.path"), label
        now = times(lambda e=expect, c=calls: judge_now(e, c), args.rounds)
        old_cell, ratio = "", ""
        if n <= 8 and not args.no_old:
            old = times(lambda e=expect, c=calls: judge_old(e, c), args.old_rounds)
            old_cell = spread(old)
            ratio = f"{statistics.median(old) / statistics.median(now):,.0f}x"
        print(f"| {n} | {spread(now)} | {old_cell} | {ratio} |")


if __name__ == "__main__":
    main()
