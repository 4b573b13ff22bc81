"""The commands' own flags read their values with the readers of ``wire/values.py``, as the
plugin's options and ini keys of the same meaning do: a flag refuses what the ini key
refuses, in the same words, and accepts what it accepts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_cardprobe.cli import capture, draft, trend
from pytest_cardprobe.files import MB
from pytest_cardprobe.wire import values

CAPTURE = ["--upstream", "http://127.0.0.1:11434"]
DRAFT = ["x", "--out", "cases/app.yaml"]


def _capture(args: list[str]) -> Any:
    return capture.parser().parse_args([*CAPTURE, *args])


def _draft(args: list[str]) -> Any:
    return draft.parser().parse_args([*DRAFT, *args])


# (the command's reading of its arguments, flag, reader, refused values)
# fmt: off
FLAGS: list[tuple[Callable[[list[str]], Any], str, Any, list[str]]] = [
    (_capture, "--upstream-timeout", values.seconds,
     ["0", "-1", "86401", "nan", "inf", "1e999", "soon", ""]),
    (_capture, "--max-capture-mb", values.megabytes,
     ["0", "-2", "1e-320", "1000001", "nan", "inf", "big"]),
    (_capture, "--max-request-mb", values.megabytes, ["0", "1e-9", "x"]),
    (_draft, "--max-file-mb", values.megabytes, ["0", "1e-320", "1e308", "nan"]),
    (_capture, "--out", values.path_text, ["", "  "]),
    (trend.main, "--md", values.file_path_text, ["", "out/"]),
]
# fmt: on
CASES = [(run, flag, read, bad) for run, flag, read, bads in FLAGS for bad in bads]


def _refusal(read: Any, text: str) -> str:
    with pytest.raises(ValueError) as refused:
        read(text)
    return str(refused.value)


@pytest.mark.parametrize(("run", "flag", "read", "bad"), CASES)
def test_a_flag_refuses_what_its_reader_refuses_in_its_words(
    run: Callable[[list[str]], Any],
    flag: str,
    read: Any,
    bad: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        run([f"{flag}={bad}"])
    assert exited.value.code == 2
    assert f"argument {flag}: {_refusal(read, bad)}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("run", "flag", "given", "want"),
    [
        (_capture, "upstream_timeout", "2.5", 2.5),
        (_capture, "upstream_timeout", "86400", 86400.0),
        (_capture, "max_capture_mb", "0.5", MB // 2),
        (_capture, "max_capture_mb", "0.000001", 1),
        (_draft, "max_file_mb", "1000000", 1_000_000 * MB),
    ],
)
def test_a_flag_gives_the_value_it_gave_before(
    run: Callable[[list[str]], Any], flag: str, given: str, want: float
) -> None:
    args = run([f"--{flag.replace('_', '-')}={given}"])
    assert getattr(args, flag) == want and type(getattr(args, flag)) is type(want)
