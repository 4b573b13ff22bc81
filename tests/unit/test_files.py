"""Atomic writes give files the mode a user expects: the umask's for a new file, the old one's
for a file that existed (and its owner, where the process may set it)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_cardprobe.files import write_atomically


@pytest.fixture
def umask() -> Iterator[Callable[[int], int]]:
    """Sets the process umask for the test; the old one comes back afterwards."""
    old = os.umask(0o022)
    os.umask(old)
    yield os.umask
    os.umask(old)


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


@pytest.mark.parametrize(("mask", "wanted"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_a_new_file_gets_the_mode_the_umask_gives(
    tmp_path: Path, umask: Callable[[int], int], mask: int, wanted: int
) -> None:
    umask(mask)
    target = tmp_path / "deep" / "report.json"
    write_atomically(target, "{}\n")
    assert mode(target) == wanted
    assert target.read_text() == "{}\n"


@pytest.mark.parametrize(("mask", "existing"), [(0o022, 0o664), (0o002, 0o644), (0o022, 0o600)])
def test_an_existing_file_keeps_its_mode_whatever_the_umask(
    tmp_path: Path, umask: Callable[[int], int], mask: int, existing: int
) -> None:
    target = tmp_path / "cardprobe-baseline.json"
    target.write_text("old\n")
    target.chmod(existing)
    umask(mask)
    write_atomically(target, "new\n")
    assert mode(target) == existing
    assert target.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary left


def test_text_is_written_as_given_line_ends_included(tmp_path: Path) -> None:
    target = tmp_path / "pytest.ini"
    write_atomically(target, "\ufeff[pytest]\r\nx = 1\r\n")
    assert target.read_bytes() == b"\xef\xbb\xbf[pytest]\r\nx = 1\r\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may give a file to another user")
def test_an_existing_file_keeps_its_owner(tmp_path: Path) -> None:
    target = tmp_path / "cassette.yaml"
    target.write_text("old\n")
    os.chown(target, 4242, 4343)
    write_atomically(target, "new\n")
    info = target.stat()
    assert (info.st_uid, info.st_gid) == (4242, 4343)


def test_a_symbolic_link_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    """A config or baseline kept elsewhere and linked in stays linked (found by review)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    target = shared / "pytest.ini"
    target.write_text("[pytest]\n")
    target.chmod(0o664)
    link = tmp_path / "pytest.ini"
    link.symlink_to("shared/pytest.ini")
    write_atomically(link, "[pytest]\naddopts = -q\n")
    assert link.is_symlink()
    assert target.read_text() == "[pytest]\naddopts = -q\n"
    assert (target.stat().st_mode & 0o777) == 0o664
