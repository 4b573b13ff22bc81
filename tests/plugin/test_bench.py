"""The replay benchmark still builds and runs its matrix with the package's own code.

BENCHMARKS.md's replay figures come from ``bench/replay.py``, which builds its cassettes with
the plugin's functions; when those change, the script breaks silently unless something runs
it. This runs it small (one model: 200 tests on every arm, 100 on the old four) and checks
the tables it prints. It times nothing: the figures it prints are not asserted.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from bench_scripts import load_bench  # tests/ is on sys.path (rootdir-relative)

ROOT = Path(__file__).resolve().parents[2]


def bench(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "replay.py"), "--models", "1", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def outcome(out: str, which: str) -> dict[str, int]:
    found = re.search(rf"Outcome of `{which}`: (.*)\.", out)
    assert found, out
    return {what: int(n) for n, what in re.findall(r"(\d+) (\w+)", found.group(1))}


def test_the_replay_bench_runs_every_arm_with_and_without_a_baseline(tmp_path: Path) -> None:
    keep = tmp_path / "bench"
    out = bench("--repeat", "1", "--per-test", "3", "--floor", "--indexed", "--keep", str(keep))
    # 25 cases x 8 arms (prose cold/history/seeded/schema, tool and retry cold/history), one
    # cassette each, every one replayed cleanly (the script stops on "not recorded", "stale"
    # or "corrupt"): against the baseline it recorded, failures are known (xfailed); without
    # one, the same tests fail.
    assert "200 tests (8 arms)," in out
    cassettes = sorted((keep / "replay" / "cassettes").rglob("*.yaml"))
    arms = {re.sub(r"^.*?-(prose|tool|retry)-", r"\1-", c.stem) for c in cassettes}
    assert len(cassettes) == 200 and len(arms) == 8, arms
    with_baseline, first = outcome(out, "replay"), outcome(out, "first")
    assert set(with_baseline) == {"passed", "xfailed"} and set(first) == {"passed", "failed"}
    assert with_baseline["passed"] == first["passed"]
    assert with_baseline["xfailed"] == first["failed"] == 200 - first["passed"]
    # The retry channel asked through the tool after a prose reply that did not parse.
    bodies = [
        [json.loads(i["request"]["body"]) for i in json.loads(c.read_text())["interactions"]]
        for c in cassettes
        if "-retry-" in c.name
    ]
    assert any(len(b) > 2 and b[1].get("tools") for b in bodies)
    for row in ("| replay |", "| first |", "| bare |", "| bare-xfail |", "| bare-fail |"):
        assert row in out
    for ratio in ("replay / bare", "replay / bare-xfail", "first / bare", "first / bare-fail"):
        assert re.search(rf"\| {ratio} \| \*\*\d+\.\d\d\u00d7\*\* \|", out), ratio
    assert re.search(r"\| \*\*`Runtime.run` as a whole\*\*.* \| \d+\.\d\d \|", out)
    # --floor: the same runs with each test's result given, none of the replay work done.
    for ratio in ("replay / replay-floor", "first / first-floor", "replay-floor / bare"):
        assert re.search(rf"\| {ratio} \| \*\*\d+\.\d\d\u00d7\*\* \|", out), ratio
    floor = keep / "floor"
    assert sorted(p.name for p in floor.glob("*.pickle")) == ["first.pickle", "replay.pickle"]
    # A floor run reads no cassette (an audit hook counts every file opened in the project's
    # cassette folder, shown counting in the real run) and reports what the real run reports.
    (tmp_path / "opens.py").write_text(OPEN_COUNTER)
    for which in ("first", "replay"):
        real = floor_run(keep, which, tmp_path, serve=False)
        given = floor_run(keep, which, tmp_path, serve=True)
        assert real["opens"] >= 200 and given["opens"] == 0, (which, real["opens"], given["opens"])
        assert real["report"] == given["report"], which  # the JSON report, byte for byte
    assert with_baseline == counts_of(given["stdout"])
    # --indexed: first and bare-fail with pytest's teardown-report lookup indexed; checked
    # here against pytest's own lookup on every call, and printing what the real run prints.
    ratios = ("first / first-indexed", "bare-fail / bare-fail-indexed", "first-indexed / bare")
    for ratio in (*ratios, "first-indexed / bare-fail-indexed", "bare-fail-indexed / bare"):
        assert re.search(rf"\| {ratio} \| \*\*\d+\.\d\d\u00d7\*\* \|", out), ratio
    indexed = keep / "indexed"
    checked = project_run(
        keep,
        "first",
        tmp_path,
        "first-indexed",
        ("cardprobe_indexed",),
        [indexed],
        CARDPROBE_INDEXED="check",
        CARDPROBE_INDEXED_FILE=str(tmp_path / "indexed.calls"),
    )
    plain = project_run(keep, "first", tmp_path, "first-plain")
    # One lookup per failure, each returning what pytest's own scan returns.
    assert (tmp_path / "indexed.calls").read_text() == f"{first['failed']} calls, 0 differ"
    assert checked["report"] == plain["report"]
    # The same output, but for the run's own arguments where a printed command repeats them
    # (the no-baseline hint's update command).
    echoed = untimed(checked["stdout"]).replace(" -p cardprobe_indexed ", " ")
    assert echoed == untimed(plain["stdout"])
    # The matrix's tests print nothing in teardown, so the index as timed is also run where
    # teardown sections are shown (see the test below).
    assert "teardown" not in plain["stdout"]


#: A project whose failures have teardown sections: output, a log record and a failing
#: teardown, each test collected twice (--keep-duplicates: two reports per id).
SECTIONS_CONFTEST = """\
import logging
import sys

