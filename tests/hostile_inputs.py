"""Builders of hostile inputs: each makes one bad file (or one bad edit of a shipped file) in
a project folder, for the end-to-end rows of ``tests/plugin/test_hostile.py`` and the rows of
the unit tests of the readers that refuse them (``tests/unit/test_cassette_reading.py``,
``tests/unit/test_baseline_reading.py``), so that a row moved between the two keeps its input.

An arranger takes the project's root; paths are relative to it, and a project is a copy of
the shipped suites (``cases/``), cassettes (``cassettes/``) and ``cardprobe-baseline.json``,
or the part of them a row edits.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
MODEL_DIR = "cassettes/cards/smollm2%3A135m"
BASELINE = "cardprobe-baseline.json"

Arrange = Callable[[Path], Any]


@dataclass(frozen=True)
class Refused:
    """One bad file that one reader refuses: how to make it, and the parts of the reader's
    message that the user must see (the end-to-end rows add how pytest is run and ends)."""

    id: str
    arrange: Arrange
    said: tuple[str, ...]


def edit(path: str, old: str, new: str) -> Arrange:
    """Replace ``old`` (which must be there) by ``new`` in a project file."""

    def arrange(root: Path) -> None:
        file = root / path
        text = file.read_text(encoding="utf-8")
        assert old in text, (path, old)
        file.write_text(text.replace(old, new, 1), encoding="utf-8")

    return arrange


def suite(old: str, new: str) -> Arrange:
    return edit("cases/cards.yaml", old, new)


def write(path: str, data: bytes | str) -> Arrange:
    def arrange(root: Path) -> None:
        file = root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)

    return arrange


def both(*steps: Arrange) -> Arrange:
    def arrange(root: Path) -> None:
        for step in steps:
            step(root)

    return arrange


def prompt_path(value: str) -> Arrange:
    return suite("prose: prompts/prose.md", f"prose: {json.dumps(value)}")


def replace_prompt(make: Callable[[Path], None]) -> Arrange:
    """Turn ``cases/prompts/prose.md`` into something else."""

    def arrange(root: Path) -> None:
        target = root / "cases" / "prompts" / "prose.md"
        target.unlink()
        make(target)

    return arrange


def symlink(to: str) -> Callable[[Path], None]:
    return lambda target: target.symlink_to(to)


def cassette_file(case: str = "date", channel: str = "prose", cond: str = "cold") -> str:
    return f"{MODEL_DIR}/{case}-{channel}-{cond}.yaml"


def cassette(change: Callable[[dict[str, Any]], None], name: str | None = None) -> Arrange:
    """Edit the loaded cassette document and write it back as YAML."""

    def arrange(root: Path) -> None:
        path = root / (name or cassette_file())
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        change(data)
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")

    return arrange


def reply(change: Callable[[dict[str, Any]], Any], name: str | None = None) -> Arrange:
    """Edit the first recorded reply body (parsed JSON); a returned value replaces it."""

    def body(data: dict[str, Any]) -> None:
        response = data["interactions"][0]["response"]
        parsed = json.loads(response["body"]["string"])
        replaced = change(parsed)
        response["body"]["string"] = json.dumps(parsed if replaced is None else replaced)

    return cassette(body, name)


def reply_text(old: str, new: str, name: str | None = None) -> Arrange:
    """Edit the first recorded reply body as text (for what json.dumps cannot write)."""

    def change(data: dict[str, Any]) -> None:
        body = data["interactions"][0]["response"]["body"]
        assert old in body["string"], old
        body["string"] = body["string"].replace(old, new, 1)

    return cassette(change, name)


def set_in(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        for key in path[:-1]:
            doc = doc[key]
        doc[path[-1]] = value

    return change


def drop(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda doc: doc.pop(key)


def response_field(key: str, value: Any) -> Arrange:
    def change(data: dict[str, Any]) -> None:
        data["interactions"][0]["response"][key] = value

    return cassette(change)


def baseline(change: Callable[[dict[str, Any]], Any]) -> Arrange:
    def arrange(root: Path) -> None:
        path = root / BASELINE
        data = json.loads(path.read_text())
        replaced = change(data)
        path.write_text(json.dumps(data if replaced is None else replaced))

    return arrange


ARM = "cards/smollm2:135m/prose/cold"


def arm(change: Callable[[dict[str, Any]], None]) -> Arrange:
    return baseline(lambda data: change(data["arms"][ARM]))


def ini(*lines: str) -> Arrange:
    return write("pytest.ini", "[pytest]\ncardprobe_models = smollm2:135m\n" + "\n".join(lines))


def mkdir(path: str) -> Arrange:
    return lambda root: (root / path).mkdir(parents=True, exist_ok=True)


def fifo(path: str) -> Arrange:
    return lambda root: os.mkfifo(root / path)


def second_suite(name_line: str) -> Arrange:
    """A second suite file, a copy of the shipped one with its name line replaced."""

    def arrange(root: Path) -> None:
        text = (root / "cases" / "cards.yaml").read_text()
        (root / "cases" / "other.yaml").write_text(text.replace("name: cards", name_line))

    return arrange


def deep(n: int) -> str:
    return "[" * n + "]" * n


BIG = 11 * 1024 * 1024
UTF16 = codecs.BOM_UTF16_LE + "cardprobe: 1\nname: x\n".encode("utf-16-le")
