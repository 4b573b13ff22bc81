"""The gate: regressions past the noise floor fail the run; within it they warn.

Regressions are constructed by editing recorded replies (test data); the replay, judging,
baseline and gate under test are the real ones.
"""

from __future__ import annotations

import json
import re

import pytest
from cardprobe_testing import cassette, report, set_replies
from faultserver import fault_server

CARDS = {
    "date": [{"type": "Input.Date", "id": "day", "label": "Day"}],
    "time": [{"type": "Input.Time", "id": "at", "label": "Time"}],
    "toggle": [{"type": "Input.Toggle", "id": "on", "title": "Remind me"}],
}
PROSE = "Sure! Any weekday morning works well for most people."
ARMS = [
    f"{channel}/{condition}"
    for channel, condition in [
        ("prose", "cold"),
        ("prose", "history"),
        ("prose", "schema"),
        ("prose", "seeded"),
        ("retry", "cold"),
        ("retry", "history"),
        ("tool", "cold"),
        ("tool", "history"),
    ]
]


def baseline_with_passing(project: pytest.Pytester, channel: str = "prose") -> None:
    """Make date, time and toggle pass on ``channel``/cold, then write the baseline."""
    for case, body in CARDS.items():
        set_replies(cassette(project, case, channel, "cold"), content=json.dumps(body))
    result, data = report(project, "--cardprobe-update-baseline")
    assert result.ret == 0, result.stdout.str()
    assert data["gate"]["decision"] == "updated"


@pytest.mark.usefixtures("wide_terminal")
def test_regression_beyond_the_floor_fails_with_a_readable_report(
    recorded: pytest.Pytester,
) -> None:
    baseline_with_passing(recorded)
    for case in ("date", "time"):
        set_replies(cassette(recorded, case, "prose", "cold"), content=PROSE)
    result, data = report(recorded, "--cardprobe-md=report.md")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert data["gate"]["decision"] == "fail"
    # The recorded time/prose/cold replies both stopped at the token limit (done_reason
    # "length"); set_replies swaps the text and keeps that, so time's new label says so.
    result.stdout.fnmatch_lines(
        [
            "gate: fail*1 regression(s)*",
            "*REGRESSION: cards/smollm2:135m/prose/cold: passed 4 -> 2 of 25 (floor ±1); "
            "pass -> fail: date (ok Input.Date -> prose), "
            "time (ok Input.Time -> truncated at the token limit (length): prose)",
        ]
    )
    md = (recorded.path / "report.md").read_text()
    assert "**Gate: fail**" in md and "### Regressions" in md


@pytest.mark.usefixtures("wide_terminal")
def test_loss_within_the_floor_passes_with_a_warning(recorded: pytest.Pytester) -> None:
    baseline_with_passing(recorded)
    set_replies(cassette(recorded, "date", "prose", "cold"), content=PROSE)
    result, data = report(recorded)
    assert result.ret == 0, result.stdout.str()
    assert data["gate"]["decision"] == "pass"
    result.stdout.fnmatch_lines(
        [
            "  let through: cards/smollm2:135m/prose/cold date: ok Input.Date -> prose — the "
            "arm's net change is -1 case(s), within ±1, so the gate passes it"
        ]
    )


def test_a_wider_noise_floor_lets_two_losses_through(recorded: pytest.Pytester) -> None:
    baseline_with_passing(recorded)
    for case in ("date", "time"):
        set_replies(cassette(recorded, case, "prose", "cold"), content=PROSE)
    result, _ = report(recorded, "--cardprobe-noise-floor", "2")
    assert result.ret == 0, result.stdout.str()