import pytest


@pytest.fixture(autouse=True)
def noisy(request):
    yield
    print(f"teardown out {request.node.name}")
    sys.stderr.write(f"teardown err {request.node.name}\\n")
    logging.getLogger("bench").warning("teardown log %s", request.node.name)


@pytest.fixture
def breaks():
    yield
    raise RuntimeError("teardown fails")
"""
SECTIONS_TESTS = """\
import pytest


@pytest.mark.parametrize("i", range(3))
def test_fails(i):
    assert i < 0


def test_passes():
    pass


def test_teardown_fails(breaks):
    pass


def test_both_fail(breaks):
    assert False
"""


def test_the_indexed_summary_prints_every_teardown_section_pytest_prints(tmp_path: Path) -> None:
    bench_replay = load_bench("replay")
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "cardprobe_indexed.py").write_text(bench_replay.INDEXED_PLUGIN)
    (tmp_path / "conftest.py").write_text(SECTIONS_CONFTEST)
    (tmp_path / "test_sections.py").write_text(SECTIONS_TESTS)

    def run(*plugin: str, **extra: str) -> str:
        env = {**os.environ, "PYTHONPATH": str(tmp_path / "plugin"), **extra}
        cmd = [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", *plugin]
        cmd += ["--keep-duplicates", "test_sections.py", "test_sections.py"]
        proc = subprocess.run(
            cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 1, proc.stdout + proc.stderr
        return untimed(proc.stdout)

    plain = run()
    assert plain.count("Captured stdout teardown") >= 10, plain  # failures' sections shown
    assert run("-p", "cardprobe_indexed") == plain  # as timed
    calls = tmp_path / "calls"
    assert (
        run("-p", "cardprobe_indexed", CARDPROBE_INDEXED="check", CARDPROBE_INDEXED_FILE=str(calls))
        == plain
    )
    counted, differ = re.fullmatch(r"(\d+) calls, (\d+) differ", calls.read_text()).groups()
    assert int(counted) >= 12 and differ == "0", calls.read_text()


#: A plugin for the floor check: counts files opened in the project's cassette folder (Python's
#: audit hook sees builtins.open and os.open) and writes the count at the session's end.
OPEN_COUNTER = """\
import os
import sys

OPENED = []


FOLDER = os.path.join(os.environ["CASSETTES_DIR"], "")


def _audit(event, args):
    if event == "open" and isinstance(args[0], (str, os.PathLike)):
        if os.path.abspath(os.fspath(args[0])).startswith(FOLDER):
            OPENED.append(args[0])


sys.addaudithook(_audit)


def pytest_unconfigure(config):
    with open(os.environ["OPENS_FILE"], "w") as file:
        file.write(str(len(OPENED)))
"""


def floor_run(keep: Path, which: str, tmp: Path, serve: bool) -> dict[str, Any]:
    """``pytest cases`` in the bench's ``which`` project with the floor plugin serving each
    test's kept result (``serve``) or not loaded (see :func:`project_run`)."""
    floor = keep / "floor"
    return project_run(
        keep,
        which,
        tmp,
        f"{which}-{'floor' if serve else 'real'}",
        ("cardprobe_floor",) if serve else (),
        [floor],
        CARDPROBE_FLOOR="serve",
        CARDPROBE_FLOOR_FILE=str(floor / f"{which}.pickle"),
    )


