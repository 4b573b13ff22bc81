"""Partial runs against the real Ollamas (issue 20, items 4 and 5).

Lanes are cut from the tests that will run, so a ``-k`` selection is shared by every server;
and a cassette that replay would refuse as stale is re-recorded by record mode ``stale``
whatever made it stale, with hints that name a command that really records. What a server
was asked is counted by a counting proxy in front of it (``faultproxy.py`` without faults),
never taken from the plugin's own report.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from typing import Any

import pytest
from faultproxy import FaultProxy
from test_plugin_live import CLOSED_PORT, make_project

pytestmark = pytest.mark.live

ONE = ("--cardprobe-samples", "1", "--cardprobe-no-warmup")
# The servers are shared: a request may wait behind another session's long ones.
PATIENT = ("--cardprobe-request-timeout", "600")


def short_replies(pytester: pytest.Pytester, one_thread: bool = False) -> None:
    """Replies capped at 16 tokens, no retries (each test is one request, counted exactly)."""
    suite = pytester.path / "cases" / "cards.yaml"
    # One thread per runner: see test_two_servers_under_xdist_merge_into_one_scoreboard.
    extra = "\n  num_thread: 1" if one_thread else ""
    suite.write_text(suite.read_text().replace("num_predict: 96", f"num_predict: 16{extra}"))
    add_ini(pytester, "cardprobe_retries = 0")


def add_ini(pytester: pytest.Pytester, line: str) -> None:
    ini = pytester.path / "tox.ini"
    ini.write_text(ini.read_text().rstrip("\n") + f"\n{line}\n")


def run_args(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    """pytest with exactly ``args`` in a subprocess (in this process vcrpy would catch the
    proxy's own forwarding calls while it records), and the JSON report it wrote."""
    out = pytester.path / f"report-{time.monotonic_ns()}.json"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", *args, f"--cardprobe-json={out}"
    )
    return result, json.loads(out.read_text()) if out.exists() else {}


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    return run_args(pytester, "cases", *args)


def statuses(report: dict[str, Any]) -> dict[str, str]:
    """``case-channel-condition`` -> status of every test the run reported."""
    return {f"{t['case']}-{t['channel']}-{t['condition']}": t["status"] for t in report["tests"]}


def test_scattered_k_selection_is_shared_by_two_servers_under_xdist(
    pytester: pytest.Pytester, real_ollama: Any, real_ollama_2: Any
) -> None:
    # Two cases far apart in the suite (its first and its last input case), on every prose
    # arm and the cold tool arm: 10 of the 252 tests the project collects, all of them in
    # the first half of the run order. Lanes cut before -k deselected put all 10 in the
    # first lane, so the first server got every request and the second none.
    selection = ("-k", "(date or badge) and (prose or cold) and not retry")
    with (
        FaultProxy(real_ollama.base_url, lifetime_s=900) as a,
        FaultProxy(real_ollama_2.base_url, lifetime_s=900) as b,
    ):
        make_project(pytester, a.url, real_ollama.model)
        short_replies(pytester, one_thread=True)
        result, report = run(
            pytester, "--live", "-n", "2", "--cardprobe-server", a.url,
            "--cardprobe-server", b.url, *selection, *ONE, *PATIENT,
        )  # fmt: skip
        asked = {a.url: a.chat_posts, b.url: b.chat_posts}
    out = result.stdout.str()
    tests = report["tests"]
    assert len(tests) == 10, out
    assert {t["status"] for t in tests} <= {"passed", "failed"}, out  # no infra, no error
    assert {(t["channel"], t["condition"]) for t in tests} == {
        ("prose", "cold"), ("prose", "history"), ("prose", "seeded"), ("prose", "schema"),
        ("tool", "cold"),
    }  # fmt: skip
    assert sum(asked.values()) == 10, asked  # one request per test, all of them asked
    assert all(count > 0 for count in asked.values()), asked  # both servers answered
    # Two lanes of 5: each server's share is within one lane's worth of the even split
    # (contiguous lanes of 10 tests are exactly 5 and 5).
    assert sorted(asked.values()) == [5, 5], asked
    # What the report says each test talked to is what the servers counted.
    said = {url: sum(t["server"] == url for t in tests) for url in asked}
    assert said == asked, (said, asked)
    assert out.count("cardprobe scoreboard") == 1


ARMS = ("--cardprobe-channel", "prose", "--cardprobe-condition", "cold",
        "--cardprobe-condition", "history")  # fmt: skip
HINT = re.compile(r"re-record with: (.+)$")


def hint_of(test: dict[str, Any]) -> list[str]:
    """The command a stale test's message says re-records it, as argv."""
    found = HINT.search(test["message"] or "")
    assert found, test["message"]
    return shlex.split(found.group(1))


