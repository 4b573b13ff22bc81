"""Hostile input, round two (issue 23): no traceback from the probe path, secrets out of
every failure report, finite numbers in what replay and the gate read, and names checked at
collection. Each test here failed on the code before the round (a traceback with frame
arguments, an INTERNALERROR, a crash after the last test, a write that could never land).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from cardprobe_testing import cassette, report

SECRETS = ("S3CRETPW", "T0KENVALUE", "K3YVALUE")
SERVER = "http://alice:S3CRETPW@127.0.0.1:9/v?key=K3YVALUE"
ONE = ("-k", "date and prose and cold")


def everything_said(project: pytest.Pytester, result: pytest.RunResult) -> str:
    """Terminal output plus every report file the run wrote."""
    text = result.stdout.str() + result.stderr.str()
    for name in ("junit.xml", "report.json", "r.md"):
        path = project.path / name
        if path.exists():
            text += path.read_text()
    return text


def with_secrets(project: pytest.Pytester) -> None:
    project.makeini(
        "[pytest]\ncardprobe_models = smollm2:135m\ncardprobe_headers =\n    X-Auth: T0KENVALUE\n"
    )


def test_an_error_in_the_users_hook_is_theirs_and_carries_no_secret(
    recorded: pytest.Pytester,
) -> None:
    with_secrets(recorded)
    recorded.makeconftest(
        "def pytest_cardprobe_adjust_request(request, probe, config):\n"
        "    raise RuntimeError('boom at http://alice:S3CRETPW@host/ with T0KENVALUE')\n"
    )
    result, _ = report(recorded, *ONE, "--cardprobe-server", SERVER, "--junitxml=junit.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "cardprobe: error in *conftest.py:2 in pytest_cardprobe_adjust_request, called "
            "while running the probe: RuntimeError: boom at http://host/ with [[]redacted[]]",
            "  pytest_cardprobe/run/runtime.py:* in run",
        ]
    )
    said = everything_said(recorded, result)
    assert not [s for s in SECRETS if s in said]
    assert "Traceback" not in said and "server = " not in said


def test_a_bug_of_the_plugin_is_reported_as_one_without_frame_arguments(
    recorded: pytest.Pytester,
) -> None:
    with_secrets(recorded)
    # A forced bug inside the package: the router the prose channel calls is gone. (In a
    # process of its own: the edit would break the modules of this one.)
    recorded.makeconftest("import pytest_cardprobe.run.asking as asking\nasking.answer_of = None\n")
    result = recorded.runpytest_subprocess(
        "-p", "no:cacheprovider", "cases", *ONE, "--cardprobe-server", SERVER,
        "--junitxml=junit.xml", "--cardprobe-json=report.json",
    )  # fmt: skip
    data = json.loads((recorded.path / "report.json").read_text())
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "cardprobe internal error: TypeError: 'NoneType' object is not callable "
            "(please report)",
            "  pytest_cardprobe/run/asking.py:* in sample",
        ]
    )
    said = everything_said(recorded, result)
    assert not [s for s in SECRETS if s in said]
    assert "Traceback" not in said and "request = " not in said
    # The test errored: it has no verdict and the run fails.
    (test,) = data["tests"]
    assert test["status"] == "error" and test["message"].startswith("cardprobe internal error")


def test_a_bug_at_the_session_end_is_one_report_not_an_internalerror_dump(
    recorded: pytest.Pytester,
) -> None:
    recorded.makeconftest(
        "import pytest_cardprobe.glue.session as session\nsession.aggregate = None\n"
    )
    result = recorded.runpytest_subprocess("-p", "no:cacheprovider", "cases", *ONE)
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out
    result.stdout.fnmatch_lines(["cardprobe internal error: TypeError: *(please report)"])


def test_a_recorded_number_that_overflows_a_float_is_a_corrupt_cassette(
    recorded: pytest.Pytester,
) -> None:
    path = cassette(recorded, "date", "prose", "cold")
    data = yaml.safe_load(path.read_text())
    body = data["interactions"][0]["response"]["body"]
    assert '"eval_count":' in body["string"]
    body["string"] = body["string"].replace('"eval_count":', '"eval_count":1e999,"x":', 1)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result, data = report(recorded, *ONE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*corrupt cassette*date-prose-cold.yaml*overflows a float*"])
    assert data["gate"] is not None  # the session ended and wrote its report


@pytest.mark.parametrize("bad", ["NaN", "1e999", "-Infinity"])
def test_a_baseline_number_that_is_not_finite_is_a_usage_error(
    recorded: pytest.Pytester, bad: str
) -> None:
    path = recorded.path / "cardprobe-baseline.json"
    path.write_text(path.read_text().replace('"calls": 50', f'"calls": {bad}', 1))
    result = recorded.runpytest("-p", "no:cacheprovider", "cases", *ONE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*baseline*cardprobe-baseline.json is not valid JSON*"])


def test_diff_refuses_a_report_with_a_number_that_is_not_finite(
    recorded: pytest.Pytester,
) -> None:
    _, data = report(recorded, *ONE)
    good = recorded.path / "report.json"
    bad = recorded.path / "bad.json"
    bad.write_text(good.read_text().replace('"passed": 0', '"passed": NaN', 1))
    result = recorded.run(sys.executable, "-m", "pytest_cardprobe", "diff", good, bad)
    assert result.ret == 2
    result.stderr.fnmatch_lines(["error: cannot read *bad.json: NaN is not a JSON number"])
    assert data["tests"]


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