def project_run(
    keep: Path,
    which: str,
    tmp: Path,
    name: str,
    plugins: tuple[str, ...] = (),
    path: Sequence[Path] = (),
    **extra: str,
) -> dict[str, Any]:
    """``pytest cases`` in the bench's ``which`` project with ``plugins`` (found on ``path``)
    and the open counter: its stdout, the JSON report and the number of cassette files
    opened."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp), *map(str, path), str(ROOT / "src")]),
        "OPENS_FILE": str(tmp / f"{name}.opens"),
        "CASSETTES_DIR": str((keep / which / "cassettes").resolve()),
        **extra,
    }
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "opens"]
    cmd += [arg for plugin in plugins for arg in ("-p", plugin)]
    cmd += ["cases", "--cardprobe-json", str(tmp / f"{name}.json")]
    proc = subprocess.run(
        cmd, cwd=keep / which, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == (1 if which == "first" else 0), proc.stdout + proc.stderr
    return {
        "stdout": proc.stdout,
        "report": (tmp / f"{name}.json").read_bytes(),
        "opens": int((tmp / f"{name}.opens").read_text()),
    }


def untimed(stdout: str) -> str:
    """pytest's output without the run's duration (the only line that differs)."""
    return re.sub(r" in \d+\.\d+s", "", stdout)


def counts_of(stdout: str) -> dict[str, int]:
    last = stdout.strip().splitlines()[-1]
    return {what: int(n) for n, what in re.findall(r"(\d+) (passed|failed|xfailed)", last)}


def test_the_replay_bench_keeps_the_four_arm_matrix_of_the_earlier_figures() -> None:
    # --against: the replay is also run with another checkout's package (here this one),
    # which must give the same outcomes; no round is timed.
    args = ("--matrix", "four", "--only", "baseline", "--repeat", "0", "--per-test", "0")
    out = bench(*args, "--against", str(ROOT / "src"))
    assert "100 tests (4 arms)," in out
    assert sum(outcome(out, "replay").values()) == 100
    assert "Outcome of `first`" not in out


def test_the_replay_bench_times_the_shipped_recordings_copied_per_model(tmp_path: Path) -> None:
    keep = tmp_path / "bench"
    out = bench("--cassettes", "shipped", "--repeat", "1", "--per-test", "0", "--keep", str(keep))
    # Both shipped suites on every arm: each shipped cassette copied for the one model, the
    # same text with the model's name changed and nothing else.
    shipped = ROOT / "cassettes"
    originals = sorted(shipped.rglob("*.yaml"))
    assert f"{len(originals)} tests (11 arms)," in out
    model = "bench-model-01:1.5b"  # the first model the script names
    for original in originals:
        suite, _, name = original.relative_to(shipped).parts
        copy = keep / "replay" / "cassettes" / suite / "bench-model-01%3A1.5b" / name
        text = original.read_text(encoding="utf-8")
        assert copy.read_text(encoding="utf-8") == text.replace("smollm2:135m", model)
    # A recording with a failed attempt before the retry that succeeded is among them.
    held = re.search(r"; (\d+) recorded failed attempt\(s\) before a retry that succeeded", out)
    assert held and int(held.group(1)) >= 1, out
    cut = (
        keep
        / "replay"
        / "cassettes"
        / "cards"
        / "bench-model-01%3A1.5b"
        / "number-prose-schema.yaml"
    )
    first_reply = json.loads(
        json.loads(cut.read_text())["interactions"][0]["response"]["body"]["string"]
    )
    assert first_reply["done"] is False
    # Replayed cleanly (the script stops on "not recorded", "stale" or "corrupt"), against the
    # baseline it recorded first and without one.
    with_baseline, first = outcome(out, "replay"), outcome(out, "first")
    assert set(with_baseline) == {"passed", "xfailed"} and set(first) == {"passed", "failed"}
    assert with_baseline["passed"] == first["passed"]
    assert with_baseline["xfailed"] == first["failed"] == len(originals) - first["passed"]
    for ratio in ("replay / bare-xfail", "first / bare-fail", "replay / bare", "first / bare"):
        assert re.search(rf"\| {ratio} \| \*\*\d+\.\d\d\u00d7\*\* \|", out), ratio


def test_the_call_matching_bench_judges_every_size() -> None:
    # Small: one round, without the permutation pairing (which takes seconds at 8 calls).
    # The bench asserts each judgement's label itself; this checks it ran and printed its rows.
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "call_matching.py"), "--rounds", "1", "--no-old"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = re.findall(r"^\| (\d+) \| [\d.]+ / [\d.]+ / [\d.]+ \|", proc.stdout, re.MULTILINE)
    assert rows == ["4", "8", "16", "32"], proc.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--models", "0"), "argument --models: wants a number of at least 1, got 0"),
        (("--repeat", "-1"), "argument --repeat: wants a number of at least 0, got -1"),
        (("--samples", "two"), "argument --samples: wants a whole number, got 'two'"),
        (("--indexed", "--only", "baseline"), "--indexed times runs without a baseline"),
        (("--cassettes", "shipped", "--samples", "3"), "--samples shapes synthetic cassettes"),
        (("--cassettes", "shipped", "--matrix", "four"), "--matrix shapes synthetic cassettes"),
    ],
)
def test_the_replay_bench_refuses_bad_arguments_in_words(args: tuple[str, ...], said: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "replay.py"), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
