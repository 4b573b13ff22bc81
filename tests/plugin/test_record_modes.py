"""Record modes against a stand-in that fails every call: which tests are asked, which replay.

A replayed test sends nothing; a test the mode records reaches the stand-in (and, failing
as infra, writes nothing). The same modes against the real Ollama are in tests/live.
"""

from __future__ import annotations

import pytest
from cardprobe_testing import cassette, report
from faultserver import fault_server

# The original four arms (the suite's retry, seeded and schema arms are not about modes).
SLICE = (
    "-k", "date or time", "--cardprobe-samples", "1", "--cardprobe-no-warmup",
    "--cardprobe-channel", "prose", "--cardprobe-channel", "tool",
    "--cardprobe-condition", "cold", "--cardprobe-condition", "history",
)  # fmt: skip


def asked(recorded: pytest.Pytester, *args: str) -> tuple[list[str], dict[str, str]]:
    recorded.makeini("[pytest]\ncardprobe_models = smollm2:135m\ncardprobe_retries = 0\n")
    with fault_server() as server:
        _, data = report(recorded, "--cardprobe-server", server.url, *SLICE, *args)
    statuses = {t["nodeid"].split("::")[1]: t["status"] for t in data["tests"]}
    return server.chats, statuses


def test_once_asks_only_tests_without_a_cassette(recorded: pytest.Pytester) -> None:
    cassette(recorded, "date", "tool", "cold").unlink()
    chats, statuses = asked(recorded, "--cardprobe-record-mode", "once")
    assert len(chats) == 1
    assert statuses.pop("date[smollm2:135m-tool-cold]") == "infra"
    assert len(statuses) == 7 and set(statuses.values()) <= {"passed", "failed"}


def test_stale_also_asks_stale_tests(recorded: pytest.Pytester) -> None:
    prompt = recorded.path / "cases" / "prompts" / "tool.md"
    prompt.write_text(prompt.read_text() + "\nAlways answer with the tool.\n")
    chats, statuses = asked(recorded, "--cardprobe-record-mode", "stale")
    # Only the tool channel's system prompt changed: 2 cases x 2 conditions are asked.
    assert len(chats) == 4
    assert sorted(k for k, v in statuses.items() if v == "infra") == sorted(
        f"{case}[smollm2:135m-tool-{cond}]"
        for case in ("date", "time")
        for cond in ("cold", "history")
    )
    # once leaves stale cassettes alone: they error as stale without asking.
    chats, statuses = asked(recorded, "--cardprobe-record-mode", "once")
    assert chats == []
    assert list(statuses.values()).count("error") == 4


def test_rewrite_asks_every_selected_test_and_live_is_its_short_form(
    recorded: pytest.Pytester,
) -> None:
    recorded.makeini(
        "[pytest]\ncardprobe_models = smollm2:135m\n"
        "cardprobe_retries = 0\ncardprobe_breaker = 100\n"
    )
    for flag in (("--cardprobe-record-mode", "rewrite"), ("--live",)):
        with fault_server() as server:
            report(recorded, "--cardprobe-server", server.url, *SLICE, *flag)
        assert len(server.chats) == 8


def test_live_with_another_record_mode_is_a_usage_error(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest("cases", "--live", "--cardprobe-record-mode", "once")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--live means --cardprobe-record-mode rewrite*"])


@pytest.mark.parametrize(
    ("ini", "flags"),
    [("cardprobe_keep_alive = 5m\n", ()), ("", ("--cardprobe-stream",))],
    ids=["keep_alive", "stream"],
)
def test_stale_asks_tests_made_stale_by_an_option_outside_the_fingerprint(
    recorded: pytest.Pytester, ini: str, flags: tuple[str, ...]
) -> None:
    # Replay refuses every one of these cassettes (the request body changed); stale must ask
    # them all again, not only those whose fingerprint changed.
    recorded.makeini(
        f"[pytest]\ncardprobe_models = smollm2:135m\ncardprobe_retries = 0\n"
        f"cardprobe_breaker = 100\n{ini}"
    )
    with fault_server() as server:
        _, data = report(
            recorded,
            "--cardprobe-server",
            server.url,
            *SLICE,
            *flags,
            "--cardprobe-record-mode",
            "stale",
        )
    assert len(server.chats) == 8
    assert {t["status"] for t in data["tests"]} == {"infra"}