def test_record_mode_stale_rerecords_a_cassette_stale_outside_the_fingerprint(
    pytester: pytest.Pytester, real_ollama: Any
) -> None:
    slice_ = ("-k", "date or time", *ARMS, *ONE)  # 4 tests
    wider = ("-k", "date or time or toggle", *ARMS, *ONE)  # those 4 and 2 never recorded
    with FaultProxy(real_ollama.base_url, lifetime_s=900) as server:

        def asked(*args: str) -> tuple[int, pytest.RunResult, dict[str, Any]]:
            before = server.chat_posts
            result, report = run(pytester, *args)
            return server.chat_posts - before, result, report

        make_project(pytester, server.url, real_ollama.model)
        short_replies(pytester)
        count, result, report = asked("--live", *slice_, *PATIENT)
        assert count == 4, result.stdout.str()
        assert set(statuses(report).values()) <= {"passed", "failed"}, result.stdout.str()

        # keep_alive is a request option outside the fingerprint: replay refuses every
        # cassette as stale and says which field differs and what records it again.
        add_ini(pytester, "cardprobe_keep_alive = 5m")
        replay, report = run(pytester, "--cardprobe-server", CLOSED_PORT, *slice_)
        assert set(statuses(report).values()) == {"error"}, replay.stdout.str()
        for test in report["tests"]:
            assert "stale cassette" in test["message"], test["message"]
            assert "body.keep_alive differs" in test["message"], test["message"]
            hint = hint_of(test)
            assert hint[:2] == ["pytest", "--live"], hint  # a command that records
        replay.stdout.fnmatch_lines(
            [
                '  keep_alive changed from "10m" to "5m" (4 test(s))',
                "  record exactly them: pytest *--cardprobe-record-mode stale",
            ]
        )
        assert replay.ret == pytest.ExitCode.TESTS_FAILED

        # The hint, run as printed (kept to one sample without warm-up like the rest),
        # records that one test: one request, and its cassette replays afterwards.
        (first,) = [t for t in report["tests"] if t["case"] == "date" and t["condition"] == "cold"]
        hint = hint_of(first)
        before = server.chat_posts
        hinted, hinted_report = run_args(pytester, *hint[1:], *ONE, *PATIENT)
        assert server.chat_posts - before == 1, hinted.stdout.str()
        assert statuses(hinted_report) == {"date-prose-cold": hinted_report["tests"][0]["status"]}
        assert hinted_report["tests"][0]["status"] in ("passed", "failed")

        # once: records exactly the missing ones (toggle); the stale ones keep erroring, and
        # their hint in this mode records too.
        count, result, report = asked("--cardprobe-record-mode", "once", *wider, *PATIENT)
        assert count == 2, result.stdout.str()
        got = statuses(report)
        assert {k for k, v in got.items() if v == "error"} == {
            "date-prose-history", "time-prose-cold", "time-prose-history",
        }, got  # fmt: skip
        assert all(hint_of(t)[:2] == ["pytest", "--live"] for t in report["tests"] if
                   t["status"] == "error")  # fmt: skip
        # stale: asks exactly the three tests replay still refuses.
        count, result, report = asked("--cardprobe-record-mode", "stale", *wider, *PATIENT)
        assert count == 3, result.stdout.str()
        assert sorted(t["case"] + "-" + t["condition"] for t in report["tests"] if t["server"]) == [
            "date-history", "time-cold", "time-history",
        ]  # fmt: skip
        again, report = run(pytester, "--cardprobe-server", CLOSED_PORT, *wider)
        assert "error" not in statuses(report).values(), again.stdout.str()
        assert len(report["tests"]) == 6

        # --cardprobe-stream changes the request outside the fingerprint too.
        date = ("-k", "date", *ARMS, *ONE)
        stream = ("--cardprobe-stream", "--cardprobe-server", CLOSED_PORT, *date)
        stale, report = run(pytester, *stream)
        assert set(statuses(report).values()) == {"error"}, stale.stdout.str()
        assert all("body.stream differs" in t["message"] for t in report["tests"])
        count, result, report = asked("--cardprobe-stream", "--cardprobe-record-mode", "once",
                                      *date)  # fmt: skip
        assert count == 0  # nothing is missing: once asks nothing
        assert set(statuses(report).values()) == {"error"}, result.stdout.str()
        count, result, report = asked("--cardprobe-stream", "--cardprobe-record-mode", "stale",
                                      *date, *PATIENT)  # fmt: skip
        assert count == 2, result.stdout.str()
        replayed, report = run(pytester, *stream)
        assert "error" not in statuses(report).values(), replayed.stdout.str()
        assert replayed.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
