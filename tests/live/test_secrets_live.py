"""Secrets never reach a cassette, the terminal or a report (issue 14).

A run records through the plugin against the real Ollama with a credential in every place
one can travel: custom auth headers, a bearer token, ``user:password@`` and ``?key=`` /
``access_token=`` in the server URL, and an ``api_key`` that a hook puts into the request
body. Then every file the run wrote, and everything it printed, is searched for them.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.parse
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from faultproxy import FaultProxy
from test_faults_live import live_lock

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
SECRETS = {
    "X-Auth": "sekrit-xauth-4411",
    "X-Access-Key": "sekrit-accesskey-4412",
    "Ocp-Apim-Subscription-Key": "sekrit-apim-4413",
    "OpenAI-Organization": "sekrit-org-4414",
}
BEARER = "sekrit-bearer-4415"
PASSWORD = "sekrit-password-4416"
QUERY_KEY = "sekrit-querykey-4417"
ACCESS_TOKEN = "sekrit-accesstoken-4418"
BODY_KEY = "sekrit-bodykey-4419"
ALL = [*SECRETS.values(), BEARER, PASSWORD, QUERY_KEY, ACCESS_TOKEN, BODY_KEY]

HOOK = f'''
def pytest_cardprobe_adjust_request(request, probe, config):
    request.options["api_key"] = "{BODY_KEY}"
'''


def secret_url(base: str) -> str:
    parts = urllib.parse.urlsplit(base)
    query = urllib.parse.urlencode({"key": QUERY_KEY, "access_token": ACCESS_TOKEN})
    return f"{parts.scheme}://probe-user:{PASSWORD}@{parts.netloc}/?{query}"


def written_text(root: Path) -> str:
    """Everything under ``root`` (cassettes, reports, hidden files too), as text."""
    chunks = []
    for path in root.rglob("*"):
        if path.is_file() and path.name != "conftest.py":  # the hook holds the body key
            chunks.append(f"--- {path}\n" + path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(chunks)


def run_with_secrets(
    pytester: pytest.Pytester, server: str, *args: str
) -> tuple[pytest.RunResult, str]:
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "cases",
        "--live",
        "--server",
        server,
        "-k",
        "date",
        "--channel",
        "prose",
        "--condition",
        "cold",
        "--samples",
        "1",
        "--cardprobe-json=out/report.json",
        "--cardprobe-md=out/report.md",
        "--junitxml=out/junit.xml",
        "-rA",
        *args,
    )
    return result, result.stdout.str() + result.stderr.str()


def test_no_secret_reaches_a_cassette_the_terminal_or_a_report(
    pytester: pytest.Pytester, real_ollama: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(ROOT / "cases", pytester.path / "cases")
    suite = pytester.path / "cases" / "cards.yaml"
    suite.write_text(suite.read_text().replace("num_predict: 512", "num_predict: 16"))
    headers = "\n    ".join(f"{name}: ${{SECRET_{i}}}" for i, name in enumerate(SECRETS))
    for i, value in enumerate(SECRETS.values()):
        monkeypatch.setenv(f"SECRET_{i}", value)
    monkeypatch.setenv("CARDPROBE_API_KEY", BEARER)
    pytester.makeini(
        f"[pytest]\ncardprobe_models = {real_ollama.model}\ncardprobe_retries = 0\n"
        f"cardprobe_headers =\n    {headers}\n"
    )
    pytester.makeconftest(HOOK)

    with live_lock():
        recorded, printed = run_with_secrets(pytester, secret_url(real_ollama.base_url))
    assert recorded.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), printed
    (cassette,) = (pytester.path / "cassettes").rglob("*.yaml")
    data = yaml.safe_load(cassette.read_text())
    (interaction,) = data["interactions"]
    assert interaction["response"]["status"]["code"] == 200  # the call went through
    assert set(interaction["request"]["headers"]) <= {"content-type"}
    assert set(interaction["response"]["headers"]) <= {"content-type"}
    assert "[redacted]" in interaction["request"]["body"]

    # The same secrets towards a port where nothing listens: the preflight's one error
    # names the server, without its credentials.
    refused, refused_printed = run_with_secrets(
        pytester, secret_url("http://127.0.0.1:9"), "--cardprobe-json=out/refused.json"
    )
    assert refused.ret == pytest.ExitCode.USAGE_ERROR, refused_printed
    assert "server http://127.0.0.1:9/ does not answer" in refused_printed, refused_printed
    assert "cannot reach http://127.0.0.1:9" in refused_printed, refused_printed

    everything = "\n".join([printed, refused_printed, written_text(pytester.path)])
    for secret in ALL:
        assert secret not in everything, f"{secret} leaked"
    assert "probe-user" not in everything
    assert (pytester.path / "out" / "report.json").exists()
    assert (pytester.path / "out" / "report.md").exists()
    assert (pytester.path / "out" / "junit.xml").exists()
    assert os.environ.get("CARDPROBE_API_KEY") == BEARER


# Issue 23: the same promise when the probe path breaks. A hook breaks one probe test inside
# this package (an internal error) and a dripping reply runs into the request deadline;
# with frame arguments and locals asked for (``--tb=long -l``), nothing may show a secret.
USER = "alice-5520"
PASSWORD_2 = "S3CRETPW-5521"
QUERY_KEY_2 = "K3Y-5522"
HEADER_VALUE = "sekrit-apikey-5523"
BROKEN = [USER, PASSWORD_2, QUERY_KEY_2, HEADER_VALUE]
BREAKING_HOOK = """
def pytest_cardprobe_adjust_request(request, probe, config):
    if probe is not None:
        request.options["seed"] = {1, 2}  # not JSON: the body cannot be written
