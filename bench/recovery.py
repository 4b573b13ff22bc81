"""Benchmark for text-written tool-call recovery (run by hand: ``python bench/recovery.py``).

Times :func:`pytest_cardprobe.judge.recovery.recover_tool_calls` on 1 MB and 2 MB inputs of several
pathological kinds and prints a Markdown table: best-of-N time for each size and the 2 MB /
1 MB ratio (about 2.0 for a linear algorithm, about 4.0 for a quadratic one). Targets
(BENCHMARKS.md): ratio <= 2.2 for every kind, adversarial 1 MB reply < 50 ms.

Two shortcuts could make an input look cheaper than its shape is: recovery stops scanning
once no declared tool name occurs in the rest of the text, and it never walks an unclosed
span past the text's last ``}`` or ``]``. So the inputs hold the tool's name and a closer at
(or near) their end, forcing a walk of the whole text; the first adversarial row is the one
input where the second shortcut applies, the next row the same input with it defeated.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import time
from collections.abc import Callable

from pytest_cardprobe.judge.recovery import Recovery, recover_tool_calls

TOOL = "render_adaptive_card"
DECLARED = (TOOL, "read_file")
MB = 1_000_000


def _fill(unit: str, size: int, head: str = "", tail: str = "") -> str:
    """``head + unit * k + tail`` with k chosen so the result is about ``size`` chars."""
    k = max(1, (size - len(head) - len(tail)) // len(unit))
    return head + unit * k + tail


def prose(size: int) -> str:
    """Plain prose with quotes, apostrophes and the tool's name, but no brackets."""
    unit = (
        'The card should say "hello" to the user, and it\'s fine to call '
        "render_adaptive_card later; nothing here is JSON. "
    )
    return _fill(unit, size)


def nested_objects(size: int) -> str:
    """``{"a":`` repeated, one object nested in the next; only the innermost closes."""
    return _fill('{"a":', size, tail=f'"{TOOL}"}}')


def nested_arrays(size: int) -> str:
    """``[[[[ ... ]]]]``: balanced arrays nested size/2 deep (json would hit recursion)."""
    half = size // 2
    return "[" * half + f'"{TOOL}"' + "]" * half


def unbalanced(size: int) -> str:
    """Prose with an unbalanced ``{`` every ~60 chars (thousands of them), none closed."""
    return _fill("Some prose with a stray brace { in it, and more prose. ", size, tail=TOOL + "}")


def escaped_quotes(size: int) -> str:
    """A real call whose one string argument is ``\\"`` repeated (about size chars)."""
    head = '{"name": "' + TOOL + '", "arguments": {"body": [{"type": "TextBlock", "text": "'
    return _fill('\\"', size, head, '"}]}}')


def adversarial(size: int) -> str:
    """Many openings of a call to the declared tool, none closed (the reply must be refused)."""
    return _fill('{"name": "' + TOOL + '", "arguments": {"body": [', size)


def adversarial_closed_once(size: int) -> str:
    """The same with one ``}`` at the very end, so the scanner must walk every opening."""
    return _fill('{"name": "' + TOOL + '", "arguments": {"body": [', size, tail="}")


def tiny_spans(size: int) -> str:
    """Extra: ``["render_adaptive_card"] `` repeated, a tiny relevant span every 25 chars."""
    return _fill(f'["{TOOL}"] ', size)


def many_calls(size: int) -> str:
    """Extra: valid calls back to back (every one is recovered)."""
    return _fill('{"name": "' + TOOL + '", "arguments": {"body": []}}\n', size)


def empty_spans(size: int) -> str:
    """Extra: ``{}[]`` repeated, an irrelevant span every 2 chars."""
    return _fill("{}[]", size, tail=TOOL)


def deep_spans(size: int) -> str:
    """Extra: closed spans nested 33 deep (too deep to skip in C) back to back."""
    return _fill("[" * 33 + "]" * 33, size, tail=TOOL)


def open_chain(size: int) -> str:
    """Extra: ``{"a":[],`` repeated: an object opened every 8 chars, none closed."""
    return _fill('{"a":[],', size, tail=f'"{TOOL}"')


KINDS: list[tuple[str, Callable[[int], str]]] = [
    ("plain prose", prose),
    ('nested objects `{"a":` (only the innermost closes)', nested_objects),
    ("nested arrays `[[[[…]]]]` (balanced)", nested_arrays),
    ("unbalanced `{` in prose (thousands), `}` at the end", unbalanced),
    ('string of escaped quotes `\\"` in a call', escaped_quotes),
    ('extra: `["tool"]` tiny spans', tiny_spans),
    ("extra: valid calls back to back", many_calls),
    ("extra: `{}[]` empty spans", empty_spans),
    ("extra: spans nested 33 deep, back to back", deep_spans),
    ('extra: `{"a":[],` repeated, never closed', open_chain),
]


OPENING = f'`{{"name": "{TOOL}", "arguments": {{"body": [`'
ADVERSARIAL: list[tuple[str, Callable[[int], str]]] = [
    (f"{OPENING} repeated, never closed", adversarial),
    (f"{OPENING} repeated, then one `}}`", adversarial_closed_once),
]


def best_of(texts: list[str], repeats: int) -> tuple[list[float], list[float], Recovery]:
    """Best wall time and best CPU time (seconds) per text over ``repeats`` rounds.

    The texts are timed in turn within each round, so background load hits them alike. The
    CPU time (``time.process_time``) leaves out time the process spent descheduled, so its
    ratio stays meaningful on a busy machine. The cyclic garbage collector is off while a
    call is timed, as ``timeit`` does: when a collection happens depends on what else the
    process allocated, not on the input, and one landing inside a call was the largest
    source of spread between runs. Also returns the first text's result.
    """
    wall = [float("inf")] * len(texts)
    cpu = [float("inf")] * len(texts)
    result = Recovery()
    for _ in range(repeats):
        for i, text in enumerate(texts):
            gc.collect()
            gc.disable()
            try:
                cpu_started = time.process_time()
                started = time.perf_counter()
                outcome = recover_tool_calls(text, DECLARED)
                wall[i] = min(wall[i], time.perf_counter() - started)
                cpu[i] = min(cpu[i], time.process_time() - cpu_started)
            finally:
                gc.enable()
            if i == 0:
                result = outcome
    return wall, cpu, result


def outcome(result: Recovery) -> str:
    """A short description of what recovery decided."""
    if result.error is not None:
        return "refused"
    return f"{len(result.calls)} calls" if result.calls else "nothing"


def main() -> None:
    """Print the Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=9, help="rounds per input (best is kept)")
    args = parser.parse_args()
    recover_tool_calls("[warm-up]", DECLARED)  # compile the patterns outside the timings
    print(
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d')}, "
        f"best of {args.repeats}"
    )
    print()
    print("| input | t(1 MB) | t(2 MB) | ratio | CPU-time ratio | outcome |")
    print("|---|---:|---:|---:|---:|---|")
    for label, make in KINDS:
        (t1, t2), (c1, c2), result = best_of([make(MB), make(2 * MB)], args.repeats)
        print(
            f"| {label} | {t1 * 1e3:.1f} ms | {t2 * 1e3:.1f} ms | {t2 / t1:.2f} "
            f"| {c2 / c1:.2f} | {outcome(result)} |"
        )
    for label, make in ADVERSARIAL:
        (t,), (c,), result = best_of([make(MB)], args.repeats)
        print(
            f"| **adversarial**: {label} | {t * 1e3:.1f} ms | | | CPU {c * 1e3:.1f} ms "
            f"| {outcome(result)} |"
        )


if __name__ == "__main__":
    main()
