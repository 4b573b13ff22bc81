"""A recording writes ``<cassette dir>/<suite>/@sources.json``; like a cassette, it may be a
link only to a file inside the cassette folder. A link (or a linked suite folder) a clone
brings that leads out of it must not make a recording write outside the project."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_source_snapshot import SOURCE, SUITE, project, reader  # noqa: F401

from pytest_cardprobe.source.snapshot import FILE_NAME, snapshot_path
from pytest_cardprobe.suite.sources import PromptSource, SourceProblem


@pytest.mark.parametrize("linked", ["file", "dangling file", "folder"])
def test_a_snapshot_link_out_of_the_cassette_folder_is_refused_and_not_written(
    project: Path,  # noqa: F811
    linked: str,
) -> None:
    outside = project.parent / f"{project.name}-outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    if linked != "dangling file":
        victim.write_text("mine\n")
    folder = project / "cassettes" / SUITE
    if linked == "folder":
        (project / "cassettes").mkdir()
        folder.symlink_to(outside, target_is_directory=True)
        victim = outside / FILE_NAME
    else:
        folder.mkdir(parents=True)
        (folder / FILE_NAME).symlink_to(victim)
    before = victim.read_text() if victim.exists() else None
    recording = reader(project, recording=True)
    with pytest.raises(SourceProblem, match="outside the cassette folder"):
        recording.tools(SUITE, project / "app.yaml", "tools", SOURCE)
    with pytest.raises(SourceProblem, match="outside the cassette folder"):
        recording.prompt(
            SUITE, project / "app.yaml", "prompts.call", PromptSource("snapapp.tools:SYSTEM")
        )
    assert recording.flush() == []
    assert (victim.read_text() if victim.exists() else None) == before


def test_a_link_inside_the_cassette_folder_still_serves(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    (cassettes / "real").mkdir(parents=True)
    (cassettes / SUITE).symlink_to(cassettes / "real", target_is_directory=True)
    assert snapshot_path(cassettes, SUITE) == cassettes / SUITE / FILE_NAME
