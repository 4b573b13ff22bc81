"""The baseline reader (``score/baseline.py``) refusing a baseline file it cannot use: each
row is one hostile baseline, and the reader's message names the file and the key, in the
words the user then sees (with the option that named the file after it).

These are rows of the guide's "What happens when…" table (docs/guide/what-happens-when.md;
its ``ROWS`` are in tests/plugin/test_hostile.py) whose whole message is the reader's: the
shipped ``cardprobe-baseline.json`` with one edit, read here by the reader itself. A binary
baseline and one holding ``NaN`` run whole there, as the whole runs of their rows.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hostile_inputs import (  # tests/ is on sys.path (rootdir-relative)
    ARM,
    BASELINE,
    BIG,
    ROOT,
    Refused,
    arm,
    baseline,
    both,
    edit,
    fifo,
    mkdir,
    set_in,
    write,
)

from pytest_cardprobe.score.baseline import BaselineError, load_baseline

REFUSED: list[Refused] = [
    Refused(
        "baseline-not-json", write(BASELINE, "{"), ("cardprobe-baseline.json", "not valid JSON")
    ),
    Refused(
        "baseline-format-2",
        baseline(set_in(("format",), 2)),
        ("cardprobe-baseline.json", "key 'format' must be 1"),
    ),
    Refused(
        "baseline-arms-list", baseline(set_in(("arms",), [])), ("cardprobe-baseline.json", "'arms'")
    ),
    Refused(
        "baseline-arm-a-list",
        baseline(lambda d: d["arms"].update({ARM: []})),
        ("cardprobe-baseline.json", f"key arms.{ARM} must be a mapping"),
    ),
    Refused(
        "baseline-verdicts-string",
        arm(set_in(("verdicts",), "all good")),
        ("cardprobe-baseline.json", ".verdicts must be a mapping of case ids"),
    ),
    Refused(
        "baseline-verdict-string",
        arm(set_in(("verdicts", "date"), "passed")),
        ("cardprobe-baseline.json", ".verdicts.date must be a mapping"),
    ),
    Refused(
        "baseline-passed-string",
        arm(set_in(("verdicts", "date", "passed"), "yes")),
        ("cardprobe-baseline.json", ".verdicts.date.passed must be true or false"),
    ),
    Refused(
        "baseline-count-word",
        arm(set_in(("verdicts", "date", "calls"), "two")),
        ("cardprobe-baseline.json", ".verdicts.date.calls must be an integer >= 0"),
    ),
    Refused(
        "baseline-count-400-digits",
        arm(set_in(("verdicts", "date", "tool_calls"), 10**400)),
        ("cardprobe-baseline.json", ".verdicts.date.tool_calls must be an integer from 0 to calls"),
    ),
    Refused(
        "baseline-count-above-a-billion",
        arm(set_in(("verdicts", "date", "calls"), 10**9 + 1)),
        ("cardprobe-baseline.json", ".verdicts.date.calls must be an integer >= 0 (at most 1,000,"),
    ),
    Refused(
        "baseline-arm-count-word",
        arm(set_in(("passed",), "one")),
        ("cardprobe-baseline.json", f"key arms.{ARM}.passed must be an integer >= 0"),
    ),
    Refused(
        "baseline-directory",
        both(lambda r: (r / BASELINE).unlink(), mkdir(BASELINE)),
        ("cardprobe-baseline.json", "is a directory"),
    ),
    Refused(
        "baseline-fifo",
        both(lambda r: (r / BASELINE).unlink(), fifo(BASELINE)),
        ("cardprobe-baseline.json", "FIFO"),
    ),
    Refused(
        "baseline-too-large",
        write(BASELINE, " " * BIG),
        ("cardprobe-baseline.json", "larger than the 10 MB cap"),
    ),
    Refused(
        "baseline-dangling-symlink",
        both(
            lambda r: (r / BASELINE).unlink(),
            lambda r: (r / BASELINE).symlink_to("gone.json"),
        ),
        ("cardprobe-baseline.json", "dangling symbolic link"),
    ),
    Refused(
        "baseline-lone-surrogate",
        edit(BASELINE, '"label": "', '"label": "\\udfff'),
        ("cardprobe-baseline.json is not valid JSON: a string holds a lone surrogate",),
    ),
]


@pytest.mark.parametrize("case", REFUSED, ids=[c.id for c in REFUSED])
def test_hostile_input(case: Refused, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(ROOT / BASELINE, tmp_path / BASELINE)
    monkeypatch.chdir(tmp_path)
    case.arrange(tmp_path)
    with pytest.raises(BaselineError) as refused:
        load_baseline(Path(BASELINE))
    message = str(refused.value)
    # The guide row's words ("baseline ") and the file, then what is wrong.
    assert message.startswith(f"baseline {BASELINE}"), message
    for said in case.said:
        assert said in message, f"{said!r} not in {message!r}"