def test_adoption_drop_fails_even_when_cases_still_pass(recorded: pytest.Pytester) -> None:
    for case, body in CARDS.items():
        set_replies(cassette(recorded, case, "tool", "cold"), tool_body=body)
    assert report(recorded, "--cardprobe-update-baseline")[0].ret == 0
    # Same cards, now written into the content instead of the tool call: still pass.
    for case, body in CARDS.items():
        set_replies(cassette(recorded, case, "tool", "cold"), content=json.dumps(body))
    result, data = report(recorded)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    arm = data["gate"]["arms"]["cards/smollm2:135m/tool/cold"]
    assert arm["passed_delta"] == 0
    assert arm["adoption_delta"] < 0
    result.stdout.fnmatch_lines(["*REGRESSION: cards/smollm2:135m/tool/cold: adoption *"])


@pytest.mark.usefixtures("wide_terminal")
def test_gain_beyond_the_floor_suggests_update(recorded: pytest.Pytester) -> None:
    assert report(recorded, "--cardprobe-update-baseline")[0].ret == 0
    for case, body in CARDS.items():
        set_replies(cassette(recorded, case, "prose", "cold"), content=json.dumps(body))
    result, data = report(recorded)
    assert result.ret == 0
    assert data["gate"]["gains"]
    result.stdout.fnmatch_lines(
        ["*gain: cards/smollm2:135m/prose/cold*--cardprobe-update-baseline*"]
    )


def test_k_run_compares_only_the_cases_that_ran(recorded: pytest.Pytester) -> None:
    baseline_with_passing(recorded)
    for case in ("date", "time"):
        set_replies(cassette(recorded, case, "prose", "cold"), content=PROSE)
    result, data = report(recorded, "-k", "toggle or control")
    assert result.ret == 0, result.stdout.str()
    assert data["gate"]["arms"]["cards/smollm2:135m/prose/cold"]["compared"] == 2


def test_arms_without_baseline_keep_the_model_verdict_and_say_how_to_record_one(
    recorded: pytest.Pytester,
) -> None:
    (recorded.path / "cardprobe-baseline.json").unlink(missing_ok=True)
    result, data = report(recorded)
    # No baseline: failing cases are plain failures, and nothing forgives them. In the
    # recordings only control passes, on every arm but prose/schema (7 of 200).
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=7, failed=193)
    assert data["gate"]["decision"] == "pass" and len(data["gate"]["new"]) == 8
    # The run's own command, with how it recorded and reported left out: it can be run as is.
    result.stdout.fnmatch_lines(
        [
            "no baseline for 8 arm(s); this records one:",
            "  pytest -p no:cacheprovider cases --cardprobe-update-baseline",
        ]
    )
    strict, strict_data = report(recorded, "--cardprobe-strict-baseline", "-k", "control")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    assert strict_data["gate"]["decision"] == "fail"


@pytest.mark.usefixtures("wide_terminal")
def test_unscored_infra_past_the_share_is_inconclusive(recorded: pytest.Pytester) -> None:
    with fault_server() as server:  # answers preflight, then fails every call (500)
        result, data = report(
            recorded,
            "--live",
            "--cardprobe-server",
            server.url,
            "-k",
            "date and prose and (cold or history)",
        )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert data["gate"]["decision"] == "inconclusive"
    assert data["gate"]["unscored"] == 2
    result.stdout.fnmatch_lines(["gate: inconclusive*2 of 2 case(s) unscored*"])


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda text: "{not json", "is not valid JSON"),
        (lambda text: text.replace('"format": 1', '"format": 7'), "key 'format' must be 1"),
        (
            lambda text: text.replace('"passed": false', '"passed": "no"', 1),
            "key arms.cards/smollm2:135m/prose/cold.verdicts.badge.passed must be true or false",
        ),
    ],
    ids=["not-json", "format", "passed"],
)
def test_bad_baseline_is_a_usage_error_before_any_test(
    recorded: pytest.Pytester, edit: object, said: str
) -> None:
    path = recorded.path / "cardprobe-baseline.json"
    path.write_text(edit(path.read_text()))  # type: ignore[operator]
    for mode in (["-n", "0"], ["-n", "2"]):
        result, data = report(recorded, "-k", "date", *mode)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert not data  # nothing ran, nothing was written
        err = result.stderr.str()
        assert "cardprobe-baseline.json" in err and said in err, err
        assert "Traceback" not in err + result.stdout.str()
    # --cardprobe-update-baseline is how a broken baseline is replaced, so it does not stop on one.
    update, _ = report(recorded, "-k", "date", "--cardprobe-update-baseline")
    assert update.ret == 0, update.stdout.str()
    update.stdout.fnmatch_lines(["replacing a baseline that could not be read: *"])
    assert json.loads(path.read_text())["format"] == 1


