"""Write drafted suites: ``NAME.yaml`` beside ``tools/NAME.json`` and ``prompts/NAME.md``.

Each suite is first written to a temporary folder laid out as the real one and loaded by the
suite loader (``suite/loader.py``); only a suite that loads is written, every file
atomically, so what lands is a suite that collects as it is. Files that exist already are
left alone unless ``force`` says to replace them. A second, third... tool set is written as
``NAME-2.yaml`` with ``tools/NAME-2.json``, and so on.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pytest_cardprobe.draft.plan import DraftCase, DraftSuite
from pytest_cardprobe.files import inside, shown, write_atomically
from pytest_cardprobe.suite.loader import SuiteError, load_suite

HEADER = """\
# Drafted by `python -m pytest_cardprobe draft` from {exchanges} recorded exchange(s)
# ({where}).
# Every case is marked `reviewed: false`: its expectation is what the model did when the
# traffic was recorded, not yet what it should do. Check each one, correct it, then set
# `reviewed: true`; until then the case is reported apart, kept out of the gate and out of
# --cardprobe-update-baseline (--cardprobe-strict-review fails it).
# The prompts below are your users' real ones, which may be personal data: edit or remove
# what must not be committed.
"""


# libyaml's emitter when PyYAML has it (as the suite loader uses its parser): the same YAML.
_SafeDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_SafeDumper):  # type: ignore[misc]
    """Block style for text with line breaks; never an anchor or alias (suites refuse them)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and value == value.strip(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump(value: Any) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


class WriteProblem(Exception):
    """A suite that cannot be written (a file exists, the draft does not load)."""


@dataclass(frozen=True)
class Layout:
    """Where one drafted suite and its files go."""

    suite: Path
    tools: Path
    prompt: Path

    @classmethod
    def of(cls, out: Path, number: int) -> Layout:
        stem = out.stem if number == 1 else f"{out.stem}-{number}"
        return cls(
            out.with_name(stem + out.suffix),
            out.parent / "tools" / f"{stem}.json",
            out.parent / "prompts" / f"{stem}.md",
        )

    def relative(self, path: Path) -> str:
        return path.relative_to(self.suite.parent).as_posix()


def _case(case: DraftCase) -> dict[str, Any]:
    data: dict[str, Any] = {"id": case.id, "reviewed": False}
    if case.conversation:
        data["conversation"] = case.conversation
    data["prompt"] = case.prompt
    if case.expect is not None:
        data["expect"] = case.expect
    if case.results:
        data["results"] = case.results
    if case.max_turns is not None:
        data["max_turns"] = case.max_turns
    return data


def _comment(case: DraftCase) -> str:
    asked = f" (asked {len(case.sources)} times)" if len(case.sources) > 1 else ""
    text = f"from {case.sources[0]}{asked}: {case.did}"
    return "".join(f"  # {line}\n" for line in text.replace("\r", " ").splitlines())


def suite_text(draft: DraftSuite, layout: Layout) -> str:
    """The suite file of ``draft``: a commented header, the suite keys, the cases."""
    apis = ", ".join(f"{api}: {n}" for api, n in draft.apis.most_common())
    models = ", ".join(draft.models)
    where = f"{apis}; model(s) {models}".replace("\n", " ")
    head: dict[str, Any] = {"cardprobe": 1, "name": layout.suite.stem, "judge": "call"}
    head["conditions"] = ["cold"]
    if draft.system is not None:
        head["prompts"] = {"call": layout.relative(layout.prompt)}
    head["tools"] = layout.relative(layout.tools)
    if draft.options:
        head["options"] = draft.options
    think = {True: "on", False: "off"}.get(draft.think, draft.think)
    if think in ("off", "on", "low", "medium", "high"):
        head["think"] = think
    cases = "".join(
        _comment(c) + "".join(f"  {line}\n" for line in dump([_case(c)]).splitlines())
        for c in draft.cases
    )
    return HEADER.format(exchanges=draft.exchanges, where=where) + dump(head) + "cases:\n" + cases


def _files(draft: DraftSuite, layout: Layout) -> dict[Path, str]:
    files = {layout.tools: json.dumps(draft.tools, indent=2, ensure_ascii=False) + "\n"}
    if draft.system is not None:
        files[layout.prompt] = draft.system
    files[layout.suite] = suite_text(draft, layout)
    return files


def check(files: dict[Path, str], layout: Layout) -> None:
    """Load the suite from a temporary copy laid out as the real one; WriteProblem if not."""
    with tempfile.TemporaryDirectory(prefix="cardprobe-draft-") as folder:
        root = Path(folder)
        for path, text in files.items():
            copy = root / path.relative_to(layout.suite.parent)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_text(text, encoding="utf-8")
        try:
            load_suite(root / layout.suite.name)
        except SuiteError as exc:
            problem = str(exc).replace(str(root) + "/", "")
            raise WriteProblem(
                f"the draft of {shown(layout.suite)} does not load: {problem}"
            ) from None


def write_suites(
    drafts: Sequence[DraftSuite], out: Path, force: bool
) -> list[tuple[Path, str | None]]:
    """Write each draft; (suite path, None) when written, (suite path, why not) otherwise."""
    done: list[tuple[Path, str | None]] = []
    for number, draft in enumerate(drafts, start=1):
        layout = Layout.of(out, number)
        files = _files(draft, layout)
        existing = [p for p in files if p.exists() or p.is_symlink()]
        try:
            outside = [p for p in files if not inside(p.parent, [out.parent])]
            if outside:
                raise WriteProblem(
                    f"{shown(outside[0].parent)} leads outside {shown(out.parent)} (a symbolic "
                    "link); nothing is written there"
                )
            if existing and not force:
                names = ", ".join(shown(p) for p in existing)
                raise WriteProblem(
                    f"{names} exist(s); give another --out, or --force to replace them "
                    "(a review made in them would be lost)"
                )
            check(files, layout)
            for path, text in files.items():
                if path.is_symlink():
                    path.unlink()  # replace the link itself, never the file it points at
                write_atomically(path, text)
        except WriteProblem as exc:
            done.append((layout.suite, str(exc)))
            continue
        except OSError as exc:
            done.append((layout.suite, f"cannot write it: {exc.strerror or exc}"))
            continue
        done.append((layout.suite, None))
    return done
