"""``python -m pytest_cardprobe diff OLD.json NEW.json``: two real replays compared."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cardprobe_testing import cassette, report, set_replies

CARDS = {
    "date": json.dumps([{"type": "Input.Date", "id": "d", "label": "Day"}]),
    "time": json.dumps([{"type": "Input.Time", "id": "t", "label": "Time"}]),
}
PROSE = "Happy to help with that in words."


def run(project: pytest.Pytester, name: str) -> Path:
    """Replay the prose/cold arm into a JSON report called ``name``."""
    result, _ = report(project, "-k", "prose and cold")
    assert result.ret in (0, 1)
    target = project.path / name
    (project.path / "report.json").rename(target)
    return target


def diff(project: pytest.Pytester, *args: object) -> pytest.RunResult:
    return project.run(sys.executable, "-m", "pytest_cardprobe", "diff", *map(str, args))


@pytest.fixture
def old(recorded: pytest.Pytester) -> Path:
    """A run in which date and time pass."""
    for case, card in CARDS.items():
        set_replies(cassette(recorded, case, "prose", "cold"), content=card)
    return run(recorded, "old.json")


def test_a_run_that_gained(recorded: pytest.Pytester) -> None:
    before = run(recorded, "old.json")
    for case, card in CARDS.items():
        set_replies(cassette(recorded, case, "prose", "cold"), content=card)
    after = run(recorded, "new.json")
    result = diff(recorded, before, after, "--md", recorded.path / "diff.md")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(
        [
            "cards*prose*cold*3/25*+2*gain",
            "gate: pass*1 gain(s)*",
            "*cards/smollm2:135m/prose/cold: fail -> pass: date (prose -> ok Input.Date), time*",
        ]
    )
    md = (recorded.path / "diff.md").read_text()
    assert "**Gate: pass**" in md and "### Flipped cases" in md and "fail -> pass: date" in md


def test_a_run_that_lost_within_the_floor(recorded: pytest.Pytester, old: Path) -> None:
    set_replies(cassette(recorded, "date", "prose", "cold"), content=PROSE)
    new = run(recorded, "new.json")
    result = diff(recorded, old, new)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "cards*prose*cold*2/25*-1*warning",
            "*warning: *within the ±1 noise floor: date (ok Input.Date -> prose)",
            "*pass -> fail: date (ok Input.Date -> prose)",
        ]
    )


def test_a_run_that_lost_beyond_the_floor(recorded: pytest.Pytester, old: Path) -> None:
    for case in CARDS:
        set_replies(cassette(recorded, case, "prose", "cold"), content=PROSE)
    new = run(recorded, "new.json")
    result = diff(recorded, old, new)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["cards*prose*cold*1/25*-2*regression", "gate: fail*", "  REGRESSION: *date*time*"]
    )
    # A wider floor lets the same loss through.
    assert diff(recorded, old, new, "--noise-floor", "2").ret == 0


def test_a_file_that_is_no_report_is_named(recorded: pytest.Pytester, old: Path) -> None:
    bad = recorded.path / "bad.json"
    bad.write_text('{"arms": []}')
    result = diff(recorded, old, bad)
    assert result.ret == 2
    result.stderr.fnmatch_lines(["error: *bad.json: key 'tests' is missing*"])
    missing = diff(recorded, old, recorded.path / "nope.json")
    assert missing.ret == 2 and "nope.json" in missing.stderr.str()
