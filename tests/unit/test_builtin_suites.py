"""Built-in suites: the package's ``suites`` folder is the repository's ``cases/``, one source."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cardprobe.suite.builtin import (
    BUILTIN_SUITES,
    SUITES_DIR,
    UnknownSuite,
    builtin_suite_path,
    describe_builtin,
)
from pytest_cardprobe.suite.loader import load_suite

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "cases"


def files_under(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_package_suites_folder_is_a_link_to_cases() -> None:
    # One source of truth: the package folder points at cases/, it is not a second copy.
    assert SUITES_DIR.is_symlink(), f"{SUITES_DIR} should be a symbolic link to cases/"
    assert SUITES_DIR.resolve() == CASES.resolve()


def test_package_suites_hold_exactly_what_cases_holds() -> None:
    packaged, source = files_under(SUITES_DIR), files_under(CASES)
    assert packaged.keys() == source.keys()
    drifted = [name for name in source if packaged[name] != source[name]]
    assert not drifted, f"package copy differs from cases/ in {drifted}"


@pytest.mark.parametrize("name", sorted(BUILTIN_SUITES))
def test_every_builtin_suite_loads_under_its_own_name(name: str) -> None:
    suite = load_suite(builtin_suite_path(name), known_judges=("card", "call"))
    # The name picks the cassette folder; a suite offered as "cards" must record as "cards".
    assert suite.name == name
    assert describe_builtin(name, ("card", "call")).startswith(f"{name}  {len(suite.cases)} cases")


def test_unknown_builtin_suite_names_the_known_ones() -> None:
    with pytest.raises(UnknownSuite, match=r"unknown built-in suite 'nope'; known: cards"):
        builtin_suite_path("nope")
