"""What a reader sees in the terminal: short, and model text escaped."""

from __future__ import annotations

import json

import pytest
from cardprobe_testing import cassette, report, set_replies

from pytest_cardprobe.score.stats import DASH

LONG = "Here is my answer. " * 30  # 570 characters of prose
HOSTILE = "\x1b[31mRED\x1b[0m \x1b]0;owned\x07 done"


@pytest.mark.parametrize("workers", [["-n", "0"], ["-n", "2"]], ids=["n0", "n2"])
def test_the_shipped_suite_replays_quietly(recorded: pytest.Pytester, workers: list[str]) -> None:
    result = recorded.runpytest("-p", "no:cacheprovider", "cases", *workers)
    assert result.ret == 0
    # In the recordings only control passes, on every arm but prose/schema; the rest fail
    # as the baseline says they do (expected failures).
    result.assert_outcomes(passed=7, xfailed=193)
    out = result.stdout.lines
    assert len(out) <= 60, "\n".join(out)
    assert not [line for line in out if "FAILED" in line]
    result.stdout.fnmatch_lines(
        [
            "*cardprobe scoreboard*",
            # The same suite and model on every row: said once, above the table.
            "suite cards, model smollm2:135m:",
            # The gate word first; ± and p carry nothing here (no case moved): -v shows them.
            "gate  channel  condition  passed        samples       adoption",
            f"ok    tool     cold       1/25 [[]0{DASH}20%[]]  2/50 [[]1{DASH}14%[]]  "
            f"0/50 0% [[]0{DASH}8%[]]",
            "key: gate = the arm's verdict against the baseline; *",
            "gate: pass*",
        ]
    )
    # Every line of the scoreboard fits the terminal pytester gives (80 columns).
    board = out[next(i for i, line in enumerate(out) if "cardprobe scoreboard" in line) :]
    assert max(len(line) for line in board) <= 80, "\n".join(board)


def test_a_failing_probe_shows_one_line_per_sample_and_the_start_of_its_reply(
    recorded: pytest.Pytester,
) -> None:
    (recorded.path / "cardprobe-baseline.json").unlink()
    set_replies(cassette(recorded, "date", "prose", "cold"), content=LONG)
    result, data = report(recorded, "-k", "date and prose and cold")
    result.stdout.fnmatch_lines(
        [
            "  sample 1/2 FAIL [[]content[]] declined: prose (finish: stop)",
            f"    | {LONG[:200]}… [[]370 more characters[]]",
            "  sample 2/2 FAIL [[]content[]] declined: prose (finish: stop)",
        ]
    )
    assert LONG[:201] not in result.stdout.str()
    # The reports keep the whole reply.
    assert data["tests"][0]["samples"][0]["reply"] == LONG
    full, _ = report(recorded, "-k", "date and prose and cold", "-vv")
    assert LONG.strip() in full.stdout.str()


def test_control_characters_from_the_model_never_reach_the_terminal_raw(
    recorded: pytest.Pytester,
) -> None:
    (recorded.path / "cardprobe-baseline.json").unlink()
    set_replies(cassette(recorded, "date", "prose", "cold"), content=HOSTILE)
    for verbosity in ([], ["-vv"]):
        result, _ = report(recorded, "-k", "date and prose and cold", *verbosity)
        out = result.stdout.str() + result.stderr.str()
        assert "\x1b" not in out and "\x07" not in out
        assert "\\x1b[31mRED\\x1b[0m \\x1b]0;owned\\x07 done" in out


def test_quiet_shows_the_gate_line_and_only_what_explains_it(recorded: pytest.Pytester) -> None:
    card = json.dumps([{"type": "Input.Date", "id": "d", "label": "Day"}])
    set_replies(cassette(recorded, "date", "prose", "history"), content=card)
    result, _ = report(recorded, "-q")
    board = result.stdout.lines[
        next(i for i, line in enumerate(result.stdout.lines) if "cardprobe scoreboard" in line) :
    ]
    # A gain within the floor explains nothing about the exit: no table, no gain line.
    assert not [line for line in board if line.startswith("cards ")], board
    assert board[1].startswith("gate: pass")
    assert not any("gain:" in line for line in board)


def test_a_flip_within_the_floor_fits_the_terminal_on_every_line(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # control (plain prose wanted) passed in the baseline; a card now is one flip, within ±1.
    card = json.dumps([{"type": "Input.Date", "id": "d", "label": "Day"}])
    set_replies(cassette(recorded, "control", "prose", "cold"), content=card)
    monkeypatch.setenv("COLUMNS", "100")
    result = recorded.runpytest("-p", "no:cacheprovider", "cases", "-n", "0")
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.lines
    board = out[next(i for i, line in enumerate(out) if "cardprobe scoreboard" in line) :]
    board = board[: next(i for i, line in enumerate(board) if "short test summary" in line)]
    # The note that says why a FAILED test still exits 0 wraps like the rest of the board.
    assert any(line.startswith("1 flip(s) within the ±1 noise floor") for line in board), board
    assert max(len(line) for line in board) <= 100, "\n".join(board)
