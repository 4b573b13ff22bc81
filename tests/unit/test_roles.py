"""Which part of a run a process plays (``glue/roles.py``), asked in one place: the entry
point and the glue never test ``workerinput`` inline nor reach into the state's private
fields."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_cardprobe.glue.roles import is_controller, is_worker

SRC = Path(__file__).resolve().parents[2] / "src" / "pytest_cardprobe"


def config(dist: str | None, worker: bool) -> Any:
    option = SimpleNamespace() if dist is None else SimpleNamespace(dist=dist)
    made = SimpleNamespace(option=option)
    if worker:
        made.workerinput = {"workerid": "gw0"}
    return made


@pytest.mark.parametrize(
    ("dist", "worker", "roles"),
    [
        (None, False, (False, False)),  # no xdist installed
        ("no", False, (False, False)),  # xdist installed, not used
        ("load", False, (False, True)),
        ("load", True, (True, False)),
    ],
)
def test_roles(dist: str | None, worker: bool, roles: tuple[bool, bool]) -> None:
    made = config(dist, worker)
    assert (is_worker(made), is_controller(made)) == roles


@pytest.mark.parametrize("path", [SRC / "plugin.py", *sorted((SRC / "glue").glob("*.py"))])
def test_no_inline_role_check_nor_reach_into_the_state(path: Path) -> None:
    text = path.read_text("utf-8")
    if path.name != "roles.py":
        assert 'hasattr(config, "workerinput")' not in text
    assert not re.search(r"\bstate\._[a-z]", text)
