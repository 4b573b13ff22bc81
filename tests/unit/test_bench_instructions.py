"""The arithmetic of ``bench/instructions.py``: a fixed and a per-test cost from two sizes.

The counting itself needs valgrind and minutes; what is checked here is what turns two
counts per run into the figures BENCHMARKS.md quotes.
"""

from __future__ import annotations

import pytest
from bench_scripts import load_bench  # tests/ is on sys.path (rootdir-relative)


def test_two_sizes_give_the_fixed_and_the_per_test_cost() -> None:
    bench = load_bench("instructions")
    # 1,000 fixed and 30 per test, measured at 10 and 40 tests.
    assert bench.linear((10, 1_300), (40, 2_200)) == (1_000.0, 30.0)
    with pytest.raises(ValueError, match="more tests"):
        bench.linear((40, 2_200), (10, 1_300))


def test_the_report_extrapolates_each_run_and_its_ratio() -> None:
    bench = load_bench("instructions")
    # replay: 400 fixed + 5 per test; bare: 300 fixed + 2 per test; 270 tests per model.
    found = {
        ("replay", 1): 400 + 5 * 270,
        ("replay", 3): 400 + 5 * 810,
        ("bare", 1): 300 + 2 * 270,
        ("bare", 3): 300 + 2 * 810,
    }
    text = bench.report(found, {1: 270, 3: 810}, 1, 3, 15)
    at_15 = (400 + 5 * 4050) / (300 + 2 * 4050)
    times = "\N{MULTIPLICATION SIGN}"
    row = f"| replay / bare | {1750 / 840:.3f}{times} | {4450 / 1920:.3f}{times} | "
    assert row + f"**{at_15:.3f}{times}** |" in text
    assert "at 4,050 tests" in text
    assert "replay-against" not in text  # counted only with --against
