"""Server URLs, header lines and report paths are checked when the run is configured.

A value that cannot work is a usage error (exit 4) naming the flag or ini key and the value
(never a credential in it), before any test runs: not an INTERNALERROR when the first request
is built, nor an exception inside every test.
"""

from __future__ import annotations

import json
import urllib.parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.wire import values

CLOSED = "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("localhost:1143a", "'localhost:1143a' is not a valid http(s) URL"),
        ("http://[::1", "'http://[::1' is not a valid http(s) URL"),
        ("http://[::1]:99999", "'http://[::1]:99999' is not a valid http(s) URL"),
        ("http://[1::2::3]:80", "'http://[1::2::3]:80' is not a valid http(s) URL"),
        ("ftp://files.example:21", "is not an http:// or https:// URL"),
        ("http://:8080", "has no host"),
        ("http://exa mple:80", "holds whitespace or control characters"),
        ("http://a$b:80", "has an invalid host 'a$b'"),
        ("http://host:0", "has port 0"),
    ],
)
def test_a_server_that_is_not_an_http_url_is_a_usage_error(
    project: pytest.Pytester, url: str, said: str
) -> None:
    result = project.runpytest("cases", "--live", "--model", "m", "--cardprobe-server", url)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--cardprobe-server" in err and said in err, err
    assert "INTERNALERROR" not in err + result.stdout.str()


def test_a_bad_ini_server_names_the_key_and_hides_credentials(project: pytest.Pytester) -> None:
    project.makeini(
        "[pytest]\ncardprobe_servers =\n    http://127.0.0.1:1\n    http://bob:hunter2@[::1\n"
    )
    result = project.runpytest("cases", "--live", "--model", "m")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "ini key cardprobe_servers 'http://[::1' is not a valid http(s) URL" in err, err
    assert "hunter2" not in err + result.stdout.str()


def test_a_bad_ollama_host_is_a_usage_error(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "localhost:1143a")
    result = project.runpytest("cases", "--live", "--model", "m")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "environment variable OLLAMA_HOST 'localhost:1143a'" in result.stderr.str()


@pytest.mark.parametrize(
    ("typed", "used"),
    [
        ("localhost", "http://localhost:11434"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
        ("myhost:8080", "http://myhost:8080"),
        ("http://[::1]:8080/", "http://[::1]:8080"),
        ("https://gw.example/ollama", "https://gw.example/ollama"),
        ("http://u:p@host:1/?key=k", "http://u:p@host:1/?key=k"),
    ],
)
def test_server_urls_that_work_are_kept_normalised(typed: str, used: str) -> None:
    assert values.server_url(typed) == used


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(max_size=40))
def test_any_server_text_is_a_usable_url_or_a_value_error(text: str) -> None:
    try:
        url = values.server_url(text)
    except ValueError:
        return
    parts = urllib.parse.urlsplit(url)
    assert parts.scheme in ("http", "https") and parts.hostname
    assert parts.port is None or 0 < parts.port < 65536


@pytest.mark.parametrize(
    ("line", "env", "said"),
    [
        ("X-Token: café", "", "the value of X-Token holds a character that is not printable ASCII"),
        ("X-Token: ${INJECT}", "a\r\nX-Evil: 1", "the value of X-Token holds a line break"),
        ("X Token: 1", "", "has a line whose name (before ':') is not a header name"),
        ("X-Key S3CRET:1", "", "has a line whose name (before ':') is not a header name"),
    ],
)
def test_a_header_that_cannot_be_sent_is_a_usage_error_that_hides_its_value(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, line: str, env: str, said: str
) -> None:
    monkeypatch.setenv("INJECT", env)
    project.makeini(f"[pytest]\ncardprobe_headers =\n    {line}\n")
    result = project.runpytest("cases", "--live", "--model", "m", "--cardprobe-server", CLOSED)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"ini key cardprobe_headers {said}" in err, err
    for secret in ("café", "X-Evil", "S3CRET"):
        assert secret not in err
    assert "does not answer" not in err  # refused before the preflight


def test_an_api_key_that_cannot_be_sent_is_a_usage_error(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CARDPROBE_API_KEY", "sk-ünicode")
    result = project.runpytest("cases", "--live", "--model", "m", "--cardprobe-server", CLOSED)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "CARDPROBE_API_KEY: the value of Authorization holds a character" in err, err
    assert "ünicode" not in err


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(max_size=30), st.text(max_size=30))
def test_any_header_line_is_sendable_or_a_value_error(name: str, value: str) -> None:
    try:
        sent_name, sent = values.header_line(f"{name}:{value}")
    except ValueError:
        return
    (sent_name + sent).encode("ascii")
    assert "\r" not in sent and "\n" not in sent


# ----------------------------------------------------------------------------- paths


def test_a_report_path_is_relative_to_where_pytest_was_started(recorded: pytest.Pytester) -> None:
    sub = recorded.mkdir("sub")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(sub)
        result = recorded.runpytest(
            "-p", "no:cacheprovider", str(recorded.path / "cases"),
            "-k", "date and prose and cold", "--cardprobe-json", "r.json",
        )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert f"rootdir: {recorded.path}" in result.stdout.str()
    assert json.loads((sub / "r.json").read_text())["arms"]
    assert not (recorded.path / "r.json").exists()


@pytest.mark.parametrize("flag", ["--cardprobe-json", "--cardprobe-md", "--cardprobe-html"])
def test_an_empty_report_path_is_a_usage_error(project: pytest.Pytester, flag: str) -> None:
    result = project.runpytest("cases", flag, "")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{flag} wants a path, got an empty one" in result.stderr.str()


@pytest.mark.parametrize(
    "flag", ["--cardprobe-json", "--cardprobe-md", "--cardprobe-html", "--cardprobe-baseline"]
)
def test_a_file_path_typed_as_a_folder_is_a_usage_error(
    project: pytest.Pytester, flag: str
) -> None:
    """``out/`` names a folder: pytest's Path would drop the slash and write a file ``out``."""
    result = project.runpytest("cases", f"{flag}=out/")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{flag} wants a file path, got 'out/', which names a folder" in result.stderr.str()
    assert not (project.path / "out").exists()


def test_an_empty_ini_path_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ncardprobe_baseline =\n")
    result = project.runpytest("cases")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini key cardprobe_baseline wants a path, got an empty one" in result.stderr.str()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--cardprobe-baseline-ref=-upload-pack"], "wants a git revision such as origin/main"),
        (["--cardprobe-baseline-ref", "main branch"], "wants a git revision such as origin/main"),
        (["--cardprobe-baseline-ref", "origin/main"], "is not in a git repository"),
        (
            ["--cardprobe-baseline-ref", "https://x-access-token:ghs_S3CRET@github.com/o/r"],
            "got a repository URL (not shown: it may hold a token); fetch the base branch first",
        ),
        (["--cardprobe-update-baseline", "--cardprobe-accept-reason", " "], "wants a reason"),
        (["--cardprobe-accept-reason", "why"], "give it with --cardprobe-update-baseline"),
    ],
)
def test_a_base_ref_and_a_reason_are_checked_before_any_test(
    project: pytest.Pytester, args: list[str], said: str
) -> None:
    """A ref git could take for an option is refused; outside a repository the base cannot
    be read; a reason is one line of text, and only an update takes one."""
    result = project.runpytest("cases", "--model", "m", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert said in result.stderr.str(), result.stderr.str()
    assert "S3CRET" not in result.stderr.str() + result.stdout.str()