def test_update_baseline_is_stable_and_atomic(recorded: pytest.Pytester) -> None:
    report(recorded, "--cardprobe-update-baseline")
    first = (recorded.path / "cardprobe-baseline.json").read_bytes()
    report(recorded, "--cardprobe-update-baseline", "-n", "2")
    assert (recorded.path / "cardprobe-baseline.json").read_bytes() == first
    assert not list(recorded.path.glob(".cardprobe-baseline.json.*"))
    assert list(json.loads(first)["arms"]) == sorted(json.loads(first)["arms"])


def timing_rows(lines: list[str], first: str) -> list[str]:
    """The arms of the timing table under the line ``first`` (up to a blank line, or the
    end: with nothing after it, the table is the report's last section), named from its
    identity columns and, for those the same on every row, from its caption (``first``)."""
    rows = lines[lines.index(first) + 1 :]
    while rows and not rows[0].strip():
        rows = rows[1:]
    end = rows.index("") if "" in rows else len(rows)
    table = [row for row in rows[:end] if row.strip() and not set(row) <= set("|-")]

    def cells(row: str) -> list[str]:
        # Identity columns come first, so splitting at spaces keeps them aligned.
        return [c.strip() for c in row.strip("|").split("|")] if row[0] == "|" else row.split()

    shared = dict(re.findall(r"\b(suite|model) ([^\s,:]+(?::[^\s,:]+)?)", first))
    names = cells(table[0])
    ids = []
    for row in table[1:]:
        found = {**shared, **dict(zip(names, cells(row), strict=False))}
        ids.append("/".join(found[k] for k in ("suite", "model", "channel", "condition")))
    return [arm for arm in ids if arm.startswith("cards/")]


# Server figures (durations, token counts), raw model text and the time each cassette was
# recorded change with every re-recording: the snapshots hold verdicts and the reports'
# structure, not those.
SAMPLE_RAW = ("reply", "thinking", "figures")
RECORDED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def test_shipped_reports_match_their_snapshots(recorded: pytest.Pytester, snapshot) -> None:  # type: ignore[no-untyped-def]
    result = recorded.runpytest(
        "-p", "no:cacheprovider", "cases", "--cardprobe-json=r.json", "--cardprobe-md=r.md"
    )
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "cardprobe scoreboard" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("gate:"))
    board = lines[start + 1 : end + 1]
    arms = [f"cards/smollm2:135m/{c}" for c in ARMS]
    # The timing table is there, one row per arm; its figures are left out of the snapshot.
    head = "timing and tokens (server figures; not gated), suite cards, model smollm2:135m:"
    assert timing_rows(board, head) == arms
    first = board.index(head)
    board = board[:first] + board[board.index("", first) + 1 :]  # the table and its blank line
    assert "\n".join(board) == snapshot(name="scoreboard")
    md = (recorded.path / "r.md").read_text().splitlines()
    head = "### Timing and tokens (server figures; not gated)"
    assert timing_rows(md, head) == arms
    first = md.index(head)
    # The section, up to the next one or the end (no section follows it in this report).
    after = next((i for i in range(first + 1, len(md)) if md[i].startswith("### ")), len(md))
    md = md[:first] + md[after:]
    assert "\n".join(md) + "\n" == snapshot(name="markdown")
    data = json.loads((recorded.path / "r.json").read_text())
    for arm in data["arms"]:
        assert arm.pop("timing")["samples"] == 50  # every sample of the arm has figures
    for test in data["tests"]:
        assert test.pop("warmup") is None  # replay warms nothing up
        assert RECORDED.fullmatch(test.pop("recorded"))  # every shipped cassette says when
        for sample in test["samples"]:
            for key in SAMPLE_RAW:
                assert key in sample
                sample.pop(key)
            if sample["retry_of"]:
                assert sample["retry_of"].pop("reply") is not None
    assert json.dumps(data, indent=2, sort_keys=True) == snapshot(name="json")


