"""What ``cardprobe.ask`` returns (``Asked``) and how the fixture reads in a failure report."""

from __future__ import annotations

from typing import Any

from pytest_cardprobe.glue.fixture import Asked, Cardprobe
from pytest_cardprobe.types import FailureClass, SampleRecord, Verdict

# A tool name and an argument a model chose: an ANSI screen clear and a bidi override.
HOSTILE = 'unknown_tool got evil\x1b[2J\u202e; $.city got "\x1b[31mParis"'


def asked(label: str) -> Asked:
    verdict = Verdict(passed=False, label=label, failure=FailureClass.UNKNOWN_TOOL)
    record = SampleRecord(index=0, route="tool_calls", passed=False, label=label, failure="x")
    return Asked(None, "tool_calls", verdict, record)


def test_the_label_a_test_shows_has_the_models_control_characters_escaped() -> None:
    # `assert asked.passed, asked.label` prints the label as it is: raw model text there
    # would clear or reorder the reader's terminal. The verdict keeps the judge's own text.
    shown = asked(HOSTILE).label
    assert "\x1b" not in shown and "\u202e" not in shown
    assert shown == 'unknown_tool got evil\\x1b[2J\\u202e; $.city got "\\x1b[31mParis"'
    assert asked(HOSTILE).verdict.label == HOSTILE
    assert "\x1b" not in repr(asked(HOSTILE))


def test_the_fixtures_repr_names_the_test_not_its_runtime_or_samples() -> None:
    # pytest shows a failed test's arguments (`cardprobe = ...`) above every failure: one
    # short line, not the runtime object, the limits, the cassette and the model's replies.
    probe: Any = Cardprobe(runtime=None, nodeid="tests/test_x.py::test_y", default_model="m:1")  # type: ignore[arg-type]
    probe.samples.append(
        SampleRecord(
            index=0, route="content", passed=False, label="x", failure=None, reply="\x1b[2J a reply"
        )
    )
    text = repr(probe)
    assert text == "Cardprobe(nodeid='tests/test_x.py::test_y', model='m:1', samples=1)"
