"""Walk one replayed probe and count the module boundaries it crosses (issue 34).

``python bench/probe_walk.py [-k EXPR] [--entry MODULE:QUALNAME] [--json]``, from anywhere
(it runs from the repository root). It runs
``pytest cases -p no:cacheprovider -n 0 -k EXPR -q`` in this process (``pytest.main``), so
the probe is driven exactly as the plugin drives it in replay, and installs a
``sys.setprofile`` function around each test's run protocol. The profile function stays idle
until the **entry point** is called: ``--entry``, a function named ``module:qualname``
(default ``pytest_cardprobe.run.runtime:Runtime.run``, the function that asks one probe
today; after a redesign, name its successor, e.g. ``pytest_cardprobe.run.ask:ask_probe``).
Everything from that call until it returns is walked; the call into the entry and its return
are not counted. ``-k`` must select tests that enter the entry exactly once, or the script
stops (default: ``cards and date and tool and cold``, the test
``cases/cards.yaml::date[smollm2:135m-tool-cold]``, a card probe on the tool channel: two
samples, each judged).

Definitions (the same before and after a redesign):

- A **package frame** is a frame running a function of ``pytest_cardprobe``: its globals'
  ``__name__`` is the package or one of its modules (so a lambda or a closure belongs to the
  module that defined it, a dataclass's generated ``__init__`` to the module of the class),
  and it is not a module body. Frames of pytest, pluggy, vcrpy, httpx, the standard library
  and the rest are **foreign**: not counted, but walked through.
- The **anchor** of an event is the nearest package frame below the frame in question on the
  stack (for a call, below the called frame; for a return, below the returning frame: the
  package frame control goes back to), found by walking ``f_back`` through foreign frames.
  A chain that runs through a module body before reaching a package frame is an import
  (``import`` inside a function, a dataclass being built): its events are not counted.
- A **move** is a ``call`` or ``return`` profile event of a package frame whose module is not
  its anchor's module: a call from ``wire/client.py`` that reaches ``run/runtime.py`` through
  vcrpy and httpx is one move, as is the return that comes back to it. A generator's resume
  is a call and its ``yield`` a return, as the profiler reports them; C functions are not
  frames and are not counted.
- A **climb** is a move on a call (returns are not counted) from a module of part A to a
  module of part B where B is neither A nor a leaf, and the layout rules do not let A import
  B: the call runs against the import arrows (``wire/`` calling back into ``run/``, ``run/``
  into ``glue/``, ``glue/`` into the pytest entry point ``plugin.py``), so it arrived through
  an object or a closure handed down from above. Parts, leaves and the rules are
  ``stage_of`` and ``ALLOWED`` of ``tests/unit/test_layout.py``, read from that file (the one
  statement of docs/design.md §4's rules), so the count follows the rules as they change. A
  call sideways between parts that may not import each other (``wire/`` into ``suite/``)
  counts as a climb too: it is just as much a jump through a handed-down object.
- The **first-level walk** is the module of every package function the entry itself calls
  (its anchor is the entry's frame: directly, or through foreign code such as ``contextlib``
  running a context manager), in order, with runs of the same module collapsed to one:
  the road the entry takes, one stop per file.
- An **edge** is an ordered pair of modules with the calls from the first to the second and
  the returns from the second back to the first; a ``*`` marks an edge whose calls climb.

Determinism: the walk is re-run by the same command on the same tree with the same figures.
The script re-executes itself with ``PYTHONHASHSEED=0`` when no seed is set (set iteration
order could otherwise change the order of calls), and the cyclic garbage collector is off
while a test runs (a finaliser could otherwise run package code at a moment that depends on
memory). Caches filled before the test (collection, configure) are what a replay has too.

Figures on main before the redesign (commit c0d9ba8, 2026-12-02, AMD EPYC, 2 cores, Linux
6.18, CPython 3.11.7, pytest 9.2.0, vcrpy 9.4.2, httpx 0.29.0), with the default ``-k`` and
entry: see BENCHMARKS.md, "Walking one probe".
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import inspect
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Generator, Mapping, Sequence
from pathlib import Path
from types import CodeType, FrameType, ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "pytest_cardprobe"
DEFAULT_ENTRY = "pytest_cardprobe.run.runtime:Runtime.run"
DEFAULT_SELECT = "cards and date and tool and cold"
#: Returned by the anchor search when the chain runs through a module body (an import).
_IMPORT = object()


def layout_rules(path: Path = REPO / "tests" / "unit" / "test_layout.py") -> ModuleType:
    """The layout test module, for its ``stage_of`` and ``ALLOWED``."""
    spec = importlib.util.spec_from_file_location("_cardprobe_layout_rules", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot read the layout rules from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resolve_entry(name: str) -> CodeType:
    """The code object of ``module:qualname`` (decorators unwrapped); ValueError if none."""
    module_name, sep, qualname = name.partition(":")
    if not sep or not module_name or not qualname:
        raise ValueError(f"--entry {name!r}: write it as module:qualname")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"--entry {name!r}: {exc}") from None
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ValueError(f"--entry {name!r}: {module_name} has no {qualname}") from None
    target = inspect.unwrap(getattr(target, "__func__", target))
    code = getattr(target, "__code__", None)
    if not isinstance(code, CodeType):
        raise ValueError(f"--entry {name!r} is not a Python function")
    return code


class Walk:
    """The profile function and its counts (definitions in the module docstring)."""

    def __init__(
        self,
        entry: CodeType | None,
        part_of: Callable[[str], str],
        allowed: Mapping[str, set[str]],
        package: str = PACKAGE,
    ) -> None:
        self.entry = entry
        self.part_of = part_of
        self.allowed = allowed
        self.package = package
        self.calls: Counter[tuple[str, str]] = Counter()
        self.returns: Counter[tuple[str, str]] = Counter()
        self.first_level: list[str] = []
        self.entered = 0
        self.tests: list[str] = []  # the test running when the entry was entered
        self.current_test = ""
        self._entry_frame: FrameType | None = None

    def module_of(self, frame: FrameType) -> str | None:
        """The package module ``frame`` runs a function of, or None for a foreign frame."""
        name = frame.f_globals.get("__name__")
        if not isinstance(name, str) or frame.f_code.co_name == "<module>":
            return None
        if name == self.package or name.startswith(self.package + "."):
            return name
        return None

    def anchor(self, frame: FrameType | None) -> FrameType | object | None:
        """The nearest package frame from ``frame`` down, _IMPORT inside an import."""
        while frame is not None:
            if frame.f_code.co_name == "<module>":
                return _IMPORT
            if self.module_of(frame) is not None:
                return frame
            frame = frame.f_back
        return None

    def profile(self, frame: FrameType, event: str, arg: object) -> None:
        if event != "call" and event != "return":
            return  # c_call, c_return, c_exception: C functions are not frames
        if self._entry_frame is None:
            if event == "call" and frame.f_code is self.entry:
                self._entry_frame = frame
                self.entered += 1
                self.tests.append(self.current_test)
            return
        if frame is self._entry_frame:
            if event == "return":
                self._entry_frame = None
            return
        module = self.module_of(frame)
        if module is None:
            return
        below = self.anchor(frame.f_back)
        if not isinstance(below, FrameType):
            return  # an import, or outside the walk
        other = below.f_globals["__name__"]
        if event == "call":
            if below is self._entry_frame and self.first_level[-1:] != [module]:
                self.first_level.append(module)
            if other != module:
                self.calls[(other, module)] += 1
        elif other != module:
            self.returns[(other, module)] += 1  # keyed by the call edge it returns along

    def climbs_on(self, caller: str, callee: str) -> bool:
        """Whether a call from ``caller`` to ``callee`` runs against the import rules."""
        source, dest = self.part_of(caller), self.part_of(callee)
        if dest == source or dest == "leaf":
            return False
        return dest not in self.allowed[source]

    def figures(self) -> dict[str, Any]:
        short = self.short
        edges = sorted(set(self.calls) | set(self.returns))
        return {
            "tests": self.tests,
            "entered": self.entered,
            "moves": sum(self.calls.values()) + sum(self.returns.values()),
            "calls": sum(self.calls.values()),
            "returns": sum(self.returns.values()),
            "climbs": sum(n for edge, n in self.calls.items() if self.climbs_on(*edge)),
            "edges": [
                {
                    "from": short(a),
                    "to": short(b),
                    "calls": self.calls[(a, b)],
                    "returns": self.returns[(a, b)],
                    "climb": self.climbs_on(a, b),
                }
                for a, b in edges
            ],
            "first_level": [short(m) for m in self.first_level],
        }

    def short(self, module: str) -> str:
        return module.removeprefix(self.package + ".")


class Profiling:
    """A pytest plugin that finds the entry once the plugin is loaded (as pytest loads it, so
    nothing of the package is imported early) and lends ``walk.profile`` to each test's run
    protocol."""

    def __init__(self, walk: Walk, entry: str) -> None:
        self.walk = walk
        self.entry = entry

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self) -> None:
        try:
            self.walk.entry = resolve_entry(self.entry)
        except ValueError as exc:
            pytest.exit(str(exc), returncode=2)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        self.walk.current_test = item.nodeid
        gc.collect()
        gc.disable()
        sys.setprofile(self.walk.profile)
        try:
            return (yield)
        finally:
            sys.setprofile(None)
            gc.enable()


def render(figures: Mapping[str, Any], entry: str, select: str) -> str:
    lines = [
        f"probe: {', '.join(figures['tests'])} (-k {select!r}; entry {entry})",
        f"moves: {figures['moves']} ({figures['calls']} calls, {figures['returns']} returns)",
        f"climbs: {figures['climbs']}",
        "edges (calls from -> to, returns back; * the calls climb):",
    ]
    width = max((len(e["from"]) for e in figures["edges"]), default=0)
    for e in figures["edges"]:
        mark = "*" if e["climb"] else " "
        lines.append(
            f"  {mark} {e['from']:<{width}} -> {e['to']}: {e['calls']} calls, "
            f"{e['returns']} returns"
        )
    walk = figures["first_level"]
    lines.append(f"first-level walk ({len(walk)} stops):")
    lines.append("  " + " > ".join(walk))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="select", default=DEFAULT_SELECT, help="pytest -k expression")
    parser.add_argument(
        "--entry",
        default=DEFAULT_ENTRY,
        help=f"the function that asks one probe, module:qualname (default {DEFAULT_ENTRY})",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if "PYTHONHASHSEED" not in os.environ:
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        script = str(Path(__file__).resolve())
        os.execve(sys.executable, [sys.executable, script, *sys.argv[1:]], env)
    os.chdir(REPO)
    rules = layout_rules()
    walk = Walk(None, rules.stage_of, rules.ALLOWED)
    command = ["cases", "-p", "no:cacheprovider", "-n", "0", "-k", args.select, "-q"]
    status = pytest.main(command, plugins=[Profiling(walk, args.entry)])
    if walk.entry is None:
        return int(status) or 2  # pytest said why (the entry not found, or a usage error)
    if walk.entered != 1:
        print(
            f"-k {args.select!r} entered {args.entry} {walk.entered} times (tests: "
            f"{walk.tests}); select one probe",
            file=sys.stderr,
        )
        return 2
    figures = walk.figures()
    figures["pytest_status"] = int(status)
    figures["package"] = str(Path(sys.modules[PACKAGE].__file__ or "?").parent)
    figures["hash_seed"] = os.environ["PYTHONHASHSEED"]
    print()
    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        print(render(figures, args.entry, args.select))
        print(
            f"(pytest exit status {int(status)}; package {figures['package']}; "
            f"PYTHONHASHSEED={figures['hash_seed']})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