"""
FIXTURE_TESTS = """
def test_drip(cardprobe):
    asked = cardprobe.ask([{"role": "user", "content": "Say hi."}], accept=[],
                          options={"num_predict": 4})
    assert asked.record.failure != "infra", asked.record.label
"""


def test_no_secret_in_an_internal_error_or_a_deadline_behind_the_fault_proxy(
    pytester: pytest.Pytester, real_ollama: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(ROOT / "cases", pytester.path / "cases")
    monkeypatch.setenv("CARDPROBE_TEST_API_KEY", HEADER_VALUE)
    pytester.makeini(
        f"[pytest]\ncardprobe_models = {real_ollama.model}\ncardprobe_retries = 0\n"
        "cardprobe_headers =\n    X-Api-Key: $CARDPROBE_TEST_API_KEY\n"
    )
    pytester.makeconftest(BREAKING_HOOK)
    pytester.makepyfile(test_ask=FIXTURE_TESTS)
    question = [{"role": "user", "content": "Say hi."}]
    # The drip: the real server's reply to this question, fetched through the proxy first
    # (no deadline: a shared server may be slow to generate), then dripped a byte per 0.2 s
    # from the first byte on, so the request deadline is met while bytes keep arriving.
    with live_lock(), FaultProxy(real_ollama.base_url, ["pass", "drip-last"]) as proxy:
        fetched = httpx.post(
            f"{proxy.url}/api/chat",
            json={"model": real_ollama.model, "messages": question, "stream": False,
                  "options": {"num_predict": 4}},
            timeout=600,
        )  # fmt: skip
        assert fetched.status_code == 200, fetched.text
        netloc = urllib.parse.urlsplit(proxy.url).netloc
        server = f"http://{USER}:{PASSWORD_2}@{netloc}/?key={QUERY_KEY_2}"
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "cases", "test_ask.py", "-k", "date or drip",
            "--live", "--cardprobe-server", server, "--cardprobe-request-timeout", "3",
            "--cardprobe-channel", "prose", "--cardprobe-condition", "cold",
            "--cardprobe-samples", "1", "--cardprobe-no-warmup",
            "--cardprobe-json=out/report.json", "--cardprobe-md=out/report.md",
            "--cardprobe-html=out/report.html", "--junitxml=out/junit.xml",
            "-rA", "--tb=long", "-l",
        )  # fmt: skip
    printed = result.stdout.str() + result.stderr.str()
    # Terminal, JUnit XML, JSON, Markdown, HTML and the cassette folder: no secret anywhere.
    everything = printed + "\n" + written_text(pytester.path)
    for secret in BROKEN:
        assert secret not in everything, f"{secret} leaked"
    for name in ("report.json", "report.md", "report.html", "junit.xml"):
        assert (pytester.path / "out" / name).stat().st_size > 0, name
    assert result.ret == pytest.ExitCode.TESTS_FAILED, printed
    # Only the fixture's question reached the proxy (the query string came through); the
    # broken probe test never sent one.
    assert proxy.seen == ["pass /api/chat", f"drip-last /api/chat?key={QUERY_KEY_2}"]
    ((sent, whole),) = proxy.dripped
    assert 0 < sent < whole, proxy.dripped  # cut while dripping, long before its end

    report = json.loads((pytester.path / "out" / "report.json").read_text())
    tests = {t["nodeid"].split("::")[0]: t for t in report["tests"]}
    probe, drip = tests["cases/cards.yaml"], tests["test_ask.py"]
    assert probe["status"] == "error", probe
    assert probe["message"].startswith("cardprobe internal error: TypeError: "), probe
    assert probe["message"].endswith("(please report)"), probe
    result.stdout.fnmatch_lines(
        [
            "*cardprobe internal error: TypeError: Object of type set is not JSON serializable"
            " (please report)",
            "  pytest_cardprobe/*.py:* in *",
        ]
    )
    ((label,),) = [[s["label"] for s in drip["samples"]]]
    assert label.startswith("infra: after 1 attempt: timed out: "), label
    assert "exceeded the 3 s request deadline" in label, label
    result.stdout.fnmatch_lines(["*infra: *exceeded the 3 s request deadline*"])
    assert "Traceback" not in printed
    assert "_pytest" not in printed  # no frame outside the project's own test files
