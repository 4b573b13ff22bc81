"""The cassette path check, for every kind of link a cassette may be: it is refused exactly
when the file it would read or write through lies outside the cassette folder."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.wire.cassettes.paths import cassette_path
from pytest_cardprobe.wire.errors import CassetteProblem

# Link targets relative to the cassette's own folder (<root>/s/m/), or absolute ones.
PARTS = st.sampled_from(["..", ".", "x", "y.yaml", "s", "m", "outside", "gone"])


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(
    parts=st.lists(PARTS, min_size=1, max_size=6),
    absolute=st.booleans(),
    exists=st.booleans(),
)
def test_a_linked_cassette_is_refused_exactly_when_its_target_leaves_the_folder(
    parts: list[str], absolute: bool, exists: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root = base / "cassettes"
        folder = root / "s" / "m"
        folder.mkdir(parents=True)
        (base / "outside").mkdir()
        target = Path(os.path.join(base if absolute else folder, *parts))
        if exists and not target.exists() and target.parent.is_dir():
            target.write_text("{}", encoding="utf-8")
        link = folder / "c-prose-cold.yaml"
        link.symlink_to(target)
        inside = Path(os.path.realpath(link)).is_relative_to(os.path.realpath(root))
        try:
            path = cassette_path(root, "s", "m", "c", "prose", "cold")
        except CassetteProblem as exc:
            assert not inside, (target, str(exc))
            assert "outside the cassette folder" in str(exc)
        else:
            assert inside, target
            assert path == link
