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


@pytest.fixture(autouse=True)
def _no_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's output piped with no COLUMNS (whole lines), whatever this process has;
    the width test sets COLUMNS itself."""
    monkeypatch.delenv("COLUMNS", raising=False)


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
            "gain*cards*prose*cold*3/25*+2*",
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
            "warning*cards*prose*cold*2/25*-1*",
            "  let through: cards/smollm2:135m/prose/cold date: ok Input.Date -> prose — the "
            "arm's net change is -1 case(s), within ±1, so the gate passes it",
            "*pass -> fail: date (ok Input.Date -> prose)",
        ]
    )


def test_in_a_terminal_the_scoreboard_fits_its_width(
    recorded: pytest.Pytester, old: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_replies(cassette(recorded, "date", "prose", "cold"), content=PROSE)
    new = run(recorded, "new.json")
    whole = diff(recorded, old, new)  # piped, no COLUMNS: whole lines
    assert any(len(line) > 60 for line in whole.stdout.lines), whole.stdout.str()
    monkeypatch.setenv("COLUMNS", "60")
    fitted = diff(recorded, old, new)
    assert fitted.ret == whole.ret == 0
    board = fitted.stdout.lines[: fitted.stdout.lines.index("flipped cases:")]
    assert board and all(len(line) <= 60 for line in board), fitted.stdout.str()
    assert any(line.split()[:1] == ["gate"] for line in board), board  # the verdict first


def test_a_run_that_lost_beyond_the_floor(recorded: pytest.Pytester, old: Path) -> None:
    for case in CARDS:
        set_replies(cassette(recorded, case, "prose", "cold"), content=PROSE)
    new = run(recorded, "new.json")
    result = diff(recorded, old, new)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["regression*cards*prose*cold*1/25*-2*", "gate: fail*", "  REGRESSION: *date*time*"]
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


def test_without_new_the_configured_report_is_the_new_run(
    recorded: pytest.Pytester, old: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_replies(cassette(recorded, "date", "prose", "cold"), content=PROSE)
    new = run(recorded, "new.json")
    monkeypatch.chdir(recorded.path / "cases")  # any folder of the project
    unset = recorded.run(sys.executable, "-m", "pytest_cardprobe", "diff", old)
    assert unset.ret == 2 and "set the ini key cardprobe_json" in unset.stderr.str()
    recorded.makeini("[pytest]\ncardprobe_models = smollm2:135m\ncardprobe_json = new.json\n")
    result = recorded.run(sys.executable, "-m", "pytest_cardprobe", "diff", old)
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["*pass -> fail: date (ok Input.Date -> prose)"])
    assert new.is_file()


def test_two_reports_without_an_arm_say_there_is_nothing_to_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What a run that selected no probe test writes (`pytest -k typo` with cardprobe_json).
    from pytest_cardprobe.cli.diff import main

    empty = {"arms": [], "gate": None, "run": {"noise_floor": 1}, "summary": {}, "tests": []}
    for name in ("old.json", "new.json"):
        (tmp_path / name).write_text(json.dumps(empty))
    assert main([str(tmp_path / "old.json"), str(tmp_path / "new.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("nothing to compare: neither report holds an arm"), repr(out)
