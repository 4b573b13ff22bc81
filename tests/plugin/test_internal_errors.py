"""A bug of the plugin or an error in the user's own hook while a probe runs: one report
naming it, no traceback, no frame arguments and no secret in any output (each test failed on
the code before: a traceback with frame arguments, an INTERNALERROR, a crash after the last
test)."""

from __future__ import annotations

import json

import pytest
from cardprobe_testing import report

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


@pytest.mark.usefixtures("wide_terminal")  # the report's first line read whole
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
