"""A project set up by ``python -m pytest_cardprobe init`` runs under pytest as written."""

from __future__ import annotations

import pytest

from pytest_cardprobe.cli.init import run
from pytest_cardprobe.cli.starter import STARTER_DIR, STARTER_SUITE


def test_a_fresh_starter_is_skipped_until_recorded_and_says_how(
    pytester: pytest.Pytester,
) -> None:
    assert run(pytester.path, ["tiny:1b"], force=False) == 0
    result = pytester.runpytest("-p", "no:cacheprovider")
    # Five card cases x four arms + three call cases: nothing is recorded yet, so a plain
    # `pytest` right after init is not red; one block says how to record them all.
    result.assert_outcomes(skipped=23)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "23 test(s) not recorded yet:",
            f"  23 never recorded — suites {STARTER_SUITE} ({STARTER_DIR}/{STARTER_SUITE}.yaml), *",
            "  record exactly them: pytest -p no:cacheprovider --cardprobe-record-mode once",
        ]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


UNIT = """
def test_unit():
    assert 1 + 1 == 2
"""
FIXTURE = """
def test_asks(cardprobe):
    cardprobe.ask([{"role": "user", "content": "Hi"}], accept=[])
"""


def test_the_marker_splits_probes_from_a_projects_own_tests(pytester: pytest.Pytester) -> None:
    """-m "not cardprobe" runs the project's unit tests only; -m cardprobe the probes only,
    the suite's and a test using the cardprobe fixture."""
    assert run(pytester.path, ["tiny:1b"], force=False) == 0
    pytester.makepyfile(test_unit=UNIT, test_fixture=FIXTURE)
    own = pytester.runpytest("-p", "no:cacheprovider", "-m", "not cardprobe")
    own.assert_outcomes(passed=1, deselected=24)
    own.stdout.fnmatch_lines(["test_unit.py .*"])
    probes = pytester.runpytest("-p", "no:cacheprovider", "-m", "cardprobe", "--co", "-q")
    ids = [line for line in probes.outlines if "::" in line]
    assert len(ids) == 24 and not any("test_unit" in i for i in ids), ids
    assert "test_fixture.py::test_asks" in ids
    markers = pytester.runpytest("-p", "no:cacheprovider", "--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.cardprobe: a cardprobe probe*"])


PYPROJECT = """\
[project]
name = "app"  # our app

[tool.pytest.ini_options]
# the unit tests live in tests/
testpaths = ["tests"]  # keep me
addopts = "-ra"
"""


def test_init_in_a_project_with_testpaths_keeps_its_own_run_green(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "pyproject.toml").write_text(PYPROJECT)
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_unit.py").write_text(UNIT)
    assert run(pytester.path, ["tiny:1b"], force=False) == 0  # no --force needed
    text = (pytester.path / "pyproject.toml").read_text()
    assert text == PYPROJECT + 'cardprobe_models = ["tiny:1b"]\n'  # comments kept
    plain = pytester.runpytest("-p", "no:cacheprovider")
    plain.assert_outcomes(passed=1)  # the project's own run, as before
    probes = pytester.runpytest("-p", "no:cacheprovider", STARTER_DIR)
    probes.assert_outcomes(skipped=23)
