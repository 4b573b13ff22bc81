"""The counter of ``bench/probe_walk.py`` on a tiny package whose walk is known by hand.

The package ``walkpkg`` has the stage folders of the real one (``run``, ``wire``) and a leaf
(``types``); ``walkpkg.run.ask.entry`` calls into the wire, which calls back into ``run``
through a module outside the package, iterates a generator of the wire, triggers an import
whose module body calls the package, and builds a leaf record.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from bench_scripts import load_bench  # tests/ is on sys.path (rootdir-relative)

ROOT = Path(__file__).resolve().parents[2]

FILES = {
    "walkpkg/__init__.py": "",
    "walkpkg/types.py": "def record(x):\n    return x\n",
    "walkpkg/run/__init__.py": "",
    "walkpkg/run/ask.py": """
        from walkpkg import types
        from walkpkg.wire import client

        def entry():
            helper()  # the same module: no move
            got = client.send(back)  # wire calls back() through foreign_relay: a climb
            for _ in client.chunks():  # three resumes, three returns
                pass
            client.lazy()  # the import it makes is not counted
            return types.record(got)  # down into a leaf

        def helper():
            return 1

        def back(x):
            return x + 1
    """,
    "walkpkg/wire/__init__.py": "",
    "walkpkg/wire/client.py": """
        import foreign_relay

        def send(callback):
            return foreign_relay.relay(callback, 1)

        def chunks():
            yield 1
            yield 2

        def lazy():
            import walkpkg.wire.late
            return walkpkg.wire.late.VALUE
    """,
    "walkpkg/wire/late.py": """
        from walkpkg import types

        VALUE = types.record(0)
    """,
    "foreign_relay.py": "def relay(f, x):\n    return f(x)\n",
}


@pytest.fixture
def walkpkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        yield importlib.import_module("walkpkg.run.ask")
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] in ("walkpkg", "foreign_relay")]:
            del sys.modules[name]


def test_the_walk_counts_moves_climbs_and_the_first_level_road(walkpkg: ModuleType) -> None:
    bench = load_bench("probe_walk")
    rules = bench.layout_rules()
    walk = bench.Walk(walkpkg.entry.__code__, rules.stage_of, rules.ALLOWED, package="walkpkg")
    sys.setprofile(walk.profile)
    try:
        assert walkpkg.entry() == 2
    finally:
        sys.setprofile(None)
    figures = walk.figures()
    assert figures["entered"] == 1
    assert figures["edges"] == [
        {"from": "run.ask", "to": "types", "calls": 1, "returns": 1, "climb": False},
        # send, lazy, and chunks resumed three times (the last ends the loop)
        {"from": "run.ask", "to": "wire.client", "calls": 5, "returns": 5, "climb": False},
        {"from": "wire.client", "to": "run.ask", "calls": 1, "returns": 1, "climb": True},
    ]
    assert (figures["moves"], figures["calls"], figures["climbs"]) == (14, 7, 1)
    assert figures["first_level"] == ["run.ask", "wire.client", "types"]


def test_a_call_against_the_import_rules_climbs() -> None:
    bench = load_bench("probe_walk")
    rules = bench.layout_rules()
    walk = bench.Walk(None, rules.stage_of, rules.ALLOWED)
    climbs = {
        (a, b): walk.climbs_on(f"pytest_cardprobe.{a}", f"pytest_cardprobe.{b}")
        for a, b in [
            ("wire.client", "run.runtime"),
            ("run.runtime", "glue.state"),
            ("glue.state", "plugin"),
            ("wire.client", "suite.records"),
            ("run.runtime", "wire.client"),
            ("glue.items", "run.runtime"),
            ("wire.client", "types"),
            ("wire.client", "wire.body"),
        ]
    }
    assert [pair for pair, up in climbs.items() if up] == [
        ("wire.client", "run.runtime"),
        ("run.runtime", "glue.state"),
        ("glue.state", "plugin"),
        ("wire.client", "suite.records"),
    ]
