"""Names too long for a cassette file or folder name: refused at collection, naming the
suite file, the key and the line, with or without xdist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def _suite(root: Path, name: str, case: str) -> None:
    (root / "p.md").write_text("Answer with a card.\n")
    (root / "s.yaml").write_text(
        f"cardprobe: 1\nname: {json.dumps(name)}\nchannels: [prose]\nconditions: [cold]\n"
        f"prompts: {{prose: p.md}}\ncases:\n  - id: {json.dumps(case)}\n"
        "    prompt: pick a day\n    accept: [Input.Date]\n"
    )


@pytest.mark.parametrize("dist", [[], ["-n", "2"]])
def test_a_case_id_too_long_for_a_file_name_is_refused_at_collection(
    pytester: pytest.Pytester, dist: list[str]
) -> None:
    pytester.makeini("[pytest]\ncardprobe_models = m\n")
    _suite(pytester.path, "s", "x" * 300)
    result = pytester.runpytest("-p", "no:cacheprovider", "s.yaml", *dist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*s.yaml: cases[[]id='xxxx*…'[]] (line 7): the case id makes a cassette file name of "
         "330 bytes*more than the 255 bytes the file system allows*"]
    )  # fmt: skip


def test_a_suite_name_too_long_for_a_folder_name_is_refused_at_collection(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\ncardprobe_models = m\n")
    _suite(pytester.path, "ü" * 130, "date")  # 130 characters, 780 bytes percent-encoded
    result = pytester.runpytest("-p", "no:cacheprovider", "s.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the suite name makes a cassette file name of 780 bytes*"])
