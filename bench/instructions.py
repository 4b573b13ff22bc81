"""Count the instructions of a shipped-cassette replay and of bare pytest
(``python bench/instructions.py``; see BENCHMARKS.md, "Instructions, not seconds").

On a shared VM the wall time of one and the same pytest run moves by 20 % and more from run
to run, more than a change to the plugin moves it. Valgrind's callgrind counts the
instructions a process executes (``Ir``): with ``PYTHONHASHSEED`` fixed, the same code on the
same input counts the same on every run, whatever else the machine does. Instructions are
not time (a cache miss costs more than an add), so this complements ``bench/replay.py``'s
interleaved rounds and does not replace them.

It builds the matrix of ``bench/replay.py --cassettes shipped`` (both shipped suites, every
arm, the shipped cassettes copied per model) at two sizes, ``--small`` and ``--large``
models, records a baseline in each, writes as many trivial passing tests (``bare``) and
counts one run of each: ``replay``, ``bare`` and, with ``--against SRC``, ``replay`` with the
package from SRC. The cost per test is the slope between the two sizes and the fixed cost
(start-up, collection set-up, the summary) what is left; from both it prints the counts at
``--models`` models and their ratios, which is what ``bench/replay.py`` times at that size.
Needs ``valgrind`` (Debian: ``apt-get install valgrind``); runs take about a minute per 300
tests on a 2-core machine, two at a time.
"""

# Markdown tables use the multiplication sign.
# ruff: noqa: RUF001

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import replay  # noqa: E402  (the matrix is built as bench/replay.py builds it)

Counts = dict[tuple[str, int], int]


def linear(small: tuple[int, int], large: tuple[int, int]) -> tuple[float, float]:
    """(fixed, per test) of a cost measured as (tests, count) at two sizes."""
    (n1, c1), (n2, c2) = small, large
    if n2 <= n1:
        raise ValueError("the large matrix must have more tests than the small one")
    per_test = (c2 - c1) / (n2 - n1)
    return c1 - per_test * n1, per_test


def build(root: Path, models: int, env: dict[str, str]) -> int:
    """The replay project (with its baseline) and the bare tests for ``models`` models;
    returns the number of tests."""
    names = [f"bench-model-{i:02d}:latest" for i in range(1, models + 1)]
    project = root / "replay"
    shutil.copytree(replay.REPO / "cases", project / "cases")
    ini = "[pytest]\ncardprobe_models =" + "".join(f"\n    {m}" for m in names) + "\n"
    (project / "pytest.ini").write_text(ini)
    tests = int(replay.copy_shipped(project, names)["tests"])
    cmd = [sys.executable, *replay.PYTEST, "cases", "--cardprobe-update-baseline"]
    subprocess.run(cmd, cwd=project, env=env, capture_output=True, check=True)
    (root / "bare").mkdir()
    (root / "bare" / "pytest.ini").write_text("[pytest]\n")
    replay.write_bare(root / "bare" / "test_bare.py", tests, {})
    return tests


def counted(folder: Path, args: Sequence[str], env: dict[str, str], tests: int) -> int:
    """Instructions of one pytest run under callgrind; stops on a run that is not clean."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    cmd += [sys.executable, *replay.PYTEST, *args]
    proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True)
    got = replay.counts(proc.stdout)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if sum(got.values()) != tests or "error" in got or "failed" in got or found is None:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        raise SystemExit(f"{folder.name} run is not clean ({got}):\n{tail}")
    return int(found.group(1))


def main(argv: Sequence[str] | None = None) -> int:
    """Build both sizes, count every run, print Markdown."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add = parser.add_argument
    add("--small", type=replay.at_least(1), default=1, help="models of the small matrix (1)")
    add("--large", type=replay.at_least(2), default=3, help="models of the large matrix (3)")
    add("--models", type=replay.at_least(1), default=15, help="models to extrapolate to (15)")
    add("--against", type=Path, metavar="SRC", help="also count replay with the package in SRC")
    add("--keep", type=Path, metavar="DIR", help="build in DIR and keep it")
    args = parser.parse_args(argv)
    if args.large <= args.small:
        parser.error("--large must be more models than --small")
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    sys.path.insert(0, str(replay.REPO / "src"))  # a clean checkout runs without installing
    root = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="cardprobe-ir-"))
    env = {**replay.bench_env(root), "PYTHONHASHSEED": "0"}
    envs = {"replay": env, "bare": env}
    if args.against:
        envs["replay-against"] = {**env, "PYTHONPATH": str(args.against.resolve())}
    try:
        sizes: dict[int, int] = {}
        jobs = []
        for models in (args.small, args.large):
            where = root / f"models-{models}"
            shutil.rmtree(where, ignore_errors=True)
            sizes[models] = build(where, models, env)
            for which, run_env in envs.items():
                folder, what = (
                    ("bare", ["test_bare.py"]) if which == "bare" else ("replay", ["cases"])
                )
                # A plain run first: the bytecode cache, so no run counts compiling.
                subprocess.run(
                    [sys.executable, *replay.PYTEST, *what],
                    cwd=where / folder,
                    env=run_env,
                    capture_output=True,
                    check=False,
                )
                jobs.append((which, models, where / folder, what, run_env))
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {
                (which, models): pool.submit(counted, folder, what, run_env, sizes[models])
                for which, models, folder, what, run_env in jobs
            }
            found: Counts = {key: future.result() for key, future in futures.items()}
        print(report(found, sizes, args.small, args.large, args.models), end="")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


def report(found: Counts, sizes: dict[int, int], small: int, large: int, models: int) -> str:
    """The counts, the fit and the ratios at ``models`` models, as Markdown."""
    tests = sizes[small] // small * models
    lines = [
        f"| run | Ir, {sizes[small]:,} tests | Ir, {sizes[large]:,} tests | fixed | per test "
        f"| at {tests:,} tests |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    at: dict[str, float] = {}
    for which in sorted({w for w, _ in found}, key=["replay", "bare", "replay-against"].index):
        fixed, per_test = linear(
            (sizes[small], found[(which, small)]), (sizes[large], found[(which, large)])
        )
        at[which] = fixed + per_test * tests
        lines.append(
            f"| {which} | {found[(which, small)]:,} | {found[(which, large)]:,} "
            f"| {fixed / 1e9:.3f} G | {per_test / 1e6:.3f} M | {at[which] / 1e9:.2f} G |"
        )
    lines += [
        "",
        f"| ratio (instructions) | at the small size | at the large size | at {tests:,} tests |",
        "|---|---:|---:|---:|",
    ]
    for top, bottom in (
        ("replay", "bare"),
        ("replay-against", "bare"),
        ("replay", "replay-against"),
    ):
        if top in at and bottom in at:
            here = [found[(top, m)] / found[(bottom, m)] for m in (small, large)]
            lines.append(
                f"| {top} / {bottom} | {here[0]:.3f}× | {here[1]:.3f}× | "
                f"**{at[top] / at[bottom]:.3f}×** |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
