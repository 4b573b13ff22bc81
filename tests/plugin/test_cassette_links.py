"""A cassette that is a symbolic link out of the cassette folder is never written (nor read)
through: a recording would otherwise overwrite, or create, a file outside the project."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from replyserver import reply_server

CASSETTE = "cassettes/cards/m/date-prose-cold.yaml"
LIVE = ("--model", "m", "--cardprobe-channel", "prose", "--cardprobe-condition", "cold",
        "--cardprobe-samples", "1", "--cardprobe-no-warmup", "-k", "date")  # fmt: skip


def _run(project: pytest.Pytester, url: str, *args: str) -> tuple[pytest.RunResult, str]:
    result = project.runpytest(
        "-p", "no:cacheprovider", "cases", "--cardprobe-server", url, *LIVE, *args
    )
    return result, result.stdout.str() + result.stderr.str()


def test_live_never_overwrites_a_file_outside_through_a_linked_cassette(
    project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "precious.txt"
    outside.write_text("PRECIOUS\n", encoding="utf-8")
    link = project.path / CASSETTE
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    with reply_server() as server:
        result, out = _run(project, server.url, "--live")
    assert outside.read_text(encoding="utf-8") == "PRECIOUS\n"
    assert link.is_symlink()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert f"is a symbolic link to {outside}, which is outside the cassette folder" in out, out
    assert server.chats == 0  # refused before the server was asked


def test_record_mode_stale_never_creates_a_file_outside_through_a_dangling_link(
    project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    target = outside / "new-folder" / "made.yaml"
    link = project.path / CASSETTE
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    with reply_server() as server:
        result, out = _run(project, server.url, "--cardprobe-record-mode", "stale")
    assert not (outside / "new-folder").exists()
    assert os.listdir(outside) == []
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert "outside the cassette folder" in out, out


def test_a_link_to_a_cassette_inside_the_folder_is_still_recorded_through(
    project: pytest.Pytester,
) -> None:
    real = project.path / "cassettes/cards/m/shared.yaml"
    real.parent.mkdir(parents=True)
    real.write_text("{}", encoding="utf-8")
    link = project.path / CASSETTE
    link.symlink_to("shared.yaml")
    with reply_server() as server:
        result, out = _run(project, server.url, "--live")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), out
    assert link.is_symlink() and '"interactions"' in real.read_text(encoding="utf-8")
    assert "outside the cassette folder" not in out


def test_a_cassette_folder_linked_outside_stays_refused(
    project: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (project.path / "cassettes/cards").mkdir(parents=True)
    (project.path / "cassettes/cards/m").symlink_to(outside, target_is_directory=True)
    with reply_server() as server:
        _, out = _run(project, server.url, "--live")
    assert list(Path(outside).iterdir()) == []
    assert "would leave the cassette folder" in out, out