def test_an_update_within_the_floor_says_so_and_what_it_wrote(recorded: pytest.Pytester) -> None:
    baseline_with_passing(recorded)
    set_replies(cassette(recorded, "date", "prose", "cold"), content=PROSE)
    result, _ = report(recorded, "--cardprobe-update-baseline")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            # The header is cut at its joints to the terminal's width (pytester: 80).
            "cardprobe: replay (record mode none: no server is asked); models smollm2:135m",
            "  writing the baseline cardprobe-baseline.json",
            "update against the committed baseline cardprobe-baseline.json: 0 regression(s) "
            "accepted:",
            "  within the noise floor, not accepted (no reason given): "
            "cards/smollm2:135m/prose/cold: date (ok Input.Date -> prose)",
            "1 flip(s) within the ±1 noise floor, written without an acceptance, so the run",
            "  exits 0: cards/smollm2:135m/prose/cold: date (ok Input.Date -> prose)",
        ]
    )
    assert "accepted" not in json.loads((recorded.path / "cardprobe-baseline.json").read_text())


def test_an_update_with_regressions_needs_a_reason_and_then_lists_each_flip(
    recorded: pytest.Pytester,
) -> None:
    baseline_with_passing(recorded)
    before = (recorded.path / "cardprobe-baseline.json").read_text()
    for case in ("date", "time"):
        set_replies(cassette(recorded, case, "prose", "cold"), content=PROSE)
    refused, data = report(recorded, "--cardprobe-update-baseline")
    assert refused.ret == pytest.ExitCode.TESTS_FAILED
    assert data["gate"]["decision"] == "refused"
    refused.stdout.fnmatch_lines(
        [
            "update refused: 1 regression(s) against the committed baseline "
            "cardprobe-baseline.json:",
            "  REGRESSION: cards/smollm2:135m/prose/cold: passed 4 -> 2 of 25 (floor ±1)*",
            "  the baseline was not written: an update that accepts regressions says why; run "
            "again with the reason: pytest -p no:cacheprovider cases *--cardprobe-update-baseline "
            '--cardprobe-accept-reason "<why these regressions are accepted>"',
        ]
    )
    assert (recorded.path / "cardprobe-baseline.json").read_text() == before
    why = "the pickers are out of scope for this model"
    result, data = report(recorded, "--cardprobe-update-baseline", "--cardprobe-accept-reason", why)
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.str()
    assert "FAILED" not in out and "within the" not in out and "flip(s)" not in out
    result.stdout.fnmatch_lines(
        [
            "update against the committed baseline cardprobe-baseline.json: 2 regression(s) "
            "accepted:",
            "  accepted cards/smollm2:135m/prose/cold: date (ok Input.Date -> prose), time (ok "
            "Input.Time -> truncated at the token limit (length): prose) — reason: " + why,
        ]
    )
    cold = [t for t in data["tests"] if (t["channel"], t["condition"]) == ("prose", "cold")]
    outcomes = {t["case"]: t["outcome"] for t in cold}
    assert outcomes["date"] == outcomes["time"] == "accepted"
    written = json.loads((recorded.path / "cardprobe-baseline.json").read_text())["accepted"]
    assert [(a["case"], a["reason"], a["base"]) for a in written] == [
        ("date", why, None),
        ("time", why, None),
    ]
