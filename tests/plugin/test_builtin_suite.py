"""``--cardprobe-suite``: built-in suites run from any folder, recording into the project."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_cardprobe.suite.builtin import SUITES_DIR

ROOT = Path(__file__).resolve().parents[2]


def ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line and " " not in line]


def test_list_prints_one_line_per_builtin_suite_and_exits_0(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--cardprobe-suite", "list")
    assert result.ret == 0
    assert result.outlines == [
        "cards  25 cases; judge card; channels prose, tool, retry; conditions cold, history, "
        "seeded, schema",
        "tools  26 cases; judge call; channels call; conditions cold, history, required",
    ]


def test_unknown_name_is_a_usage_error_listing_the_known_ones(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--cardprobe-suite", "cardz", "--model", "m")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--cardprobe-suite: unknown built-in suite 'cardz'; known: cards*list*"]
    )


def test_unknown_name_in_ini_names_the_ini_key(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncardprobe_suites = cards\n    nope\n")
    result = pytester.runpytest("--model", "m")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini key cardprobe_suites: unknown built-in suite 'nope'*"])


@pytest.mark.parametrize("how", ["option", "ini"])
def test_builtin_suite_is_collected_in_an_empty_folder(pytester: pytest.Pytester, how: str) -> None:
    args = ["--co", "-q", "--model", "a:1b"]
    if how == "option":
        args += ["--cardprobe-suite", "cards", "--cardprobe-suite", "cards"]  # once is enough
    else:
        pytester.makeini("[pytest]\ncardprobe_suites = cards\n")
    collected = ids(pytester.runpytest(*args))
    # Eight arms: prose, tool and retry cold and history, and prose seeded and schema (the
    # tool and retry arms of seeded and schema are not asked, so not collected).
    assert len(collected) == 25 * 8
    assert "cardprobe:cards::date[a:1b-tool-cold]" in collected


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_k_selects_builtin_tests_alongside_the_projects_own(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    shutil.copytree(ROOT / "cases", pytester.path / "mine")
    suite = pytester.path / "mine" / "cards.yaml"
    suite.write_text(suite.read_text().replace("name: cards", "name: mine"))
    # Nothing is recorded: --cardprobe-strict-baseline fails such tests rather than skipping
    # them (glue/replaying.py), and -vv shows each one's own paragraph.
    result = pytester.runpytest(
        "mine", "--cardprobe-suite", "cards", "--model", "m", "-k", "date and tool", *workers,
        "--cardprobe-strict-baseline", "-vv",
    )  # fmt: skip
    # Two suites x one case x two conditions, each errored as not recorded.
    result.stdout.fnmatch_lines(["*4 failed*"])
    result.stdout.fnmatch_lines(
        [
            "not recorded — run with --live to record it: pytest --live --cardprobe-suite cards "
            "--model m -k 'date[[]m-tool-cold[]]' (no cassette *",
        ]
    )


def test_builtin_suite_replays_the_projects_cassettes_and_writes_nothing_into_the_package(
    pytester: pytest.Pytester,
) -> None:
    # A project holding recordings of the built-in suite and a baseline, and no suite files.
    shutil.copytree(ROOT / "cassettes", pytester.path / "cassettes")
    shutil.copy(ROOT / "cardprobe-baseline.json", pytester.path / "cardprobe-baseline.json")
    package_before = sorted(p.name for p in SUITES_DIR.rglob("*"))
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--cardprobe-suite", "cards", "--model", "smollm2:135m",
        "-k", "date or table", "--cardprobe-update-baseline",
    )  # fmt: skip
    assert "not recorded" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*gate: updated*"])
    outcomes = result.parseoutcomes()
    # Every probe replayed and was judged; known failures show as xfailed against the baseline.
    judged = ("passed", "failed", "xfailed", "xpassed")
    assert sum(outcomes.get(word, 0) for word in judged) == 2 * 8  # two cases x eight arms
    assert sorted(p.name for p in SUITES_DIR.rglob("*")) == package_before
    # --cardprobe-cassette-dir moves where recordings are looked for: none there, so none replay.
    moved = pytester.runpytest(
        "-p", "no:cacheprovider", "--cardprobe-suite", "cards", "--model", "smollm2:135m",
        "-k", "date and prose and cold", "--cardprobe-cassette-dir", "elsewhere",
    )  # fmt: skip
    moved.stdout.fnmatch_lines(["*not recorded*"])


def test_models_and_no_suite_say_how_to_add_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(conftest="")
    result = pytester.runpytest("--model", "m")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "*no cardprobe suite was collected*`pytest --cardprobe-suite cards`*"
            "`python -m pytest_cardprobe init`*"
        ]
    )


def test_no_models_and_no_suite_stay_quiet(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "cardprobe suite" not in result.stdout.str()


def test_everything_deselected_is_not_reported_as_no_suite(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--cardprobe-suite", "cards", "--model", "m", "-k", "nothing")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "no cardprobe suite was collected" not in result.stdout.str()
