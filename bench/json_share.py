"""Count what JSON and the suite schema cost a replay, piece by piece
(``python bench/json_share.py``; see BENCHMARKS.md, "Session 9: where the rest is").

``bench/instructions.py`` counts whole runs; this counts the pieces of a replay that are not
the plugin's own Python but library work it asks for: writing each request's JSON (the text
replay matches a recording by), parsing each cassette file, importing jsonschema, and loading
the shipped suites (which validates them with it). Each piece runs in a child process under
valgrind's callgrind (``Ir``, ``PYTHONHASHSEED=0``) over the repository's own recordings;
every child first imports the plugin (as every pytest run with it installed does), reads every
cassette and parses it and its recorded request bodies, and the piece's cost is its count
minus that of a child that does only this (``read``). Each child runs in the environment of
``bench/replay.py``'s runs, with a bytecode cache of its own that an uncounted run of the
piece fills first. Needs ``valgrind`` (Debian: ``apt-get install valgrind``); about three
minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import replay  # noqa: E402  (one environment for every counted or timed run)

REPO = BENCH.parent

# name: (what it does, what one item is, or "" for a cost paid once per run)
PIECES = {
    "read": ("read and parse every shipped cassette and its request bodies (the floor)", ""),
    "write": ("write each recorded request's JSON as the client does (json_body)", "request"),
    "parse": ("parse each cassette file's JSON again (as the cassette reader does)", "cassette"),
    "jsonschema": ("import jsonschema's validators", ""),
    "suites": ("import jsonschema and load both shipped suites (validated by it)", ""),
}


def recordings(root: Path = REPO) -> tuple[list[str], list[Any]]:
    """The text of every shipped cassette and every recorded request body, parsed."""
    texts = [p.read_text(encoding="utf-8") for p in sorted((root / "cassettes").rglob("*.yaml"))]
    bodies = [
        json.loads(i["request"]["body"]) for t in texts for i in json.loads(t)["interactions"]
    ]
    return texts, bodies


def run_piece(name: str, root: Path = REPO) -> int:
    """Do one piece in this process; returns how many items it did."""
    import pytest_cardprobe.plugin  # noqa: F401  (what a bare pytest run loads too)
    from pytest_cardprobe.wire.body import json_body

    texts, bodies = recordings(root)
    if name == "write":
        for body in bodies:
            json_body(body)
        return len(bodies)
    if name == "parse":
        for text in texts:
            json.loads(text)
        return len(texts)
    if name == "jsonschema":
        import jsonschema.validators  # noqa: F401
    elif name == "suites":
        from pytest_cardprobe.suite.loader import load_suite

        for suite in ("cards.yaml", "tools.yaml"):
            load_suite(root / "cases" / suite)
    return 1


def counted(name: str, valgrind: str, env: dict[str, str]) -> tuple[int, int]:
    """(instructions, items) of one piece's child process under callgrind."""
    child = [sys.executable, __file__, "--piece", name]
    for cmd in (child, [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *child]):
        # First uncounted, which fills the bytecode cache; then counted.
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(f"{name}: the piece failed:\n{proc.stderr[-2000:]}")
    found = re.search(r"Collected : (\d+)", proc.stderr)
    items = re.search(r"^items (\d+)$", proc.stdout, re.MULTILINE)
    if found is None or items is None:
        raise SystemExit(f"{name}: no count in callgrind's output:\n{proc.stderr[-2000:]}")
    return int(found.group(1)), int(items.group(1))


def report(found: dict[str, tuple[int, int]]) -> str:
    """The counts as Markdown: each piece above the floor, and per item where it has items."""
    floor = found["read"][0]
    lines = [
        "| piece | what | Ir | above `read` | per item |",
        "|---|---|---:|---:|---:|",
    ]
    for name, (ir, items) in found.items():
        what, item = PIECES[name]
        above = "—" if name == "read" else f"{(ir - floor) / 1e6:,.1f} M"
        each = f"{(ir - floor) / items / 1e3:,.0f} k per {item} ({items})" if item else "—"
        lines.append(f"| {name} | {what} | {ir:,} | {above} | {each} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--piece", choices=PIECES, help="do one piece here (what is counted)")
    args = parser.parse_args(argv)
    if args.piece:
        print(f"items {run_piece(args.piece)}")
        return 0
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="cardprobe-json-share-") as root:
        # The environment of bench/replay.py's runs (its own bytecode cache), hash seed fixed.
        env = {**replay.bench_env(Path(root)), "PYTHONHASHSEED": "0"}
        print(report({name: counted(name, valgrind, env) for name in PIECES}), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
